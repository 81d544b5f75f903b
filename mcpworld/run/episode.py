"""One task attempt: reset → agent loop → evaluate → EpisodeResult (always written to disk)."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mcpworld.agent.loop import AgentLoop, Limits
from mcpworld.agent.profiles import PromptContext
from mcpworld.agent.providers import ProviderSettings, make_provider, replays_solution
from mcpworld.agent.tools import build_toolset, replay_tools
from mcpworld.agent.tools.local import local_tools
from mcpworld.agent.tools.mcp import Overlong, mcp_tools
from mcpworld.apps.catalog import app_setting
from mcpworld.config.schema import RootConfig
from mcpworld.core.errors import EndpointUnreachable, EvalError, InfraError, UserError
from mcpworld.core.result import EpisodeResult, Status, Termination
from mcpworld.core.secrets import redact
from mcpworld.core.task import Task
from mcpworld.env.base import Environment
from mcpworld.evaluation.handler import start_handler
from mcpworld.evaluation.keysteps import LiveChecks
from mcpworld.evaluation.verdict import judge
from mcpworld.mcp.servers import McpSettings, agent_workspace, episode_grant, episode_servers, withheld
from mcpworld.mcp.spec import replace_in
from mcpworld.probes.files import HomeChanges
from mcpworld.run.interrupt import EpisodeInterrupted, StopSignal
from mcpworld.run.metering import metered
from mcpworld.run.provenance import episode_profile, write_request
from mcpworld.run.status import NOT_THE_AGENTS, Outcome, classify, classify_error
from mcpworld.tasks.instructions import shown
from mcpworld.telemetry.cost import price_episode
from mcpworld.telemetry.trace import Trace

if TYPE_CHECKING:
    from PIL.Image import Image

    from mcpworld.agent.profiles import Profile
    from mcpworld.agent.providers.base import Provider
    from mcpworld.agent.tools.base import Tool
    from mcpworld.agent.tools.computer import ComputerTool
    from mcpworld.evaluation.handler import HandlerProcess
    from mcpworld.probes.live import LiveHooks
    from mcpworld.telemetry.energy.meter import EnergyMeter


def labels(cfg: RootConfig) -> dict[str, str]:
    out = {
        "model": cfg.model.name,
        "provider": cfg.provider.name,
        "resolution": cfg.resolution.name,
        "modality": cfg.modality.name,
        "env": cfg.env.backend,
    }
    return out if cfg.seed is None else {**out, "seed": str(cfg.seed)}  # (no seed: none sent, none labelled)


class ScreenSaver:
    """Writes encoded observations as screens/NNN.<ext> and counts them."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.count = 0

    def __call__(self, data: bytes, fmt: str) -> str:
        self.folder.mkdir(parents=True, exist_ok=True)
        name = f"{self.count:03d}.{'jpg' if fmt == 'jpeg' else fmt}"
        (self.folder / name).write_bytes(data)
        self.count += 1
        return f"screens/{name}"


def write_trajectory(path: Path, messages: Sequence[Mapping[str, Any]], result: EpisodeResult) -> None:
    """``traj_log.json`` in Toolathlon's shape, for graders that read the conversation."""

    def strip(message: Mapping[str, Any]) -> dict[str, Any]:
        content = message.get("content")
        if isinstance(content, list):
            content = [part if part.get("type") == "text" else {"type": "text", "text": "[image]"} for part in content]
        return {**message, "content": content}

    calls = sum(len(m.get("tool_calls") or []) for m in messages)
    toolathlon: dict[str, str] = {
        Termination.done: "success",
        Termination.max_steps: "max_turns_reached",
        Termination.timeout: "timeout",
    }
    status = toolathlon.get(result.termination, "failed")
    log = {
        "config": {"task_id": result.task_id, **result.labels},
        "messages": [strip(m) for m in messages],
        "key_stats": {
            "interaction_turns": 1,
            "tool_calls": calls,
            "agent_llm_requests": result.llm_calls,
            "input_tokens": result.tokens_in,
            "output_tokens": result.tokens_out,
            "total_tokens": result.tokens_in + result.tokens_out,
        },
        "status": status,
    }
    path.write_text(redact(json.dumps(log, ensure_ascii=False, indent=1, default=str)), encoding="utf-8")


def run_episode(
    cfg: RootConfig,
    task: Task,
    attempt: int,
    episode_dir: Path,
    env: Environment,
    gpu: EnergyMeter | None = None,
    stop: StopSignal | None = None,
) -> EpisodeResult:
    """Run one attempt and write its result.json, whatever happens. The status blames the agent
    only for the agent's doing: a dead display, a crashed harness part or an endpoint that fails
    is ``infra_error`` (retried), a grader that gives no verdict ``eval_error``, a stopped run
    ``interrupted``."""
    stop = stop or StopSignal()
    episode_dir.mkdir(parents=True, exist_ok=True)
    result = EpisodeResult(task_id=task.id, app=task.app, attempt=attempt, labels=labels(cfg), task_notes=list(task.notes))
    trace = Trace(episode_dir / "trace.jsonl")
    started = time.monotonic()
    # as the suite wrote it where the desktop has the suite's paths (/home/user, /workspace …), else with its home
    instruction = shown(task.instruction, env.suite_paths)
    # worker: the pool's thread (episode-N) that ran it, so a reader can follow one worker's episodes in turn
    trace.emit(
        "episode_start",
        task=task.id,
        attempt=attempt,
        instruction=instruction,
        worker=threading.current_thread().name,
        **result.labels,
    )
    sampled = None
    try:
        sampled = gpu.episode(episode_dir / "gpu.csv") if gpu else None  # the job's meter: this episode's share
        with (
            sampled if sampled else nullcontext(),
            # env=klavis: the sandboxes are held from before preprocess to after the verdict
            episode_grant(McpSettings.of(cfg), task, trace.emit) as grant,
        ):
            # (the credentials go to the task's preprocess and grader only: grant.task, never the desktop)
            _run(cfg, grant.task(task) if grant else task, episode_dir, env, result, trace, stop)
    except (UserError, EndpointUnreachable) as exc:  # recorded, then reported once by the experiment
        result.status, result.termination = classify_error(exc, stop.is_set())
        result.reason = str(exc)
        raise
    except (EpisodeInterrupted, asyncio.CancelledError, KeyboardInterrupt, Exception) as exc:
        # the environment or a harness part failed, or the run is stopping (a desktop killed under it)
        result.status, result.termination = classify_error(exc, stop.is_set())
        if result.status == Status.interrupted:
            result.reason = f"the run was stopped ({stop.reason or 'interrupt'})"
        else:
            prefix = "" if isinstance(exc, InfraError) else "harness error: "
            result.reason = f"{prefix}{type(exc).__name__}: {exc}" if prefix else str(exc)
            trace.emit(
                "error",
                kind="infra" if isinstance(exc, InfraError) else "harness",
                message=result.reason,
                traceback=traceback.format_exc()[-4000:],
            )
    finally:
        teardown = time.monotonic()
        try:
            env.end_episode()
        except Exception as exc:
            trace.emit("error", kind="teardown", message=str(exc))
        teardown_s = round(time.monotonic() - teardown, 4)
        result.duration_s = round(time.monotonic() - started, 4)
        if sampled is not None:
            sampled.finish(result)  # (after teardown: the span includes it)
        price_episode(result, cfg.model.price, cfg.telemetry.kwh_price)
        trace.emit(
            "episode_end",
            status=result.status,
            score=result.score,
            reason=result.reason,
            duration_s=result.duration_s,
            teardown_s=teardown_s,
        )
        trace.close()
        result.write(episode_dir / "result.json")
    return result


def episode_limits(cfg: RootConfig, task: Task) -> tuple[int, float]:
    """Steps and seconds the agent gets: the tighter of the task's own bound and the run's
    ``agent.max_steps`` / ``agent.timeout_s`` (so a user's override always takes effect, and a
    task can only ask for less)."""
    max_steps = cfg.agent.max_steps if task.max_steps is None else min(task.max_steps, cfg.agent.max_steps)
    timeout_s = cfg.agent.timeout_s if not task.timeout_s else min(float(task.timeout_s), cfg.agent.timeout_s)
    return max_steps, timeout_s


def watch_apps(env: Environment, trace: Trace, relaunch: bool, killed: list[dict[str, Any]] | None = None) -> Callable[[], None]:
    """After each step: the display's access control back on if the agent turned it off (an
    ``x_access`` event); an app that exited under the agent is an ``app_exit`` event in the trace,
    and started again when its app config says ``relaunch_on_exit``; one that a signal ended and
    nothing started again goes in ``killed``."""

    def check() -> None:
        if env.restore_access():  # `xhost +` from the agent's shell opened its display to every local user
            trace.emit("x_access", restored=True)
        for exited in env.app_exits():
            argv = exited.pop("argv", None)
            trace.emit("app_exit", **exited, relaunched=relaunch)
            if relaunch:
                env.relaunch({**exited, "argv": argv})
            elif killed is not None and int(exited.get("returncode") or 0) < 0:
                killed.append(exited)

    return check


def _run(
    cfg: RootConfig, task: Task, episode_dir: Path, env: Environment, result: EpisodeResult, trace: Trace, stop: StopSignal
) -> None:
    t0 = time.monotonic()
    stop.check()
    live = live_hooks(task, trace, env)
    handler = None
    try:
        # (env.stage: handed over when it was reset ahead for this episode); the hooks' sink reaches the app
        env.begin(task, episode_dir, live.env() if live else None)
        if env.handover:
            result.staged = dict(env.handover)
            trace.emit("staged", **env.handover)
        result.task_notes += [note for note in env.notes if note not in result.task_notes]
        if env.network_effective:  # what env.network gave this desktop: a param of the episode's run
            result.labels["network_effective"] = env.network_effective
        if env.viewer_url:
            trace.emit("desktop_viewer", url=env.viewer_url)
            print(f"mcpworld: {task.id} (attempt {result.attempt}): watch at {env.viewer_url}", file=sys.stderr)
        if live:
            live.start(env.app_pid(), PROBE_READY_S)
        stop.check()
        result.setup_s = round(time.monotonic() - t0, 4)
        trace.emit("setup_done", seconds=result.setup_s)
        handler = start_handler(task, env, probed=live is not None)
        if live and handler:
            live.relay.attach(handler)
        _attempt(cfg, task, episode_dir, env, result, trace, stop, handler, live)
    finally:
        if live:
            live.close()
        if handler:
            handler.close()


PROBE_READY_S = 60.0  # an app probe's first word after the app is ready (VS Code's extension host starts late)
PROBE_ANSWER_S = 10.0  # the hooks' answer to evaluate (PC-Canary waits as long)


def live_hooks(task: Task, trace: Trace, env: Environment) -> LiveHooks | None:
    """The episode's live app hooks, when the task has hooks a probe of ours runs (see mcpworld.probes);
    a PC-Canary hook's paths in its authors' home name this episode's home."""
    from mcpworld.probes.live import LiveHooks, probe_for
    from mcpworld.tasks.mcpworld_format import author_home_text

    probe = probe_for(task.app, task.handler_setup) if task.handler else None
    if not probe:
        return None
    return LiveHooks(
        probe,
        list(task.handler_setup.js_hooks if task.handler_setup else ()),
        trace.emit,
        rewrite=lambda source: env.map_paths(author_home_text(source)),
    )


@dataclass
class Episode:
    """One attempt's parts, handed from step to step: the run's config, the task, the episode's folder,
    the desktop, the result being filled, the trace and the run's stop signal."""

    cfg: RootConfig
    task: Task
    folder: Path
    env: Environment
    result: EpisodeResult
    trace: Trace
    stop: StopSignal


@dataclass
class Agent:
    """The episode's agent as built (``build_agent``), before it runs: the family's profile, the tools,
    the metered provider, its bounds, where its screens go, the first screen and the size it is shown at,
    the workspace its prompt names, and whether it replays the task's solution (the oracle)."""

    profile: Profile
    tools: dict[str, Tool]
    provider: Provider
    limits: Limits
    screens: ScreenSaver
    first: Image | None
    shown: tuple[int, int]
    workspace: str
    replays: bool
    loop: AgentLoop | None = None  # once it runs


def _attempt(
    cfg: RootConfig,
    task: Task,
    episode_dir: Path,
    env: Environment,
    result: EpisodeResult,
    trace: Trace,
    stop: StopSignal,
    handler: HandlerProcess | None,
    live: LiveHooks | None,
) -> None:
    """The agent's run on the ready desktop, then the verdict: the agent built, run, judged unless the
    harness ended its run, and the status classified (run/status.py)."""
    episode = Episode(cfg, task, episode_dir, env, result, trace, stop)
    killed = run_agent(episode, build_agent(episode))
    score = None
    if result.termination not in NOT_THE_AGENTS:
        stop.check()  # a stopping run does not judge a cut-short episode
        score = judge_episode(episode, handler, live)
    result.status = classify(Outcome(result.termination, score, cfg.evaluator.success_threshold, bool(killed)))
    if result.status == Status.infra_error and score is not None:  # judged, but its app was killed under it
        result.reason = "; ".join(
            f"{k['app']} was killed by signal {-int(k['returncode'])} during the episode "
            "(a crash or an outside kill; relaunch_on_exit: true starts it again)"
            for k in killed
        )


def agent_limits(cfg: RootConfig, task: Task, profile: Profile) -> Limits:
    """The loop's bounds: the episode's steps and seconds (``episode_limits``) and the run's agent settings."""
    max_steps, timeout_s = episode_limits(cfg, task)
    return Limits(
        max_steps=max_steps,
        max_llm_calls=cfg.agent.max_llm_calls,
        timeout_s=timeout_s,
        keep_screenshots=profile.keep_screenshots(cfg.agent.keep_screenshots),
        image_format=cfg.agent.image_format,
        image_quality=cfg.agent.image_quality,
        loop_repeats=cfg.agent.loop_repeats,
        loop_stop=cfg.agent.loop_stop,
    )


def build_agent(episode: Episode) -> Agent:
    """The agent for this episode on its ready desktop; only a provider that replays solutions gets the task's."""
    cfg, task, env = episode.cfg, episode.task, episode.env
    image_max = list(cfg.model.image_max) if cfg.model.image_max else None
    profile = episode_profile(cfg)  # how the model's family is driven (agent/profiles)
    coords = profile.screen((env.width, env.height)) if "computer" in cfg.modality.tools else None
    tools = build_toolset(list(cfg.modality.tools), env, cfg.model.coordinates, cfg.agent, image_max, coords)
    workspace = agent_workspace(McpSettings.of(cfg), task, env)
    replays = replays_solution(cfg.provider.kind)  # the oracle: only it is handed the task's solution
    fill = lambda args: replace_in(args, "{workspace}", workspace)  # noqa: E731
    solution = [step.rewritten(fill) for step in task.solution.get(cfg.modality.name)] if replays else None
    inner = make_provider(ProviderSettings.of(cfg), solution)
    inner.text_calls = profile.text_calls  # a profile that reads its family's format gets the text as written
    computer = cast("ComputerTool | None", tools.get("computer"))  # what the computer family builds
    first = computer.coords.fit(env.first_observation()) if computer is not None else None
    shown = computer.coords.image if computer is not None else (env.width, env.height)
    screens = ScreenSaver(episode.folder / "screens")
    return Agent(profile, tools, metered(inner), agent_limits(cfg, task, profile), screens, first, shown, workspace, replays)


def run_agent(episode: Episode, agent: Agent) -> list[dict[str, Any]]:
    """The agent's loop on the desktop, its MCP servers up around it and the desktop watched after each
    step (apps, live key steps); the task's apps a signal ended (a crash, an outside kill)."""
    cfg, task, env, result, trace = episode.cfg, episode.task, episode.env, episode.result, episode.trace
    changes = HomeChanges(env.home) if any(step.check is not None for step in task.key_steps) else None
    live_checks = LiveChecks(env, task.key_steps, trace.emit, changes.take, trace.wall_start) if changes else None
    killed: list[dict[str, Any]] = []
    apps = watch_apps(env, trace, bool(app_setting(cfg.app, task.app, "relaunch_on_exit", False)), killed)

    def after_step() -> None:
        apps()
        if live_checks:
            live_checks()

    async def drive() -> None:
        try:
            with episode.stop.watching():
                await serve_and_run(episode, agent, after_step)
        finally:
            await agent.provider.aclose()

    began = time.monotonic()
    try:
        asyncio.run(drive())
    finally:
        if changes:
            changes.close()
        if task.grader and agent.loop is not None:
            write_trajectory(episode.folder / "traj_log.json", agent.loop.messages, result)
    result.agent_s = round(time.monotonic() - began, 4)
    result.screenshots = agent.screens.count
    if result.termination != Termination.infra_error:
        apps()  # an app that died after the last step
    return killed


async def serve_and_run(episode: Episode, agent: Agent, after_step: Callable[[], None]) -> None:
    """The episode's MCP servers started, their tools offered, and the loop run to its end."""
    cfg, task, env = episode.cfg, episode.task, episode.env
    servers = McpSettings.of(cfg)
    async with episode_servers(servers, task, env, episode.folder, episode.trace.emit) as pool:
        tools = agent.tools
        if "mcp" in cfg.modality.tools:
            overlong = Overlong(episode.folder / "overlong", cfg.mcp.max_output_chars)
            extra = {
                **(mcp_tools(pool, overlong) if pool else {}),
                **local_tools(task.local_tools, env, task.workspace, overlong, cfg.agent.bash_max_output),
            }
            tools.update({**extra, "done": tools.pop("done")})  # done stays last
        offered = agent.profile.tools(tools)  # the tools as the family knows them
        loop = agent.loop = AgentLoop(
            agent.provider,
            offered,
            agent.limits,
            episode.trace,
            episode.result,
            save_image=agent.screens,
            send_images=getattr(agent.provider, "vision", True) and cfg.model.vision,
            withheld=withheld(servers, task),
            after_step=after_step,
            profile=agent.profile,
            replay=replay_tools(env) if agent.replays else None,
        )
        prompt = agent.profile.system_prompt(
            PromptContext(  # (the screen's size even without a computer tool, as ever)
                list(offered),
                agent.shown,
                cfg.agent.system_prompt,
                task.system_prompt.replace("{workspace}", agent.workspace) if task.system_prompt else "",
            )
        )
        try:
            await loop.run(prompt, shown(task.instruction, env.suite_paths), agent.first)
        finally:
            write_request(episode.folder, agent.profile, prompt, offered, loop.first_request)


def judge_episode(episode: Episode, handler: HandlerProcess | None, live: LiveHooks | None) -> float | None:
    """The grader's score (0 below the threshold without partial credit), its metrics and key steps in the
    result; None when it gave no verdict (an EvalError: its reason in the result)."""
    cfg, task, env, result, trace = episode.cfg, episode.task, episode.env, episode.result, episode.trace
    began = time.monotonic()
    try:
        if live:
            live.settle()  # the hooks' reports of the agent's last actions reach the handler first
        if live and task.handler_setup and task.handler_setup.evaluate_on_completion and not live.evaluate(PROBE_ANSWER_S):
            raise EvalError(
                f"the app's hooks did not answer evaluate within {PROBE_ANSWER_S:.0f}s (the {live.probe} probe lost its app?)"
            )
        verdict = judge(task, env, result.final_action, trace.events, episode.folder / "traj_log.json", handler)
    except EvalError as exc:  # the grader gave no verdict: not the agent failing, not to be retried
        result.reason = str(exc)
        result.eval_s = round(time.monotonic() - began, 4)
        trace.emit("evaluation", score=None, error=result.reason, seconds=result.eval_s)
        return None
    result.metrics, result.key_steps = verdict.metrics, verdict.key_steps
    score = verdict.score
    if not cfg.evaluator.partial_credit and score < cfg.evaluator.success_threshold:
        score = 0.0
    result.score = round(float(score), 4)
    result.eval_s = round(time.monotonic() - began, 4)
    trace.emit(
        "evaluation",
        score=result.score,
        metrics=[m.__dict__ for m in result.metrics],
        key_steps=result.key_steps or None,
        seconds=result.eval_s,
    )
    return result.score
