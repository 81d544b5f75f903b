"""One MLflow vocabulary for every level (sweep → job → episode): the params that decide results,
under the same flat names on job and episode runs (so grouping by ``resolution`` puts both in one
group), readable unique run names, the source tags MLflow's own columns show, and the per-step
metric series an episode's trace yields. Pure functions, free of mlflow, shared by every writer.

Why not the whole flattened config as params: it was ~170 params per job run, ~165 the same on every
job of a sweep (the MCP catalog, the evaluator templates), which buried the few that differ. The
whole config goes to the job run as the artifact ``config.yaml``; its hash is the param
``config.sha256``, which tells two runs' configs apart without opening either."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Iterable
from typing import Any

from mcpworld.core.result import EpisodeResult
from mcpworld.telemetry.tracking.keys import DIFFERS

SEP = " · "
MAX_RUN_NAME = 250  # MLflow keeps a run's name in a 250-character column
# flat param name → the resolved config's dotted key; a missing or null key is left out
CONFIG_PARAMS: dict[str, str] = {
    "model": "model.name",
    "model_id": "model.id",
    "provider": "provider.name",
    "resolution": "resolution.name",
    "modality": "modality.name",
    "app": "app.name",
    "env": "env.backend",
    "network": "env.network",
    "profile": "model.profile",
    "variant": "model.variant",
    "thinking_budget": "model.thinking_budget",
    "temperature": "model.temperature",
    "max_tokens": "model.max_tokens",
    "seed": "seed",
    "attempts": "attempts",
    "max_steps": "agent.max_steps",
    "timeout_s": "agent.timeout_s",
}
# a bound that catches the whole config coming back as params (it was ~170): a default job logs 22
# (these, the profile and its prompt and tools hashes: docs/tracking.md lists them), an Ollama model's
# facts (``served.*``, ``ollama.*``) add 10
MAX_JOB_PARAMS = 40
# the episode's own values under the same names (its labels add model, provider, resolution …)
EPISODE_ONLY = ("task", "attempt")
# names the per-step series use; their last point is the episode's total, so they replace the
# single value (MLflow shows a metric's value at its highest step)
SERIES = ("tokens_in", "tokens_out", "llm_latency_s", "keysteps.completed")
SOURCE_NAME = "python -m mcpworld"
# overrides that never name a run: already in the name, or where results go rather than what decides them
UNNAMED = (
    "model",
    "provider",
    "resolution",
    "modality",
    "app",
    "task",
    "experiment",
    "tracking",
    "hydra",
    "concurrency",
    "resume",
    "infra_retries",
    "files",
    "telemetry",
)


def _naming(overrides: list[str] | None) -> list[str]:
    keys = [(o, o.split("=", 1)[0].lstrip("+~")) for o in overrides or []]
    return [o for o, key in keys if key.split(".", 1)[0] not in UNNAMED]


def dig(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def config_sha256(resolved: Any) -> str:
    """The hash of the resolved config (key order does not matter); secrets are stripped before."""
    return hashlib.sha256(json.dumps(resolved, sort_keys=True, default=str).encode()).hexdigest()


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def job_params(resolved: dict[str, Any], model_params: dict[str, str] | None = None) -> dict[str, str]:
    """The params that decide a job's results (the same names its episode runs carry): the
    screen and tools as one value each, the task selection, the model's own facts (Ollama digest,
    the served revision …) and ``config.sha256``; everything else is in ``config.yaml``."""
    out = {name: _text(dig(resolved, key)) for name, key in CONFIG_PARAMS.items() if dig(resolved, key) is not None}
    width, height = dig(resolved, "resolution.width"), dig(resolved, "resolution.height")
    if width and height:
        out["screen"] = f"{width}x{height}"
    tools = dig(resolved, "modality.tools")
    if tools:
        out["tools"] = _text(tools)
    out["tasks"] = _text(dig(resolved, "task") or "all")
    out.update(model_params or {})
    out["config.sha256"] = config_sha256(resolved)
    return out


def episode_params(job: dict[str, str], result: EpisodeResult) -> dict[str, str]:
    """The job's params (the job-level ``app`` selection and ``tasks`` replaced by the episode's own
    app and task), its labels (model, provider, resolution, modality, env, seed) and the attempt."""
    shared = {k: v for k, v in job.items() if k != "tasks"}
    return {
        **shared,
        **{k: str(v) for k, v in result.labels.items()},
        "app": result.app,
        "task": result.task_id,
        "attempt": str(result.attempt),
    }


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _fit(name: str) -> str:
    """A name within MLflow's limit; one cut short ends in a digest of the whole, so it stays unique."""
    if len(name) <= MAX_RUN_NAME:
        return name
    return f"{name[: MAX_RUN_NAME - 10]}…{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def differing(overrides: list[str] | None, swept: Iterable[str]) -> list[str]:
    """This job's overrides of the keys its sweep sweeps (``resolution=rect``): what tells it from
    its sibling jobs."""
    keys = {key.lstrip("+~") for key in swept}
    return [o for o in overrides or [] if _key(o) in keys]


def differs_tag(overrides: list[str] | None, swept: Iterable[str]) -> dict[str, str]:
    """The job run's ``mcpworld.differs`` tag (none outside a sweep): its episode runs carry it too,
    and their names end with it."""
    lead = differing(overrides, swept)
    return {DIFFERS: SEP.join(lead)} if lead else {}


def episode_run_name(result: EpisodeResult, differs: str = "") -> str:
    """``chromium/open_link_in_new_tab #0 · oracle · square``: the task first, since MLflow's runs
    table shows only a name's start, then model · resolution and what else tells its job from the
    sweep's other jobs (``differs``, the job's ``mcpworld.differs`` tag: ``agent.max_steps=4``), so
    names stay unique in a sweep."""
    lead = [str(result.labels[k]) for k in ("model", "resolution") if result.labels.get(k)]
    extra = [part for part in differs.split(SEP) if part and _key(part) not in ("model", "resolution")]
    return _fit(SEP.join([f"{result.task_id} #{result.attempt}", *lead, *extra]))


def job_run_name(params: dict[str, str], overrides: list[str] | None = None, swept: Iterable[str] = ()) -> str:
    """``resolution=rect · oracle · gui · all``: first the overrides that tell this job from its sweep
    siblings (of the ``swept`` keys; MLflow's runs table shows only a name's start), then model ·
    resolution · modality · app (less what the lead already says) and any other override
    (``agent.max_steps=4``): never the raw override string cut short."""
    lead = differing(overrides, swept)
    shown = {_key(o) for o in lead}
    base = [params.get(k, "?") for k in ("model", "resolution", "modality", "app") if k not in shown]
    rest = [o for o in _naming(overrides) if o not in lead]
    return _fit(SEP.join(lead + base + rest))


def sweep_run_name(overrides: list[str], sweep_dir: str) -> str:
    """``resolution=square,rect model=a,b · sweep`` (its overrides first; where results go left out;
    the folder's name when nothing else is left)."""
    kept = [o for o in overrides if o.split("=", 1)[0].lstrip("+~").split(".", 1)[0] not in ("tracking", "hydra")]
    what = " ".join(kept) or sweep_dir.rstrip("/").rsplit("/", 1)[-1]
    return _fit(f"{what}{SEP}sweep")


def source_tags(provenance: dict[str, str], argv: list[str] | None = None) -> dict[str, str]:
    """MLflow's own Source and Version columns: ``mlflow.source.*`` from our provenance tags."""
    tags = {"mlflow.source.type": "LOCAL", "mlflow.source.name": SOURCE_NAME}
    commit = provenance.get("mcpworld.git.commit")
    if commit and commit != "unknown":
        tags["mlflow.source.git.commit"] = commit
    if argv is not None:
        tags["mlflow.note.content"] = command_line(argv)
    return tags


def command_line(argv: list[str]) -> str:
    """The command as typed (``python -m mcpworld`` and its overrides), for notes and descriptions."""
    return " ".join([SOURCE_NAME, *(shlex.quote(a) for a in argv[1:])])


def episode_window(result: EpisodeResult, events: list[dict[str, Any]], written_at: float) -> tuple[int, int]:
    """The episode's real start and end in ms since the epoch: from its trace (``episode_start``),
    else from when result.json was written; the end is the start plus ``duration_s``, so MLflow's
    Duration column says what ``duration_s`` says."""
    start = next((e.get("ts") for e in events if e.get("type") == "episode_start"), None)
    begin = float(start) if start is not None else written_at - result.duration_s
    return int(begin * 1000), int((begin + result.duration_s) * 1000)


def _action(args: Any) -> str | None:
    """The ``action`` of a computer call, from its arguments as the trace keeps them (JSON, maybe cut)."""
    if isinstance(args, dict):
        return str(args.get("action")) if args.get("action") else None
    found = re.search(r'"action"\s*:\s*"([^"]+)"', str(args or ""))
    return found.group(1) if found else None


def tool_span_name(event: dict[str, Any]) -> str:
    """``computer.left_click``, ``bash``, an MCP tool's own name."""
    tool = str(event.get("tool") or "tool")
    action = _action(event.get("args")) if tool == "computer" else None
    return f"{tool}.{action}" if action else tool


def step_series(result: EpisodeResult, events: list[dict[str, Any]]) -> list[tuple[str, float, int, int]]:
    """(key, value, timestamp ms, step) points the UI draws as curves: per LLM call ``n`` the
    cumulative ``tokens_in`` / ``tokens_out`` (the last point is the episode's total) and that
    call's ``llm_latency_s``; ``keysteps.completed`` as it grew, by the agent step under way."""
    points: list[tuple[str, float, int, int]] = []
    tokens_in = tokens_out = 0.0
    for event in events:
        if event.get("type") != "llm_call":
            continue
        n, ts = int(event.get("n") or 0), int(float(event["ts"]) * 1000)
        tokens_in += float(event.get("tokens_in") or 0)
        tokens_out += float(event.get("tokens_out") or 0)
        points += [
            ("tokens_in", tokens_in, ts, n),
            ("tokens_out", tokens_out, ts, n),
            ("llm_latency_s", float(event.get("latency_s") or 0.0), ts, n),
        ]
    start = next((e for e in events if e.get("type") == "episode_start"), None)
    timeline = result.key_steps.get("timeline") or []
    if start is not None and result.key_steps.get("total"):
        tools = [e for e in events if e.get("type") == "tool_call"]
        hits = sorted(float(hit.get("t") or 0.0) for hit in timeline if hit.get("t") is not None)
        t0 = float(start.get("t") or 0.0)
        points.append(("keysteps.completed", 0.0, int(float(start["ts"]) * 1000), 0))
        for done, t in enumerate(hits, 1):
            # the agent step under way then (a file a click saved changes before the click's event)
            step = sum(1 for e in tools if float(e.get("t") or 0.0) - float(e.get("latency_s") or 0.0) <= t)
            points.append(("keysteps.completed", float(done), int((float(start["ts"]) + t - t0) * 1000), step))
        final = float(result.key_steps.get("completed") or 0)
        if final != len(hits):  # steps judged at the end (no time of their own): the curve ends on the verdict
            end = next((e for e in reversed(events) if e.get("type") == "episode_end"), events[-1])
            points.append(("keysteps.completed", final, int(float(end.get("ts") or start["ts"]) * 1000), len(tools)))
    return points


def episode_metrics(result: EpisodeResult, series: list[tuple[str, float, int, int]]) -> dict[str, float]:
    """The episode's single-value metrics: ``numbers()`` less each per-evaluator
    ``metric.<evaluator>`` (those stay in result.json and the evaluation span: one task's evaluator
    names would be 30 empty columns on every other run) and less what a series already gives."""
    drawn = {key for key, *_ in series}
    return {k: v for k, v in result.numbers().items() if not k.startswith("metric.") and k not in drawn}
