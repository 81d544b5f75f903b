"""An episode's trace events → one MLflow trace a researcher can filter and read in MLflow's UI:
tagged with the task, app, model, provider, resolution, modality and the job's run; an AGENT root
span with a ``setup`` span, an LLM span per model call (tokens in MLflow's own token-usage field,
so its token columns fill; time to first token, energy), a TOOL span per tool call named by what it
did (``computer.left_click``, ``bash``, an MCP tool's name; the screenshot it produced attached as
the image), an ``after step`` and an ``observation`` span for what follows each tool call (a model
turn's spans inside its ``turn N`` span), an
``evaluation`` span (each metric's verdict), the phases between them (``PHASES``) so the spans
account for the whole episode, and key steps, errors and loops as span events. Built after the
episode from ``trace.jsonl`` with the events' own timestamps, so tracing costs the agent loop
nothing. mlflow is imported only inside the calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpworld.core.result import EpisodeResult
from mcpworld.telemetry.tracking.vocabulary import tool_span_name

NS = 1_000_000_000
CHAT_USAGE = "mlflow.chat.tokenUsage"  # mlflow.tracing.constant.SpanAttributeKey.CHAT_USAGE (3.x)
LLM_MODEL, LLM_PROVIDER = "mlflow.llm.model", "mlflow.llm.provider"  # SpanAttributeKey.MODEL / MODEL_PROVIDER
TRACE_TAGS = ("task", "app", "model", "provider", "resolution", "modality", "attempt", "status")
EVENT_KINDS = ("error", "hallucination", "loop", "app_exit")  # marked on the root span as events
MIME = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".webp": "image/webp"}


def _ns(seconds: float) -> int:
    return int(seconds * NS)


def _action_key(event: dict[str, Any]) -> int | None:
    """Which tool call an event belongs to: its ``action`` (traces before turns were steps: its ``step``)."""
    key = event.get("action", event.get("step"))
    return int(key) if key is not None else None


@dataclass
class PlannedSpan:
    """One child span of the episode's trace, in epoch seconds; ``screenshots`` are episode-relative
    files (``screens/001.jpg``) its output shows."""

    name: str
    kind: str
    start: float
    end: float
    inputs: Any = None
    outputs: Any = None
    attributes: dict[str, Any] = field(default_factory=dict)
    ok: bool = True
    screenshots: list[str] = field(default_factory=list)
    children: list[PlannedSpan] = field(default_factory=list)  # a turn's model calls, tool calls and what followed

    def flat(self) -> list[PlannedSpan]:
        return [self, *(span for child in self.children for span in child.flat())]


# the stretches between measured spans, named by what runs there; each is bounded by two measured times
PHASES = {
    "start": "the energy meter, the MCP sandboxes' grant and the app probes, before setup",
    "agent start": "the task's handler, the tools, the provider, the MCP servers and the first screenshot",
    "agent end": "the loop's end: the MCP servers and the provider closed, the apps checked, before grading",
    "end": "the desktop torn down (teardown_s), the energy shared and the result written",
}


def _loop_spans(
    event: dict[str, Any], kind: str | None, ts: float, labels: dict[str, str], energies: list[float | None]
) -> list[PlannedSpan]:
    if kind == "llm_call":
        latency = float(event.get("latency_s") or 0.0)
        tokens_in, tokens_out = int(event.get("tokens_in") or 0), int(event.get("tokens_out") or 0)
        attributes: dict[str, Any] = {
            CHAT_USAGE: {"input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out},
            "ttft_s": event.get("ttft_s"),
            "latency_s": latency,
            "finish_reason": event.get("finish_reason"),
            "tokens_estimated": bool(event.get("tokens_estimated")),
        }
        if "model" in labels:
            attributes[LLM_MODEL] = labels["model"]
        if "provider" in labels:
            attributes[LLM_PROVIDER] = labels["provider"]
        n = int(event.get("n") or 0)
        if 0 < n <= len(energies) and energies[n - 1] is not None:
            attributes["gpu.energy_j"] = energies[n - 1]
        return [
            PlannedSpan(
                f"llm call {n}",
                "LLM",
                ts - latency,
                ts,
                attributes=attributes,
                outputs={"text": event.get("text"), "tool_calls": event.get("tool_calls")},
            )
        ]
    if kind == "tool_call":
        latency, step, action = float(event.get("latency_s") or 0.0), event.get("step"), _action_key(event)
        return [
            PlannedSpan(
                tool_span_name(event),
                "TOOL",
                ts - latency,
                ts,
                inputs={"args": event.get("args")},
                outputs={"output": event.get("output") or event.get("error")},
                attributes={
                    "ok": bool(event.get("ok")),
                    "latency_s": latency,
                    "step": step,
                    "action": action,
                    "tool": event.get("tool"),
                },
                ok=bool(event.get("ok")),
            )
        ]
    if kind == "after_step" and "seconds" in event:  # apps watched, key steps checked after a tool call
        seconds = float(event["seconds"])
        return [
            PlannedSpan(
                "after step",
                "TASK",
                ts - seconds,
                ts,
                attributes={"seconds": seconds, "step": event.get("step"), "action": event.get("action")},
            )
        ]
    if kind == "observation" and "seconds" in event:  # the screenshot encoded and saved
        seconds, first = float(event["seconds"]), _action_key(event) is None
        return [
            PlannedSpan(
                "observation",
                "TASK",
                ts - seconds,
                ts,
                outputs={"screenshot": event.get("screenshot")},
                screenshots=[str(event["screenshot"])] if first and event.get("screenshot") else [],
                attributes={"seconds": seconds, "action": event.get("action")},
            )
        ]
    return []


def plan_spans(
    events: list[dict[str, Any]], result: EpisodeResult | None = None, llm_energy_j: list[float | None] | None = None
) -> list[PlannedSpan]:
    """The trace's child spans, in order: each measured stretch (setup, model and tool calls, what
    follows each tool call, grading) with the times its events recorded, and between them the
    episode's phases (``PHASES``), so the spans account for the episode from start to end."""
    start = next((e for e in events if e.get("type") == "episode_start"), None)
    if start is None:
        return []
    end = next((e for e in reversed(events) if e.get("type") == "episode_end"), events[-1])
    ts0 = float(start["ts"])
    end_ts = float(end.get("ts") or ts0)
    labels: dict[str, str] = {k: str(start[k]) for k in ("model", "provider") if k in start}
    energies = list(llm_energy_j if llm_energy_j is not None else (result.llm_energy_j if result else []))
    staged = next((e for e in events if e.get("type") == "staged"), None)
    setup: PlannedSpan | None = None
    evaluation: PlannedSpan | None = None
    loop: list[PlannedSpan] = []  # the loop's spans, a turn's inside it
    turn: list[PlannedSpan] = []  # the loop's spans since the last turn ended
    tool: PlannedSpan | None = None  # the last tool call: the screenshots that follow it are its
    for event in events:
        kind, ts = event.get("type"), float(event.get("ts") or ts0)
        if kind == "setup_done":
            attributes: dict[str, Any] = {"seconds": event.get("seconds")}
            if staged is not None:  # reset ahead on the worker's other desktop: this was the hand-over
                attributes.update({f"staged.{k}": v for k, v in staged.items() if k not in ("type", "t", "ts")})
            setup = PlannedSpan("setup", "TASK", ts - float(event.get("seconds") or 0.0), ts, attributes=attributes)
        elif kind == "evaluation":
            seconds = float(event["seconds"]) if event.get("seconds") is not None else (result.eval_s if result else 0.0)
            evaluation = PlannedSpan(
                "evaluation",
                "EVALUATOR",
                ts - seconds,
                ts,
                ok=not event.get("error"),
                outputs={
                    "score": event.get("score"),
                    "metrics": event.get("metrics"),
                    "key_steps": {k: v for k, v in (event.get("key_steps") or {}).items() if k != "timeline"},
                    "error": event.get("error"),
                },
            )
        elif kind == "turn" and "seconds" in event:  # one model turn, from asking the model to its calls' end
            seconds = float(event["seconds"])
            inside = [s for s in turn if s.start >= ts - seconds - 1e-3]  # (a first screen before it stays out)
            loop = [s for s in loop if s not in inside]
            loop.append(
                PlannedSpan(
                    f"turn {event.get('n')}",
                    "CHAIN",
                    ts - seconds,
                    ts,
                    children=inside,
                    attributes={"seconds": seconds, "step": event.get("step")},
                )
            )
            turn = []
        else:
            if kind == "observation" and event.get("screenshot") and _action_key(event) is not None and tool:
                tool.screenshots.append(str(event["screenshot"]))
            made = _loop_spans(event, kind, ts, labels, energies)
            tool = made[0] if kind == "tool_call" else tool
            loop += made
            turn += made
    measured = [s for s in (setup, *loop, evaluation) if s is not None]
    spans = list(measured)
    failed = next((float(e["ts"]) for e in events if e.get("type") == "error" and e.get("ts")), None)

    def phase(name: str, begin: float, until: float, **attributes: Any) -> None:
        if until > begin:
            spans.append(PlannedSpan(name, "TASK", begin, until, attributes={"what": PHASES[name], **attributes}))

    first = min((s.start for s in measured), default=failed if failed is not None else end_ts)
    phase("start", ts0, first)  # (nothing measured: setup failed, up to its error)
    if setup is not None and loop:
        phase("agent start", setup.end, min(s.start for s in loop))
    last_loop = max((s.end for s in loop), default=None)
    if evaluation is not None and last_loop is not None:
        phase("agent end", last_loop, evaluation.start)
    last = max([s.end for s in measured] + ([failed] if failed is not None else []), default=first)
    phase("end", last, end_ts, teardown_s=end.get("teardown_s"))
    return sorted(spans, key=lambda s: (s.start, s.end))


@dataclass
class Coverage:
    """How much of an episode's wall time its spans account for."""

    wall_s: float
    covered_s: float
    largest_gap_s: float
    largest_gap_at: float  # seconds after the episode's start

    @property
    def fraction(self) -> float:
        return self.covered_s / self.wall_s if self.wall_s > 0 else 1.0


def coverage(windows: list[tuple[float, float]], start: float, end: float) -> Coverage:
    """The union of ``windows`` (start, end; seconds) within [start, end], and the largest stretch
    no window covers."""
    covered = gap = 0.0
    gap_at, reached = start, start
    for begin, until in sorted((max(a, start), min(b, end)) for a, b in windows):
        if until <= begin:
            continue
        if begin > reached and begin - reached > gap:
            gap, gap_at = begin - reached, reached
        if until > reached:
            covered += until - max(begin, reached)
            reached = until
    if end - reached > gap:
        gap, gap_at = end - reached, reached
    return Coverage(round(end - start, 6), round(covered, 6), round(gap, 6), round(gap_at - start, 6))


def trace_coverage(events: list[dict[str, Any]], result: EpisodeResult | None = None) -> Coverage | None:
    """The coverage of the trace ``log_trace`` writes for these events (None: no episode in them)."""
    start = next((e for e in events if e.get("type") == "episode_start"), None)
    if start is None:
        return None
    end = next((e for e in reversed(events) if e.get("type") == "episode_end"), events[-1])
    return coverage(
        [(s.start, s.end) for top in plan_spans(events, result) for s in top.flat()],
        float(start["ts"]),
        float(end.get("ts") or start["ts"]),
    )


def _screenshot(episode_dir: Path | None, name: str) -> Any:
    """The screenshot as an MLflow trace attachment (the file as stored: JPEG by default), which MLflow's
    trace view shows as the image; its name where the file is not at hand."""
    path = episode_dir / name if episode_dir is not None else None
    if path is None or not path.is_file():
        return name
    from mlflow.tracing.attachments import Attachment

    return Attachment.from_file(path, MIME.get(path.suffix.lower()))


def _write(client: Any, root: Any, span: PlannedSpan, episode_dir: Path | None, parent: Any = None) -> None:
    outputs, attributes = span.outputs, dict(span.attributes)
    if span.screenshots:
        shots = [_screenshot(episode_dir, name) for name in span.screenshots]
        outputs = {**(outputs or {}), "screenshot": shots[0] if len(shots) == 1 else shots}
        attributes["screenshot"] = span.screenshots[0] if len(span.screenshots) == 1 else span.screenshots
    child = client.start_span(
        span.name,
        trace_id=root.trace_id,
        parent_id=(parent or root).span_id,
        span_type=span.kind,
        start_time_ns=_ns(span.start),
        inputs=span.inputs,
        attributes=attributes,
    )
    for inner in sorted(span.children, key=lambda s: (s.start, s.end)):
        _write(client, root, inner, episode_dir, child)
    client.end_span(
        root.trace_id,
        child.span_id,
        outputs=outputs,
        status="OK" if span.ok else "ERROR",
        end_time_ns=_ns(max(span.start, span.end)),
    )


def log_trace(
    client: Any,
    experiment_id: str | None,
    run_id: str,
    events: list[dict[str, Any]],
    result: EpisodeResult | None = None,
    tags: dict[str, str] | None = None,
    name: str | None = None,
    llm_energy_j: list[float | None] | None = None,
    episode_dir: Path | None = None,
) -> str | None:
    """Write the trace; its id, or None when the events hold no episode. With ``episode_dir``, each
    screenshot is attached to its span (the tool call's, or the first observation's) as the image."""
    from mlflow.entities import SpanEvent as _SpanEvent

    SpanEvent: Any = _SpanEvent  # (its stubs call it abstract; it is not)
    start = next((e for e in events if e.get("type") == "episode_start"), None)
    if start is None:
        return None
    end = next((e for e in reversed(events) if e.get("type") == "episode_end"), events[-1])
    t0, ts0 = float(start.get("t") or 0.0), float(start["ts"])
    labels: dict[str, str] = {k: str(start[k]) for k in ("model", "provider", "resolution", "modality", "attempt") if k in start}
    trace_tags: dict[str, str] = {"task": str(start.get("task")), **labels, **(tags or {})}
    if result is not None:
        trace_tags.update(app=result.app, status=str(result.status))
    root = client.start_trace(
        name or f"episode {start.get('task')}",
        span_type="AGENT",
        experiment_id=experiment_id,
        run_id=run_id,
        start_time_ns=_ns(ts0),
        tags={k: str(v)[:250] for k, v in trace_tags.items()},
        inputs={"task": start.get("task"), "instruction": start.get("instruction")},
        attributes=labels,
    )
    for span in plan_spans(events, result, llm_energy_j):
        _write(client, root, span, episode_dir)
    for event in events:
        kind, ts = event.get("type"), float(event.get("ts") or ts0)
        if kind in EVENT_KINDS:
            details = {k: str(v)[:500] for k, v in event.items() if k not in ("type", "t", "ts", "traceback")}
            root.add_event(SpanEvent(str(kind), timestamp=_ns(ts), attributes=details))
    end_ts = float(end.get("ts") or ts0)
    for hit in (result.key_steps.get("timeline") or []) if result is not None else []:
        at = ts0 + float(hit["t"]) - t0 if hit.get("t") is not None else end_ts
        root.add_event(
            SpanEvent(
                f"key step: {hit.get('name')}",
                timestamp=_ns(at),
                attributes={"index": int(hit.get("index") or 0), "via": str(hit.get("via"))},
            )
        )
    client.end_trace(root.trace_id, outputs={"status": end.get("status"), "score": end.get("score")}, end_time_ns=_ns(end_ts))
    return root.trace_id
