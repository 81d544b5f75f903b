"""Judge one finished task: its evaluator spec or its MCPWorld handler, plus key steps.

The one place both the episode runner and standalone grading (CLI, /evaluate) go through, so they
cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcpworld.evaluation.keysteps import evaluate_key_steps
from mcpworld.evaluation.spec import evaluate_spec
from mcpworld.result import MetricOutcome

if TYPE_CHECKING:
    from pathlib import Path

    from mcpworld.env.base import Environment
    from mcpworld.tasks.model import Task


@dataclass
class Verdict:
    score: float
    metrics: list[MetricOutcome]
    key_steps: dict[str, Any] = field(default_factory=dict)


def judge(task: "Task", env: "Environment", final_action: str | None,
          events: list[dict[str, Any]] | None = None, trajectory: "Path | None" = None) -> Verdict:
    """``trajectory``: the episode's traj_log.json, for script graders that read it."""
    handler_steps: list[int] = []
    if task.evaluator:
        score, metrics = evaluate_spec(env, task.evaluator, final_action, where=str(task.source))
    elif task.grader:
        from mcpworld.evaluation.grader import run_grader

        score, outcome = run_grader(task.grader, env.resolve(task.workspace), trajectory)
        metrics = [outcome]
    else:
        from mcpworld.evaluation.handler import run_handler

        verdict = run_handler(task.handler, task.params, env.home)
        score, metrics, handler_steps = verdict.score, [verdict.outcome()], verdict.key_steps
    key_steps = (evaluate_key_steps(task.key_steps, events or [], env, final_action, handler_steps)
                 if task.key_steps else {})
    return Verdict(score, metrics, key_steps)
