"""Judge one finished task: the one pipeline from a task to its verdict, read top to bottom in ``judge``.

The stages, each called once from ``judge``: the evaluator spec (validated), its getters and metrics
(``spec.score_spec``); or the task's script grader (``grader``); or its MCPWorld handler's verdict
(``handler``); then the key steps (``keysteps``); then the verdict. The one place both the episode
runner and standalone grading (CLI, /evaluate) go through, so they cannot disagree. The handler is
started before the agent (``handler.start_handler``), since its hooks look at the app first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcpworld.core.result import MetricOutcome
from mcpworld.evaluation.keysteps import evaluate_key_steps
from mcpworld.evaluation.spec import score_spec, validate_spec

if TYPE_CHECKING:
    from pathlib import Path

    from mcpworld.core.task import Task
    from mcpworld.env.base import Environment
    from mcpworld.evaluation.handler import HandlerProcess


@dataclass
class Verdict:
    score: float
    metrics: list[MetricOutcome]
    key_steps: dict[str, Any] = field(default_factory=dict)


def judge(
    task: Task,
    env: Environment,
    final_action: str | None,
    events: list[dict[str, Any]] | None = None,
    trajectory: Path | None = None,
    handler: HandlerProcess | None = None,
) -> Verdict:
    """``trajectory``: the episode's traj_log.json, for script graders that read it; ``handler``: the
    one started before the agent (else one is started now, for standalone grading)."""
    handler_steps: list[int] = []
    if task.evaluator:
        plan = validate_spec(task.evaluator.spec, str(task.source))  # 1. the spec
        score, metrics = score_spec(env, plan, final_action)  # 2-3. its getters, then its metrics
    elif task.grader:
        from mcpworld.evaluation.grader import run_grader

        score, outcome = run_grader(task.grader, env.resolve(task.workspace), trajectory)  # 4. the script grader
        metrics = [outcome]
    else:
        from mcpworld.evaluation.handler import handler_verdict

        said = handler_verdict(task, env, handler)  # 4. the handler
        score, metrics, handler_steps = said.score, [said.outcome()], said.key_steps
    key_steps = evaluate_key_steps(task.key_steps, events or [], env, final_action, handler_steps) if task.key_steps else {}  # 5.
    return Verdict(score, metrics, key_steps)  # 6. the verdict
