"""Judge one finished task: its evaluator spec or its MCPWorld handler, plus key steps.

The one place both the episode runner and standalone grading (CLI, /evaluate) go through, so they
cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcpworld.core.result import MetricOutcome
from mcpworld.evaluation.keysteps import evaluate_key_steps
from mcpworld.evaluation.spec import evaluate_spec

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


def handler_setup(task: Task, env: Environment) -> dict[str, Any]:
    """The task's handler surroundings with the config's home paths (``sql_path``) in this episode's home."""
    setup = dict(task.handler_setup)
    config = dict(setup.get("config") or {})
    if config.get("sql_path"):
        config["sql_path"] = str(env.resolve(str(config["sql_path"])))
    return {**setup, "config": config} if setup else {}


def handler_params(task: Task, env: Environment) -> dict[str, Any]:
    """The task's parameters as its handler gets them: a PC-Canary task's ``/home/user/…`` (its authors'
    home, see ``author_home_text``) in this episode's home, where its hooks look too."""
    if not task.handler_setup:
        return task.params

    def mapped(value: Any) -> Any:
        if isinstance(value, str):
            return env.map_paths(value)
        if isinstance(value, dict):
            return {key: mapped(item) for key, item in value.items()}
        return [mapped(item) for item in value] if isinstance(value, list) else value

    return dict(mapped(task.params))


def start_handler(task: Task, env: Environment, probed: bool = False) -> HandlerProcess | None:
    """A handler task's handler, started before the agent: its Python hooks take their first look at
    the app (``inspector_on_start``) then, as PC-Canary's start with the app. ``probed``: a probe runs
    the task's app hooks this episode and feeds the handler. None for other tasks."""
    if task.evaluator or task.grader or not task.handler:
        return None
    from mcpworld.core.errors import InfraError
    from mcpworld.evaluation.handler import HandlerProcess

    if not task.handler.is_file():
        raise InfraError(f"handler {task.handler} does not exist")
    setup = handler_setup(task, env)
    from mcpworld.tasks.mcpworld_format import author_home_text

    # the instruction names the authors' paths (/workspace/…, /FreeCAD/…), which the desktop has as views of
    # its home: an app event that names one (a saved file's path) reaches the handler as its home's path, as
    # the handler's parameters name it (handler_params)
    return HandlerProcess(
        task.handler,
        handler_params(task, env),
        env.home,
        setup=dict(setup, probed=True) if probed else setup,
        paths=(lambda text: env.map_paths(author_home_text(text))) if task.format == "mcpworld" else None,
    )


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
        score, metrics = evaluate_spec(env, task.evaluator, final_action, where=str(task.source))
    elif task.grader:
        from mcpworld.evaluation.grader import run_grader

        score, outcome = run_grader(task.grader, env.resolve(task.workspace), trajectory)
        metrics = [outcome]
    else:
        from mcpworld.evaluation.handler import run_handler

        if handler:
            verdict = handler.complete()
        else:
            assert task.handler is not None  # a task without an evaluator or a grader has one (the loaders check)
            verdict = run_handler(task.handler, handler_params(task, env), env.home, setup=handler_setup(task, env))
        score, metrics, handler_steps = verdict.score, [verdict.outcome()], verdict.key_steps
    key_steps = evaluate_key_steps(task.key_steps, events or [], env, final_action, handler_steps) if task.key_steps else {}
    return Verdict(score, metrics, key_steps)
