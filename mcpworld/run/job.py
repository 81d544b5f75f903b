"""One Hydra job: choose tasks, run their episodes (bounded concurrency), track, summarise."""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from omegaconf import DictConfig, OmegaConf

from mcpworld.agent.providers import ProviderSettings, make_provider, replays_solution
from mcpworld.agent.providers.base import ModelInfo
from mcpworld.apps.catalog import programs
from mcpworld.apps.programs import Program, programs_started_by
from mcpworld.config.resolution import check_run as check_resolution_preference
from mcpworld.config.schema import FilesConfig, RootConfig
from mcpworld.core.errors import EndpointUnreachable, InfraError, UserError
from mcpworld.core.result import NOT_JUDGED, EpisodeResult, Status, Termination
from mcpworld.core.secrets import mask_secrets, register_secrets, strip_secrets
from mcpworld.core.steps import sudo_needs
from mcpworld.core.task import Task
from mcpworld.env import DesktopSettings, backend_of, check_network, make_environments
from mcpworld.env.base import Environment
from mcpworld.evaluation.keysteps import validate_key_steps
from mcpworld.evaluation.spec import validate_spec
from mcpworld.evaluation.templates import expand_task
from mcpworld.mcp.servers import McpSettings, task_servers, unavailable
from mcpworld.run import resume
from mcpworld.run.choices import check_choices
from mcpworld.run.episode import run_episode
from mcpworld.run.interrupt import StopSignal, signals_deferred
from mcpworld.run.job_metrics import behaviour_rates, cost_metrics, tool_metrics
from mcpworld.run.pool import EpisodePool
from mcpworld.run.progress import DownloadProgress, SweepProgress
from mcpworld.run.provenance import profile_params
from mcpworld.run.staging import EpisodeStaging, check_stage, episode_folder
from mcpworld.tasks.programs_needed import missing_command
from mcpworld.tasks.remote_files import file_cache, localize_all, remote_urls
from mcpworld.tasks.select import borrow_solution, find_tasks, not_applicable
from mcpworld.tasks.settings import TaskSettings
from mcpworld.tasks.solutions import attach_solutions
from mcpworld.tasks.websites import skip_unreachable
from mcpworld.telemetry.cost import check_price
from mcpworld.telemetry.energy.factory import make_energy_meter
from mcpworld.telemetry.energy.totals import energy_totals
from mcpworld.telemetry.provenance import run_tags
from mcpworld.telemetry.tracking.store import unreachable
from mcpworld.telemetry.tracking.sweep import sweep_parent, swept_keys
from mcpworld.telemetry.tracking.tracker import Tracker, make_tracker
from mcpworld.telemetry.tracking.vocabulary import differs_tag, job_params, job_run_name, source_tags

if TYPE_CHECKING:
    from mcpworld.telemetry.energy.meter import EnergyMeter


def job_dir() -> Path:
    from hydra.core.hydra_config import HydraConfig

    try:
        return Path(HydraConfig.get().runtime.output_dir)
    except ValueError:  # called outside Hydra (tests)
        return Path("outputs/adhoc")


def in_sweep() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    try:
        return HydraConfig.get().mode == RunMode.MULTIRUN
    except ValueError:  # called outside Hydra (tests)
        return False


def check_tracking_reachable(cfg: RootConfig) -> None:
    """A sweep's jobs (on other nodes too, through a launcher) all log into the sweep's one store: a
    job whose node cannot reach it stops at once, saying so, and the sweep goes on. (A single run
    keeps what it could not log, to upload later.)"""
    if cfg.tracking.backend != "mlflow" or not in_sweep():
        return
    why = unreachable(cfg.tracking.uri)
    if why:
        raise UserError(
            f"tracking.uri={cfg.tracking.uri} cannot be reached from this node ({socket.gethostname()}): "
            f"{why}; every node of a sweep must reach it: a sqlite file on a shared filesystem, or an "
            "`mlflow server` URL"
        )


def job_overrides() -> list[str] | None:
    """This job's Hydra overrides, an override's key masked; None outside Hydra."""
    from hydra.core.hydra_config import HydraConfig

    try:
        hc = HydraConfig.get()
    except ValueError:
        return None
    return [mask_secrets(str(o)) for o in hc.overrides.task]


def job_name() -> str:
    """The override string: the job's name in summary.json and the job table (its MLflow run is
    named by ``vocabulary.job_run_name``)."""
    overrides = job_overrides()
    return "adhoc" if overrides is None else ",".join(overrides) or "default"


@dataclass
class Selection:
    """The tasks a job runs, and those it skips before any episode: ``skipped`` is (task id, kind,
    reason), kind ``not_applicable`` (the modality has no tool family that can do the task), ``unavailable``
    (this machine or backend lacks something; the reason says the fix) or ``no_solution`` (the oracle
    has none for the modality). Skipped tasks are counted in no rate (summary.json ``skipped``)."""

    tasks: list[Task]
    skipped: list[tuple[str, str, str]] = field(default_factory=list)
    apps: dict[str, str] = field(default_factory=dict)  # every selected task's app, skipped ones too

    def by_reason(self) -> list[dict[str, Any]]:
        """summary.json's ``skipped``: one entry per distinct reason, with its tasks."""
        groups: dict[tuple[str, str], list[str]] = {}
        for task_id, kind, reason in self.skipped:
            groups.setdefault((kind, reason), []).append(task_id)
        return [{"kind": kind, "reason": reason, "count": len(ids), "tasks": ids} for (kind, reason), ids in groups.items()]


def choose_tasks(cfg: RootConfig) -> list[Task]:
    return select_tasks(cfg).tasks


def select_tasks(cfg: RootConfig) -> Selection:
    tasks = find_tasks(TaskSettings.of(cfg))  # the selection `python -m mcpworld.cli.prefetch` makes too
    if cfg.tasks.solutions:
        attach_solutions(tasks, Path(cfg.tasks.solutions).expanduser())
    templates = cast(dict[str, Any], OmegaConf.to_container(cfg.evaluator.templates, resolve=True))  # name -> template
    servers = McpSettings.of(cfg)
    inapplicable: set[str] = set()
    for task in tasks:
        try:
            expand_task(task, templates)
            if task.evaluator:
                validate_spec(task.evaluator.spec, str(task.source))
            validate_key_steps(task.key_steps, str(task.source))
            # a task no tool family of the modality can do is not the agent's to fail: skipped, in no rate
            # a desktop app opens when the task needs a catalog program or its setup launches or opens one
            # (PC-Canary tasks start their app from the authors' script: a GUI path beside their MCP servers)
            starts_app = bool(needed_programs(task)) or any("launch" in step.raw or "open" in step.raw for step in task.setup)
            why = not_applicable(
                task,
                cfg.modality.name,
                list(cfg.modality.tools),
                starts_app,
                bool(task.local_tools or task.mcp_servers or task_servers(servers, task)),
            )
            if why:
                task.skip_reason = why
                inapplicable.add(task.id)
                continue
            # what this machine or backend lacks skips the task with the fix; it never fails it
            task.skip_reason = (
                task.skip_reason
                or unavailable(servers, task)
                or missing_program(task, cfg.env.backend)
                or missing_command(task, programs(), cfg.env.backend)
                or refused_sudo(cfg.env.backend, task)
            )
        except UserError as exc:
            if task.format == "native":
                raise  # our own format: the author can fix it
            task.skip_reason = task.skip_reason or str(exc)  # an imported suite: run what we can
    fetch_task_files(tasks, cfg.files)
    skip_unreachable(tasks)
    chosen = Selection(
        [t for t in tasks if not t.skip_reason],
        [(t.id, "not_applicable" if t.id in inapplicable else "unavailable", t.skip_reason) for t in tasks if t.skip_reason],
        {t.id: t.app for t in tasks},
    )
    print_skipped(chosen.skipped)
    if not chosen.tasks:
        raise UserError(f"every selected task was skipped ({len(chosen.skipped)}); see the reasons above")
    if replays_solution(cfg.provider.kind) and cfg.agent.max_steps > 0:  # the do-nothing baseline needs no solution
        tools = list(cfg.modality.tools)
        missing = [t.id for t in chosen.tasks if not borrow_solution(t, cfg.modality.name, tools)]
        if missing:
            print(
                f"mcpworld: the oracle has no {cfg.modality.name} solution for {len(missing)} task(s), "
                f"skipped: {', '.join(missing)}",
                file=sys.stderr,
            )
            unsolved = {t.id: t.unsolved for t in chosen.tasks}
            chosen.skipped += [
                (
                    i,
                    "no_solution",
                    f"the oracle has no {cfg.modality.name} solution" + (f": {unsolved[i]}" if unsolved.get(i) else ""),
                )
                for i in missing
            ]
        chosen.tasks = [t for t in chosen.tasks if cfg.modality.name in t.solution]
        if not chosen.tasks:
            raise UserError(f"no selected task has an oracle solution for modality={cfg.modality.name}")
    return chosen


EXAMPLES = 3  # task ids a grouped skip line names


def print_skipped(skipped: list[tuple[str, str, str]]) -> None:
    """One line per distinct reason (its count and a few examples), not one per task: an
    inapplicable suite of hundreds of tasks is one line."""
    groups: dict[str, list[str]] = {}
    for task_id, _, reason in skipped:
        groups.setdefault(reason, []).append(task_id)
    for reason, ids in groups.items():
        if len(ids) == 1:
            print(f"mcpworld: skipping {ids[0]}: {reason}", file=sys.stderr)
            continue
        more = f", … {len(ids) - EXAMPLES} more" if len(ids) > EXAMPLES else ""
        print(f"mcpworld: skipping {len(ids)} tasks ({', '.join(ids[:EXAMPLES])}{more}): {reason}", file=sys.stderr)


def fetch_task_files(tasks: list[Task], files: FilesConfig) -> None:
    """Download (or find in the cache/mirror) the files runnable tasks name by URL, before any episode."""
    cache = file_cache(files)  # a bad files.* setting is one error even when no task needs a file
    todo = [t for t in tasks if not t.skip_reason and remote_urls(t)]
    if not todo:
        return
    with DownloadProgress() as progress:
        cache.progress = progress.update
        print(f"mcpworld: fetching the files of {len(todo)} task(s) (cache {cache.root})", file=sys.stderr)
        localize_all(todo, cache)


def needed_programs(task: Task) -> list[Program]:
    """The programs a task starts: its app's and those its launch steps name."""
    return programs_started_by(task, programs())


def missing_program(task: Task, backend: str) -> str | None:
    """Why the task cannot start its application here (not installed: the install command), or None.
    Which of its programs this machine must have is the backend's to say (``Backend.programs_for``)."""
    needed = backend_of(backend).programs_for(needed_programs(task))
    return next((p.missing_reason() for p in needed if p.missing_reason()), None)


def refused_sudo(backend: str, task: Task) -> str | None:
    """A desktop on this host never runs a task's sudo (it would be root here), unless the sudo only
    asks for what this machine has already (core/sudo.py)."""
    if not backend_of(backend).on_host:
        return None
    needs = sudo_needs([*task.setup, *(task.evaluator.postconfig if task.evaluator else [])])
    return needs[1] if needs else None


MIN_SIDE, MAX_SIDE = 200, 8192  # a screen an app can show a window on, up to 8K


def check_config(cfg: RootConfig) -> None:
    """Value checks the schema's types cannot express (its enums check the closed choices at composition)."""
    check_choices(cfg)  # the values that name an implementation, against its registry
    if cfg.attempts < 1 or cfg.concurrency < 1:
        raise UserError("attempts and concurrency must be at least 1")
    if cfg.agent.max_steps < 0:  # 0 is allowed: the do-nothing baseline (the agent acts not once)
        raise UserError(f"agent.max_steps={cfg.agent.max_steps} must be 0 (do nothing) or more")
    positive = {
        "agent.max_llm_calls": cfg.agent.max_llm_calls,
        "agent.timeout_s": cfg.agent.timeout_s,
        "agent.bash_timeout_s": cfg.agent.bash_timeout_s,
        "agent.keep_screenshots": cfg.agent.keep_screenshots,
        "env.app_timeout_s": cfg.env.app_timeout_s,
    }
    for key, value in positive.items():
        if value <= 0:
            raise UserError(f"{key}={value} must be positive (a bound of zero ends every episode before it starts)")
    check_price(cfg.model.price, cfg.telemetry.kwh_price)
    if not 1 <= cfg.agent.image_quality <= 100:
        raise UserError(f"agent.image_quality={cfg.agent.image_quality} must be 1..100 (JPEG quality; 85 is the default)")
    for side in ("width", "height"):
        value = getattr(cfg.resolution, side)
        if not MIN_SIDE <= value <= MAX_SIDE:
            raise UserError(
                f"resolution.{side}={value} must be {MIN_SIDE}..{MAX_SIDE} pixels (or pick resolution=square|rect|wxga|fhd)"
            )
    check_resolution_preference(cfg)  # the model file's defaults pick the screen it prefers
    if cfg.env.stage:
        from mcpworld.mcp.servers import hosted

        check_stage(cfg.env.backend, backend_of(cfg.env.backend).stages, cfg.env.mcp_sandbox, hosted(cfg.env.mcp_sandbox))
    backend_of(cfg.env.backend).check(DesktopSettings.of(cfg), cfg.concurrency)  # e.g. a VM for each concurrent episode


def preflight(cfg: RootConfig) -> ModelInfo:
    """Check the endpoint and the model once, before any desktop starts: every provider asks what is
    served (the model, its context, who it is: served.* params; an Ollama model is also pulled and
    loaded here, agent/providers/served.py). An endpoint that is down, a model not served or served
    with too small a context stops the job with one line naming the fix, instead of N failed episodes."""
    provider = make_provider(ProviderSettings.of(cfg))

    async def check() -> ModelInfo:
        try:
            return await provider.preflight()
        finally:
            await provider.aclose()

    try:
        return asyncio.run(check())
    except InfraError as exc:
        raise UserError(str(exc)) from exc


class JobFailed(Exception):
    """A job that could not finish; its one-line reason is in summary.json already."""


def run_job(composed: DictConfig) -> float:
    """Run the job's episodes; summary.json always says how it ended (FINISHED, FAILED or KILLED).
    Hydra's DictConfig is read through the schema's types (it holds exactly RootConfig's keys)."""
    cfg = cast(RootConfig, composed)
    out = job_dir()
    register_secrets([cfg.provider.api_key, cfg.env.klavis.api_key])  # redacted wherever they turn up
    chosen: Selection | None = None
    try:
        check_config(cfg)
        check_network(DesktopSettings.of(cfg))  # env.network=isolated where no desktop could be fenced: one line
        check_tracking_reachable(cfg)
        chosen = select_tasks(cfg)
        model = preflight(cfg)
        model.params.update(profile_params(cfg))  # profile, profile.version, prompt.sha256, tools.sha256
    except Exception as exc:  # nothing ran: the job failed before its first episode
        skipped = chosen.skipped if chosen else []
        write_summary(
            out,
            {
                "status": "FAILED",
                "reason": one_line(exc),
                "skipped": Selection([], skipped).by_reason(),
                **summarize([], 0, len(skipped)),
            },
        )
        raise
    return _run_episodes(cfg, chosen.tasks, model, out, chosen)


@dataclass
class JobRun:
    """One job's episodes as they run: its config, folder and energy meter, the stop signal, the desktops
    and their pool, the results so far, the first error that stops the job (``fatal``) and how it ended."""

    cfg: RootConfig
    out: Path
    gpu: EnergyMeter | None
    results: list[EpisodeResult]
    stop: StopSignal = field(default_factory=StopSignal)
    envs: list[Environment] = field(default_factory=list)
    pool: EpisodePool[tuple[Task, int], EpisodeResult] | None = None
    fatal: Exception | None = None
    status: str = "FINISHED"
    reason: str = ""
    wall_s: float = 0.0

    def episode(self, env: Environment, run: tuple[Task, int]) -> EpisodeResult:
        """One (task, attempt) on ``env``, run again after an infra error (``infra_retries``: the failed try
        set aside for inspection); a user error or an unreachable endpoint stops the job."""
        task, attempt = run
        episode_dir = episode_folder(self.out, task.id, attempt)
        for retry in range(self.cfg.infra_retries + 1):
            if retry:  # keep the failed try for inspection, run the episode again
                resume.set_aside(episode_dir, "infra_error")
            try:
                result = run_episode(self.cfg, task, attempt, episode_dir, env, self.gpu, self.stop)
            except (UserError, EndpointUnreachable) as exc:  # every later episode would fail the same way
                self.fatal = self.fatal or exc
                if self.pool is not None:
                    self.pool.halt()
                return EpisodeResult.read(episode_dir / "result.json")
            if result.status != Status.infra_error or result.termination == Termination.unwatchable or self.stop.is_set():
                break  # (an unwatchable task fails the same way every time)
        return result


def _run_episodes(cfg: RootConfig, tasks: list[Task], model: ModelInfo, out: Path, chosen: Selection | None = None) -> float:
    """The job's episodes (those not done already) on its desktops, tracked; summary.json says how it ended."""
    chosen = chosen or Selection(tasks)
    resolved = cast(dict[str, Any], OmegaConf.to_container(cast(DictConfig, cfg), resolve=True))
    runs = [(t, a) for t in tasks for a in range(cfg.attempts)]
    resumed = resume.plan(out, resume.job_hash(resolved), cfg.resume, [(t.id, a) for t, a in runs])
    todo = [(t, a) for t, a in runs if (t.id, a) not in resumed.done]
    if resumed.done or resumed.set_aside:
        print(f"mcpworld: {out}: {resumed.describe(len(todo))}")
    reaped = backend_of(cfg.env.backend).reap()  # what killed runs left: local desktops, containers …
    if reaped:
        print(f"mcpworld: removed {reaped} desktop(s) left behind by killed runs", file=sys.stderr)
    tracker, gpu = start_tracking(cfg, out, resolved, model)
    print(f"mcpworld: {len(todo)} episode(s) of {len(tasks)} task(s) → {out}")
    job = JobRun(cfg, out, gpu, list(resumed.done.values()))
    try:
        run_pool(job, tasks, todo, tracker)
    except KeyboardInterrupt as exc:
        job.status, job.reason = "KILLED", f"interrupted by {getattr(exc, 'signal_name', 'SIGINT')}"
        raise
    except Exception as exc:
        job.status, job.reason = "FAILED", one_line(exc)
        raise
    finally:
        with signals_deferred():
            summary = close_job(job, tracker, model, len(runs), chosen)
    from mcpworld.run.summary import print_job_table

    print_job_table(job_name(), job.results)
    if job.fatal is not None:
        raise JobFailed(job.reason)
    return summary["success"]


def start_tracking(cfg: RootConfig, out: Path, resolved: dict[str, Any], model: ModelInfo) -> tuple[Tracker, EnergyMeter | None]:
    """The job's run started in the tracker (params, provenance and energy tags, its sweep's parent run),
    resolved_config.yaml written, and the job's one energy meter measuring its idle baseline."""
    tracker = make_tracker(cfg.tracking)
    (out / "resolved_config.yaml").write_text(mask_secrets(OmegaConf.to_yaml(strip_secrets(resolved))))
    gpu, energy_params = make_energy_meter(cfg.telemetry)  # one sampler for the whole job (GPU, CPU)
    params = job_params(strip_secrets(resolved), model.params)  # the full config: the artifact config.yaml
    provenance = run_tags(resolved, job_name())
    overrides, swept = job_overrides(), swept_keys(out.parent) if in_sweep() else []
    tracker.start_job(
        job_run_name(params, overrides, swept),
        params,  # energy.*: how it was measured, a tag
        {
            "mcpworld.job_dir": str(out.absolute()),
            **provenance,
            **energy_params,
            **differs_tag(overrides, swept),
            **source_tags(provenance, [mask_secrets(a) for a in sys.argv]),
        },
        parent_run_id=sweep_parent(out),
    )
    if gpu is not None:
        gpu.start()  # the idle baseline (telemetry.idle_s), before any desktop starts
    return tracker, gpu


def run_pool(job: JobRun, tasks: list[Task], todo: list[tuple[Task, int]], tracker: Tracker) -> None:
    """The desktops started (two per worker with env.stage) and the episodes run on them, each result
    logged as it comes; a job stopped by a fatal error is FAILED."""
    cfg, out = job.cfg, job.out
    apps = sorted({p.app for t in tasks for p in needed_programs(t)})
    settings = DesktopSettings.of(cfg).for_run(tasks, out)  # env.files=hidden: what the desktops see
    workers = min(cfg.concurrency, len(todo))
    staged = cfg.env.stage and len(todo) > workers  # (a worker with one episode has none to stage)
    job.envs = make_environments(settings, programs(), workers * (2 if staged else 1), apps)
    job.pool = EpisodePool(job.envs, job.episode, job.stop, staging=EpisodeStaging(out) if staged else None)
    began = time.monotonic()
    with SweepProgress(len(todo)) as progress:

        def finished(result: EpisodeResult) -> None:
            job.results.append(result)
            tracker.log_episode(result, out / "episodes" / result.task_id / str(result.attempt))
            progress.done(result)

        job.pool.run(todo, finished)
    job.wall_s = time.monotonic() - began
    if job.fatal is not None:
        job.status, job.reason = "FAILED", one_line(job.fatal)


def close_job(job: JobRun, tracker: Tracker, model: ModelInfo, planned: int, chosen: Selection) -> dict[str, float]:
    """The desktops and the meter closed, summary.json written, the tracker's job run finished (its wait
    measured); the job's numbers."""
    out = job.out
    for env in job.envs:
        env.close()
    if job.gpu is not None:
        job.gpu.close(out / "gpu.csv")
    ended = {"status": job.status, **({"reason": job.reason} if job.reason else {}), "skipped": chosen.by_reason()}
    energy = job.gpu.job_metrics() if job.gpu is not None else {}
    summary = job_numbers(job.results, planned, len(chosen.skipped), model.metrics, job.wall_s, energy)
    write_summary(out, {**ended, **summary})
    artifacts = [p for p in (out / ".hydra", out / "summary.json", out / "resolved_config.yaml") if p.exists()]
    waited = time.perf_counter()
    tracker.finish_job(summary, artifacts, status=job.status, job_dir=out)
    tracking = {"tracking_busy_s": round(tracker.busy_s, 4), "tracking_wait_s": round(time.perf_counter() - waited, 4)}
    write_summary(out, {**ended, **summary, **tracking})
    if job.status == "KILLED":
        print(
            f"mcpworld: stopped; {len(job.results)} of {planned} episode(s) have a result in {out}. "
            f"Run the same command with hydra.run.dir={out} (hydra.sweep.dir= for a sweep) to resume.",
            file=sys.stderr,
        )
    return summary


def one_line(exc: BaseException) -> str:
    """An error as one line: its message (a user error's is made for reading), else its type too."""
    text = " ".join(str(exc).split())
    return text if isinstance(exc, UserError) and text else f"{type(exc).__name__}: {text}".rstrip(": ")


def write_summary(out: Path, summary: dict[str, Any]) -> None:
    """summary.json, replaced whole (a reader never sees half of it)."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "summary.json.tmp"
    tmp.write_text(json.dumps({"job": job_name(), **summary}, indent=2))
    tmp.replace(out / "summary.json")


def job_numbers(
    results: list[EpisodeResult],
    planned: int,
    skipped: int,
    model_metrics: dict[str, float],
    wall_s: float,
    energy: dict[str, float],
) -> dict[str, float]:
    """What the job run logs as metrics (and summary.json holds): the episodes' summary, the model's
    own numbers (``ollama.*``), the episodes' wall time and the job's integrated energy."""
    return {**summarize(results, planned, skipped), **model_metrics, "episodes_wall_s": round(wall_s, 3), **energy}


def summarize(results: list[EpisodeResult], planned: int, skipped: int = 0) -> dict[str, float]:
    """Job-level numbers, named as the episode's (``success`` is the mean of the episodes' ``success``;
    sums end in ``_total``). Infra and eval errors are not agent failures: rates are over the rest; tasks
    skipped before any episode (not applicable, unavailable) are only counted (``tasks_skipped``)."""
    judged = [r for r in results if r.status not in NOT_JUDGED]
    ttfts = [t for r in results for t in r.ttft_s]

    def mean(values: list[float]) -> float:
        return statistics.fmean(values) if values else 0.0

    out = {
        "episodes": float(len(results)),
        "episodes_planned": float(planned),
        "infra_errors": float(sum(r.status == Status.infra_error for r in results)),
        "eval_errors": float(sum(r.status == Status.eval_error for r in results)),
        "interrupted": float(sum(r.status == Status.interrupted for r in results)),
        "tasks_skipped": float(skipped),
        "success": mean([float(r.status == Status.success) for r in judged]),
        "score": mean([r.score for r in judged]),
        "steps": mean([r.steps for r in judged]),  # model turns
        "actions": mean([r.actions for r in judged]),  # tool calls run
        "duration_s": mean([r.duration_s for r in results]),
        "llm_calls": mean([r.llm_calls for r in results]),
        "tokens_in": mean([r.tokens_in for r in results]),
        "tokens_out": mean([r.tokens_out for r in results]),
        "llm_calls_total": float(sum(r.llm_calls for r in results)),
        "tokens_in_total": float(sum(r.tokens_in for r in results)),
        "tokens_out_total": float(sum(r.tokens_out for r in results)),
        "truncations_total": float(sum(r.truncations for r in results)),  # replies cut by the output limit
    }
    if ttfts:
        out["ttft_p50_s"] = statistics.median(ttfts)
        out["ttft_p90_s"] = statistics.quantiles(ttfts, n=10, method="inclusive")[-1] if len(ttfts) > 1 else ttfts[0]
    ratios = [r.key_steps["ratio"] for r in judged if r.key_steps.get("total")]
    if ratios:
        out["keysteps.ratio"] = statistics.fmean(ratios)
    out.update(tool_metrics(judged))
    out.update(behaviour_rates(judged, results))
    out.update(cost_metrics(results))
    out.update(energy_totals(results))  # the episodes' shares: their sum is the job's energy, counted once
    return out
