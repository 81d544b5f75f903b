"""Finding tasks under a root folder and choosing the ones a job runs."""

from __future__ import annotations

import fnmatch
import logging
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from mcpworld.core.errors import UserError
from mcpworld.core.paths import BUILTIN_TASKS
from mcpworld.core.task import Task
from mcpworld.tasks.load import find_task_files, load_task_file

log = logging.getLogger(__name__)

BUILTIN_ROOT = BUILTIN_TASKS


def discover(root: Path) -> list[Task]:
    if not root.is_dir():
        raise UserError(f"tasks.root={str(root)!r} is not a folder of task.yaml files")
    tasks = [load_task_file(p, root) for p in find_task_files(root)]
    qualify_colliding_ids(tasks)
    ids = Counter(t.id for t in tasks)
    dupes = sorted(i for i, n in ids.items() if n > 1)
    if dupes:
        raise UserError(f"duplicate task id(s) under {root}: {', '.join(dupes)}; give each task its own id")
    return tasks


def qualify_colliding_ids(tasks: list[Task]) -> None:
    """A suite's tasks that share an id become ``<domain folder>/<file name>``, with a warning: WAA
    has two such pairs, each two different tasks in one domain folder under different file names
    (``vs_code/982d12a5-…-WOS.json`` and ``…-2-WOS.json``). Our own task files must keep ids unique."""
    ids = Counter(t.id for t in tasks if t.format != "native")
    for task in tasks:
        if task.format != "native" and ids[task.id] > 1:
            qualified = f"{task.source.parent.name}/{task.source.stem}"
            log.warning("task id %s is used by %d task files; %s is now %s", task.id, ids[task.id], task.source,
                        qualified)
            task.id = qualified


def as_patterns(task: Any) -> list[str]:
    if task is None or task == "":
        return []
    if isinstance(task, str):
        return [p.strip() for p in task.split(",") if p.strip()]
    return [str(p) for p in task]


def select(tasks: Iterable[Task], apps: list[str], patterns: list[str], exclude_tags: list[str]) -> list[Task]:
    tasks = list(tasks)
    chosen = [t for t in tasks if (not apps or t.app in apps)
              and (not patterns or any(fnmatch.fnmatchcase(t.id, p) for p in patterns))
              and not set(t.tags) & set(exclude_tags)]
    if not chosen:
        known = ", ".join(t.id for t in tasks) or "none"
        raise UserError(f"no task matches app={apps or 'all'} task={patterns or 'all'}; known tasks: {known}")
    return chosen
