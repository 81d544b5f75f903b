"""Finding tasks under a root folder and choosing the ones a job runs: :func:`find_tasks` is the one
path a run and a prefetch take (``TaskSettings.of(cfg)`` reads the config for it)."""

from __future__ import annotations

import fnmatch
import logging
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from mcpworld.core.errors import UserError
from mcpworld.core.task import Task
from mcpworld.tasks.load import DEFAULTS, find_task_files, load_task_file
from mcpworld.tasks.settings import LoaderSettings, TaskSettings

log = logging.getLogger(__name__)


def find_tasks(settings: TaskSettings) -> list[Task]:
    """Every task under ``tasks.root`` (loaded with the suites' settings), narrowed to the selection."""
    chosen = settings.selection
    return select(discover(chosen.root, settings.loaders), chosen.apps, chosen.patterns, chosen.exclude_tags)


def discover(root: Path, settings: LoaderSettings = DEFAULTS) -> list[Task]:
    if not root.is_dir():
        raise UserError(f"tasks.root={str(root)!r} is not a folder of task.yaml files")
    tasks = [load_task_file(p, root, settings) for p in find_task_files(root)]
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


def select(tasks: Iterable[Task], apps: Sequence[str], patterns: Sequence[str],
           exclude_tags: Sequence[str]) -> list[Task]:
    tasks = list(tasks)
    apps, patterns = list(apps), list(patterns)
    chosen = [t for t in tasks if (not apps or t.app in apps)
              and (not patterns or any(fnmatch.fnmatchcase(t.id, p) for p in patterns))
              and not set(t.tags) & set(exclude_tags)]
    if not chosen:
        known = ", ".join(t.id for t in tasks) or "none"
        raise UserError(f"no task matches app={apps or 'all'} task={patterns or 'all'}; known tasks: {known}")
    return chosen
