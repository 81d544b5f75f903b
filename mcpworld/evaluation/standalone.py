"""Grading a finished state without an agent: shared by the CLI and the /evaluate service,
so both give the same score for the same task and home directory. A script grader gets a
``traj_log.json`` here too (no messages, claimed done); a grader that gives no verdict is
``"status": "eval_error"`` with the cause, not a failure."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from mcpworld.core.errors import EvalError
from mcpworld.core.task import Task
from mcpworld.env.base import Environment
from mcpworld.env.local.home import HomeEnvironment
from mcpworld.evaluation.templates import builtin_templates, expand_task
from mcpworld.evaluation.verdict import judge


def grade(task: Task, home: Path, final_action: str | None = "DONE", threshold: float = 1.0) -> dict[str, Any]:
    env = HomeEnvironment(home)
    try:
        return grade_in(task, env, final_action, threshold)
    finally:
        env.close()


def grade_in(task: Task, env: Environment, final_action: str | None = "DONE", threshold: float = 1.0) -> dict[str, Any]:
    """The verdict on ``env`` as it is now (a home directory, or a running desktop for /evaluate --live)."""
    expand_task(task, builtin_templates())
    try:
        verdict = judge(task, env, final_action)
    except EvalError as exc:
        return {
            "task": task.id,
            "status": "eval_error",
            "score": None,
            "success": None,
            "error": str(exc),
            "key_steps": {},
            "actual": [],
            "expected": [],
            "metrics": [],
        }
    metrics = [asdict(o) for o in verdict.metrics]
    return {
        "task": task.id,
        "status": "success" if verdict.score >= threshold else "failure",
        "score": verdict.score,
        "success": verdict.score >= threshold,
        "key_steps": verdict.key_steps,
        "actual": [m["actual"] for m in metrics],
        "expected": [m["expected"] for m in metrics],
        "metrics": metrics,
    }
