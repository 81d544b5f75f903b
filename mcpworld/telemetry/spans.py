"""An episode's trace events → one MLflow trace: an AGENT root span for the episode, an LLM span
per model call (tokens, time to first token, energy) and a TOOL span per tool call (arguments,
latency, ok). Built after the episode from ``trace.jsonl`` with the events' own timestamps, so
tracing costs the agent loop nothing."""

from __future__ import annotations

from typing import Any

NS = 1_000_000_000


def _ns(seconds: float) -> int:
    return int(seconds * NS)


def log_trace(client: Any, experiment_id: str | None, run_id: str, events: list[dict[str, Any]],
              llm_energy_j: list[float | None] | None = None) -> str | None:
    """Write the trace; its id, or None when the events hold no episode."""
    start = next((e for e in events if e.get("type") == "episode_start"), None)
    if start is None:
        return None
    end = next((e for e in reversed(events) if e.get("type") == "episode_end"), events[-1])
    root = client.start_trace(f"episode {start.get('task')}", span_type="AGENT", experiment_id=experiment_id,
                              run_id=run_id, start_time_ns=_ns(start["ts"]),
                              inputs={"task": start.get("task"), "instruction": start.get("instruction")},
                              attributes={k: str(start.get(k)) for k in ("model", "modality", "resolution", "attempt")})
    energies = list(llm_energy_j or [])
    for event in events:
        kind = event.get("type")
        if kind == "llm_call":
            latency = float(event.get("latency_s") or 0.0)
            attributes = {"tokens_in": event.get("tokens_in"), "tokens_out": event.get("tokens_out"),
                          "ttft_s": event.get("ttft_s"), "latency_s": latency,
                          "finish_reason": event.get("finish_reason")}
            n = int(event.get("n") or 0)
            if 0 < n <= len(energies) and energies[n - 1] is not None:
                attributes["gpu.energy_j"] = energies[n - 1]
            span = client.start_span(f"llm call {n}", trace_id=root.trace_id, parent_id=root.span_id,
                                     span_type="LLM", start_time_ns=_ns(event["ts"] - latency),
                                     attributes=attributes)
            client.end_span(root.trace_id, span.span_id, outputs={"text": event.get("text"),
                                                                  "tool_calls": event.get("tool_calls")},
                            end_time_ns=_ns(event["ts"]))
        elif kind == "tool_call":
            latency = float(event.get("latency_s") or 0.0)
            span = client.start_span(str(event.get("tool")), trace_id=root.trace_id, parent_id=root.span_id,
                                     span_type="TOOL", start_time_ns=_ns(event["ts"] - latency),
                                     inputs={"args": event.get("args")},
                                     attributes={"ok": bool(event.get("ok")), "latency_s": latency,
                                                 "step": event.get("step")})
            client.end_span(root.trace_id, span.span_id, outputs={"output": event.get("output") or event.get("error")},
                            status="OK" if event.get("ok") else "ERROR", end_time_ns=_ns(event["ts"]))
    client.end_trace(root.trace_id, outputs={"status": end.get("status"), "score": end.get("score")},
                     end_time_ns=_ns(end["ts"]))
    return root.trace_id
