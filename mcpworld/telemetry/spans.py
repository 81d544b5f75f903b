"""An episode's trace events → one MLflow trace a researcher can filter and read in MLflow's UI:
tagged with the task, app, model, provider, resolution, modality and the job's run; an AGENT root
span with a ``setup`` span, an LLM span per model call (tokens in MLflow's own token-usage field,
so its token columns fill; time to first token, energy), a TOOL span per tool call named by what it
did (``computer.left_click``, ``bash``, an MCP tool's name; the screenshot it produced as output),
an ``evaluation`` span (each metric's verdict), and key steps, errors and loops as span events.
Built after the episode from ``trace.jsonl`` with the events' own timestamps, so tracing costs the
agent loop nothing. mlflow is imported only inside the call."""

from __future__ import annotations

from typing import Any

from mcpworld.core.result import EpisodeResult
from mcpworld.telemetry.tracking.vocabulary import tool_span_name

NS = 1_000_000_000
CHAT_USAGE = "mlflow.chat.tokenUsage"  # mlflow.tracing.constant.SpanAttributeKey.CHAT_USAGE (3.x)
LLM_MODEL, LLM_PROVIDER = "mlflow.llm.model", "mlflow.llm.provider"  # SpanAttributeKey.MODEL / MODEL_PROVIDER
TRACE_TAGS = ("task", "app", "model", "provider", "resolution", "modality", "attempt", "status")
EVENT_KINDS = ("error", "hallucination", "loop", "app_exit")  # marked on the root span as events


def _ns(seconds: float) -> int:
    return int(seconds * NS)


def _action_key(event: dict[str, Any]) -> int | None:
    """Which tool call an event belongs to: its ``action`` (traces before turns were steps: its ``step``)."""
    key = event.get("action", event.get("step"))
    return int(key) if key is not None else None


def _screens_by_action(events: list[dict[str, Any]]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for event in events:
        key = _action_key(event)
        if event.get("type") == "observation" and key is not None and event.get("screenshot"):
            out.setdefault(key, []).append(str(event["screenshot"]))
    return out


def _child(client: Any, root: Any, name: str, kind: str, start: float, end: float, inputs: Any = None,
           outputs: Any = None, attributes: dict[str, Any] | None = None, ok: bool = True) -> None:
    span = client.start_span(name, trace_id=root.trace_id, parent_id=root.span_id, span_type=kind,
                             start_time_ns=_ns(start), inputs=inputs, attributes=attributes or {})
    client.end_span(root.trace_id, span.span_id, outputs=outputs, status="OK" if ok else "ERROR",
                    end_time_ns=_ns(max(start, end)))


def log_trace(client: Any, experiment_id: str | None, run_id: str, events: list[dict[str, Any]],
              result: EpisodeResult | None = None, tags: dict[str, str] | None = None, name: str | None = None,
              llm_energy_j: list[float | None] | None = None) -> str | None:
    """Write the trace; its id, or None when the events hold no episode."""
    from mlflow.entities import SpanEvent as _SpanEvent

    SpanEvent: Any = _SpanEvent  # (its stubs call it abstract; it is not)
    start = next((e for e in events if e.get("type") == "episode_start"), None)
    if start is None:
        return None
    end = next((e for e in reversed(events) if e.get("type") == "episode_end"), events[-1])
    t0, ts0 = float(start.get("t") or 0.0), float(start["ts"])
    labels: dict[str, str] = {k: str(start[k]) for k in ("model", "provider", "resolution", "modality", "attempt")
                              if k in start}
    trace_tags: dict[str, str] = {"task": str(start.get("task")), **labels, **(tags or {})}
    if result is not None:
        trace_tags.update(app=result.app, status=str(result.status))
    root = client.start_trace(name or f"episode {start.get('task')}", span_type="AGENT", experiment_id=experiment_id,
                              run_id=run_id, start_time_ns=_ns(ts0), tags={k: str(v)[:250] for k, v in trace_tags.items()},
                              inputs={"task": start.get("task"), "instruction": start.get("instruction")},
                              attributes=labels)
    energies = list(llm_energy_j if llm_energy_j is not None else (result.llm_energy_j if result else []))
    screens = _screens_by_action(events)
    for event in events:
        kind, ts = event.get("type"), float(event.get("ts") or ts0)
        if kind == "setup_done":
            _child(client, root, "setup", "TASK", ts - float(event.get("seconds") or 0.0), ts,
                   attributes={"seconds": event.get("seconds")})
        elif kind == "llm_call":
            latency = float(event.get("latency_s") or 0.0)
            tokens_in, tokens_out = int(event.get("tokens_in") or 0), int(event.get("tokens_out") or 0)
            attributes: dict[str, Any] = {
                CHAT_USAGE: {"input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out},
                "ttft_s": event.get("ttft_s"), "latency_s": latency, "finish_reason": event.get("finish_reason"),
                "tokens_estimated": bool(event.get("tokens_estimated"))}
            if "model" in labels:
                attributes[LLM_MODEL] = labels["model"]
            if "provider" in labels:
                attributes[LLM_PROVIDER] = labels["provider"]
            n = int(event.get("n") or 0)
            if 0 < n <= len(energies) and energies[n - 1] is not None:
                attributes["gpu.energy_j"] = energies[n - 1]
            _child(client, root, f"llm call {n}", "LLM", ts - latency, ts, attributes=attributes,
                   outputs={"text": event.get("text"), "tool_calls": event.get("tool_calls")})
        elif kind == "tool_call":
            latency, step, action = float(event.get("latency_s") or 0.0), event.get("step"), _action_key(event)
            shots = screens.get(action, []) if action is not None else []
            outputs = {"screenshot": shots[0] if len(shots) == 1 else (shots or None),
                       "output": event.get("output") or event.get("error")}
            _child(client, root, tool_span_name(event), "TOOL", ts - latency, ts, inputs={"args": event.get("args")},
                   outputs=outputs, attributes={"ok": bool(event.get("ok")), "latency_s": latency, "step": step,
                                                "action": action, "tool": event.get("tool")}, ok=bool(event.get("ok")))
        elif kind == "evaluation":
            seconds = result.eval_s if result is not None else 0.0
            _child(client, root, "evaluation", "EVALUATOR", ts - seconds, ts,
                   outputs={"score": event.get("score"), "metrics": event.get("metrics"),
                            "key_steps": {k: v for k, v in (event.get("key_steps") or {}).items() if k != "timeline"},
                            "error": event.get("error")}, ok=not event.get("error"))
        elif kind in EVENT_KINDS:
            details = {k: str(v)[:500] for k, v in event.items() if k not in ("type", "t", "ts", "traceback")}
            root.add_event(SpanEvent(str(kind), timestamp=_ns(ts), attributes=details))
    end_ts = float(end.get("ts") or ts0)
    for hit in (result.key_steps.get("timeline") or []) if result is not None else []:
        at = ts0 + float(hit["t"]) - t0 if hit.get("t") is not None else end_ts
        root.add_event(SpanEvent(f"key step: {hit.get('name')}", timestamp=_ns(at),
                                 attributes={"index": int(hit.get("index") or 0), "via": str(hit.get("via"))}))
    client.end_trace(root.trace_id, outputs={"status": end.get("status"), "score": end.get("score")},
                     end_time_ns=_ns(end_ts))
    return root.trace_id
