"""Oracle solutions kept apart from the tasks they solve (``tasks.solutions=DIR``).

A suite's task files (OSWorld, WAA, MCPWorld …) run unchanged, so their solutions live in files of
ours: ``DIR/**/<task id>.yaml`` holding ``solution:`` in the shape a native task.yaml uses (a list
of tool calls for the gui modality, or ``{modality: [tool calls]}``), and optionally ``id:`` where
the task id cannot be a file name (``vs_code/982d…-2-WOS``). They are attached by id after the
tasks load, replacing the task's own solution for the modalities they give. A step may carry
``spoil:`` (``omit``, or args to change) for the oracle's nearly right replay: docs/certify.md.
``offline:`` says why the task may run where the sites its setup opens cannot be reached (the
answer needs none of their content), which lifts that skip (mcpworld.tasks.websites); a file with
``unsolved:`` instead of ``solution:`` says why no oracle solution can be written here (a certificate
names it as the task's cause of exclusion).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from mcpworld.core.errors import TaskFileError, UserError
from mcpworld.core.task import Task
from mcpworld.core.task_parts import Solution
from mcpworld.tasks.native import normalize_call

KEYS = {"id", "solution", "note", "offline", "unsolved"}


@dataclass(frozen=True)
class Overlay:
    """One solution file: the task's id, its oracle's tool calls per modality, and the declarations
    that go with them."""

    path: Path
    task_id: str
    solution: Solution
    offline: str = ""  # why the answer needs none of the sites the task opens
    unsolved: str = ""  # why no solution can be written here (the file then holds no solution)


def read_solution(path: Path) -> tuple[str, Solution]:
    """(task id, {modality: tool calls}) of one overlay file; TaskFileError naming the file otherwise."""
    overlay = read_overlay(path)
    return overlay.task_id, overlay.solution


def read_overlay(path: Path) -> Overlay:
    """One overlay file, checked; TaskFileError naming the file otherwise."""
    where = str(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"{where}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not ("solution" in data) ^ ("unsolved" in data):
        raise TaskFileError(
            f"{where}: a solution file needs 'solution:' (a list of tool calls, or modality -> "
            "list), or instead 'unsolved:' (why none can be written here), and optionally "
            "'id:' and 'note:'"
        )
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise TaskFileError(f"{where}: unknown key(s) {', '.join(unknown)}; a solution file has {', '.join(sorted(KEYS))}")
    raw = data.get("solution") or {}
    if isinstance(raw, list):
        raw = {"gui": raw}
    if not isinstance(raw, dict) or not all(isinstance(calls, list) for calls in raw.values()):
        raise TaskFileError(f"{where}: 'solution' must be a list of tool calls or a mapping modality -> list")
    for key, meaning in (
        ("offline", "why the answer needs none of the sites the task opens"),
        ("unsolved", "why no oracle solution can be written for the task here"),
    ):
        if not isinstance(data.get(key) or "", str):
            raise TaskFileError(f"{where}: '{key}' must be a sentence saying {meaning}")
    return Overlay(
        path,
        str(data.get("id") or path.stem),
        Solution({str(m): tuple(normalize_call(c, where) for c in calls) for m, calls in raw.items()}),
        str(data.get("offline") or "").strip(),
        str(data.get("unsolved") or "").strip(),
    )


def load_solutions(folder: Path) -> dict[str, tuple[Path, Solution]]:
    """Every overlay under ``folder`` by task id (two files for one id is an error naming both)."""
    return {task_id: (o.path, o.solution) for task_id, o in _overlays(folder).items()}


def _overlays(folder: Path) -> dict[str, Overlay]:
    if not folder.is_dir():
        raise UserError(f"tasks.solutions={str(folder)!r} is not a folder of <task id>.yaml solution files")
    found: dict[str, Overlay] = {}
    for path in sorted(folder.rglob("*.yaml")):
        overlay = read_overlay(path)
        if overlay.task_id in found:
            raise TaskFileError(f"{path}: task {overlay.task_id} already has a solution file, {found[overlay.task_id].path}")
        found[overlay.task_id] = overlay
    return found


def attach_solutions(tasks: list[Task], folder: Path) -> int:
    """Give each task its overlay's solution (and its ``offline:``/``unsolved:``); how many tasks got one."""
    overlays = _overlays(folder)
    attached = 0
    for task in tasks:
        overlay = overlays.get(task.id)
        if overlay is not None:
            task.solution = task.solution.merged(overlay.solution)
            task.offline = overlay.offline or task.offline
            task.unsolved = overlay.unsolved or task.unsolved
            attached += 1
    return attached
