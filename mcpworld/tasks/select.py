"""Finding tasks under a root folder and choosing the ones a job runs: :func:`find_tasks` is the one
path a run and a prefetch take (``TaskSettings.of(cfg)`` reads the config for it)."""

from __future__ import annotations

import fnmatch
import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

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
            log.warning("task id %s is used by %d task files; %s is now %s", task.id, ids[task.id], task.source, qualified)
            task.id = qualified


def select(tasks: Iterable[Task], apps: Sequence[str], patterns: Sequence[str], exclude_tags: Sequence[str]) -> list[Task]:
    tasks = list(tasks)
    apps, patterns = list(apps), list(patterns)
    chosen = [
        t
        for t in tasks
        if (not apps or t.app in apps)
        and (not patterns or any(fnmatch.fnmatchcase(t.id, p) for p in patterns))
        and not set(t.tags) & set(exclude_tags)
    ]
    if not chosen:
        known = ", ".join(t.id for t in tasks) or "none"
        raise UserError(f"no task matches app={apps or 'all'} task={patterns or 'all'}; known tasks: {known}")
    return chosen


# ---------------------------------------------------------------- applicability to a modality


def task_paths(task: Task, starts_app: bool, has_mcp: bool) -> frozenset[str]:
    """The tool families a task can be done with (any one of them suffices).

    A task that declares its own tools (Toolathlon's ``needed_mcp_servers`` / ``needed_local_tools``,
    a native task's ``mcp_servers``) and starts no desktop application has no GUI or shell path: the
    desktop is empty, and its grader judges what the declared tools did (Toolathlon's graders require
    a ``local-claim_done`` call, which only the ``mcp`` family offers). Every other task can be done on
    the screen or from the shell (the desktop's files and apps are there), and also with MCP tools when
    it has servers (its own or its app config's) or local tools: MCPWorld/PC-Canary tasks keep both."""
    declares_tools = bool(task.mcp_servers or task.local_tools)
    paths = set() if declares_tools and not starts_app else {"computer", "bash"}
    if has_mcp:
        paths.add("mcp")
    return frozenset(paths)


def not_applicable(task: Task, modality: str, tools: Sequence[str], starts_app: bool, has_mcp: bool) -> str | None:
    """Why ``modality`` cannot do ``task`` (none of its tool families is a path to it), or None. Such a
    task is skipped before any episode and counted in no rate: a GUI agent on an empty desktop would
    "fail" a task it was never given the tools for."""
    paths = task_paths(task, starts_app, has_mcp)
    if paths & set(tools):
        return None
    offered = ", ".join(str(t) for t in tools)
    if paths == {"mcp"}:
        return (
            f"not applicable to modality={modality} (it offers {offered}): the task needs MCP tools (its task file "
            "declares MCP servers or local tools, it starts no desktop app, and its grader judges what those "
            "tools did); run it with modality=mcp, hybrid or all"
        )
    return f"not applicable to modality={modality}: it has no MCP servers, and modality={modality} offers no other tools"


def modality_tools() -> dict[str, frozenset[str]]:
    """Each built-in modality's tool families (``mcpworld/conf/modality/*.yaml``)."""
    import yaml

    from mcpworld.core.paths import CONF_DIR

    out = {}
    for path in sorted((CONF_DIR / "modality").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        out[str(data.get("name", path.stem))] = frozenset(str(t) for t in data.get("tools") or [])
    return out


def borrow_solution(task: Task, modality: str, tools: Sequence[str]) -> bool:
    """Give the oracle a solution for ``modality`` when the task has none of its own: one written for a
    modality whose tools it all offers (``all`` replays hybrid's, else mcp's, gui's or cli's: the most
    tools first). True when the task has a solution for ``modality`` now."""
    if modality in task.solution:
        return True
    offered = set(tools)
    known = modality_tools()
    usable = [m for m in task.solution if m in known and known[m] <= offered]
    if not usable:
        return False
    task.solution = task.solution.with_steps(modality, task.solution.get(max(usable, key=lambda m: (len(known[m]), m))))
    return True
