"""Desktop tests' shared parts: a small task with a context file, and what dead runs left behind."""

from __future__ import annotations

from pathlib import Path

import psutil

from mcpworld.core.task import ContextEntry, Task
from mcpworld.env.local import leftovers
from mcpworld.env.local.display import MARKER


def make_task(tmp_path: Path, setup: list, context_text: str | None = "alpha\n") -> Task:
    """A mousepad task with these setup steps and, unless ``context_text`` is None, ~/docs/notes.txt."""
    ctx = tmp_path / "task" / "context"
    ctx.mkdir(parents=True, exist_ok=True)
    entries = []
    if context_text is not None:
        (ctx / "notes.txt").write_text(context_text)
        entries.append(ContextEntry(ctx / "notes.txt", "~/docs/notes.txt"))
    return Task(
        id="t/test",
        app="mousepad",
        instruction="test",
        dir=tmp_path / "task",
        source=tmp_path / "task" / "task.yaml",
        context=entries,
        setup=setup,
    )


def left_behind() -> list:
    """Desktop folders of dead runs, processes of desktops whose folder is gone, and cgroups of dead runs."""
    from mcpworld.env.local import cgroup

    dirs = [
        w
        for base in leftovers.work_bases()
        for w in base.glob(leftovers.PREFIX + "*")
        if (w / leftovers.OWNER_FILE).exists() and not leftovers.owner_alive(w)
    ]
    procs = [
        p for p in psutil.process_iter() if (marker := _environ(p).get(MARKER, "")).startswith("/") and not Path(marker).exists()
    ]
    parent = cgroup.parent_dir()
    groups = [
        g for g in (parent.iterdir() if parent and parent.is_dir() else []) if g.is_dir() and not cgroup.owner_alive(g.name)
    ]
    return dirs + procs + groups


def _environ(proc: psutil.Process) -> dict[str, str]:
    try:
        return proc.environ()
    except (psutil.Error, OSError):
        return {}
