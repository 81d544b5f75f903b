"""Oracle solutions kept apart from the tasks they solve (``tasks.solutions=DIR``).

A suite's task files (OSWorld, WAA, MCPWorld …) run unchanged, so their solutions live in files of
ours: ``DIR/**/<task id>.yaml`` holding ``solution:`` in the shape a native task.yaml uses (a list
of tool calls for the gui modality, or ``{modality: [tool calls]}``), and optionally ``id:`` where
the task id cannot be a file name (``vs_code/982d…-2-WOS``). They are attached by id after the
tasks load, replacing the task's own solution for the modalities they give. A step may carry
``spoil:`` (``omit``, or args to change) for the oracle's nearly right replay: docs/certify.md.
``offline:`` says why the task may run where the sites its setup opens cannot be reached (the
answer needs none of their content), which lifts that skip (mcpworld.tasks.websites).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mcpworld.core.errors import TaskFileError, UserError
from mcpworld.core.task import Task
from mcpworld.tasks.native import normalize_call

KEYS = {"id", "solution", "note", "offline"}


def read_solution(path: Path) -> tuple[str, dict[str, list[dict[str, Any]]]]:
    """(task id, {modality: tool calls}) of one overlay file; TaskFileError naming the file otherwise."""
    task_id, solution, _ = read_overlay(path)
    return task_id, solution


def read_overlay(path: Path) -> tuple[str, dict[str, list[dict[str, Any]]], str]:
    """(task id, {modality: tool calls}, why it may run offline or "") of one overlay file."""
    where = str(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"{where}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or "solution" not in data:
        raise TaskFileError(f"{where}: a solution file needs 'solution:' (a list of tool calls, or "
                            "modality -> list), and optionally 'id:' and 'note:'")
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise TaskFileError(f"{where}: unknown key(s) {', '.join(unknown)}; a solution file has {', '.join(sorted(KEYS))}")
    raw = data["solution"]
    if isinstance(raw, list):
        raw = {"gui": raw}
    if not isinstance(raw, dict) or not all(isinstance(calls, list) for calls in raw.values()):
        raise TaskFileError(f"{where}: 'solution' must be a list of tool calls or a mapping modality -> list")
    offline = data.get("offline") or ""
    if not isinstance(offline, str):
        raise TaskFileError(f"{where}: 'offline' must be a sentence saying why the answer needs none of the "
                            "sites the task opens")
    return (str(data.get("id") or path.stem),
            {str(m): [normalize_call(c, where) for c in calls] for m, calls in raw.items()}, offline.strip())


def load_solutions(folder: Path) -> dict[str, tuple[Path, dict[str, list[dict[str, Any]]]]]:
    """Every overlay under ``folder`` by task id (two files for one id is an error naming both)."""
    return {task_id: (path, solution) for task_id, (path, solution, _) in _overlays(folder).items()}


def _overlays(folder: Path) -> dict[str, tuple[Path, dict[str, list[dict[str, Any]]], str]]:
    if not folder.is_dir():
        raise UserError(f"tasks.solutions={str(folder)!r} is not a folder of <task id>.yaml solution files")
    found: dict[str, tuple[Path, dict[str, list[dict[str, Any]]], str]] = {}
    for path in sorted(folder.rglob("*.yaml")):
        task_id, solution, offline = read_overlay(path)
        if task_id in found:
            raise TaskFileError(f"{path}: task {task_id} already has a solution file, {found[task_id][0]}")
        found[task_id] = (path, solution, offline)
    return found


def attach_solutions(tasks: list[Task], folder: Path) -> int:
    """Give each task its overlay's solution (and its ``offline:``); how many tasks got one."""
    overlays = _overlays(folder)
    attached = 0
    for task in tasks:
        if task.id in overlays:
            _, solution, offline = overlays[task.id]
            task.solution = {**task.solution, **solution}
            task.offline = offline or task.offline
            attached += 1
    return attached
