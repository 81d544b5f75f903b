"""Key steps: partial progress through a task, MCPWorld-style.

A key step is matched from the episode's events (``event: {type, match: {field: regex}}``, the
first matching event completes it), checked with an evaluator spec (``check: {func, result,
expected, …}``, complete when it scores 1: while the agent works, after each step that followed a
change in the home, dated by that change (:class:`LiveChecks`); else against the final state), or
reported by an MCPWorld handler (``handler_index: k``, 1-based, complete when the handler sent
``key_step`` k, dated when it came live). Metrics: ``keysteps.completed``,
``keysteps.ratio`` (completed / total) and ``keysteps.progress`` (highest completed index / total).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcpworld.core.task_parts import KeyStep
from mcpworld.evaluation.spec import evaluate_spec, validate_spec

if TYPE_CHECKING:
    from mcpworld.env.base import Environment


def validate_key_steps(key_steps: Sequence[KeyStep], where: str) -> None:
    """The ``check`` steps' specs against the evaluator's metrics and getters (the loaders parsed the rest,
    ``core.task_parts.parse_key_steps``), once their templates are expanded."""
    for i, step in enumerate(key_steps):
        if step.check is not None:
            validate_spec(dict(step.check), f"{where}: key_steps[{i}] ({step.name}).check")


class LiveChecks:
    """The ``check`` key steps, tried while the agent works: after a step, when the home changed since
    the last try (``changed()`` gives the change's time or None), each step not yet passed is checked;
    the first pass is traced (``key_step``, via check, ``changed_t``: the change's time on the
    episode clock). A check that errs now is simply not passed yet."""

    def __init__(self, env: Environment, key_steps: Sequence[KeyStep], emit: Any, changed: Any, clock_zero: float):
        self.env, self.emit, self.changed, self.clock_zero = env, emit, changed, clock_zero
        self.pending = {i: s for i, s in enumerate(key_steps) if s.check is not None}

    def __call__(self) -> None:
        changed_at = self.changed()
        if changed_at is None or not self.pending:
            return
        for index, step in list(self.pending.items()):
            try:
                score, _ = evaluate_spec(self.env, dict(step.check or {}), None, where=f"key step {step.name}")
            except Exception:
                continue
            if score >= 1.0:
                del self.pending[index]
                self.emit("key_step", index=index, name=step.name, via="check", changed_t=round(changed_at - self.clock_zero, 4))


def evaluate_key_steps(
    key_steps: Sequence[KeyStep],
    events: list[dict[str, Any]],
    env: Environment | None,
    final_action: str | None,
    handler_steps: list[int] | None = None,
) -> dict[str, Any]:
    """{"total", "completed", "ratio", "progress", "timeline": [{name, index, t, via}]}."""
    timeline: list[dict[str, Any]] = []
    for index, step in enumerate(key_steps):
        if step.event is not None:
            hit = next((e for e in events if step.event.matches(e)), None)
            if hit is not None:
                timeline.append({"name": step.name, "index": index, "t": hit.get("t"), "via": "event"})
        elif step.handler_index is not None:
            if step.handler_index in (handler_steps or []):
                live = next(
                    (e for e in events if e.get("type") == "key_step" and e.get("index") == step.handler_index), None
                )  # reported while the agent worked (a live app hook): dated then
                timeline.append({"name": step.name, "index": index, "t": live.get("t") if live else None, "via": "handler"})
        elif env is not None and step.check is not None:
            live = next(
                (e for e in events if e.get("type") == "key_step" and e.get("via") == "check" and e.get("index") == index), None
            )  # passed while the agent worked
            if live is not None:
                timeline.append({"name": step.name, "index": index, "t": live.get("changed_t", live.get("t")), "via": "check"})
                continue
            score, _ = evaluate_spec(env, dict(step.check), final_action, where=f"key step {step.name}")
            if score >= 1.0:
                timeline.append({"name": step.name, "index": index, "t": None, "via": "check"})
    total = len(key_steps)
    done = len(timeline)
    return {
        "total": total,
        "completed": done,
        "ratio": done / total if total else 0.0,
        "progress": (max(s["index"] for s in timeline) + 1) / total if timeline else 0.0,
        "timeline": timeline,
    }
