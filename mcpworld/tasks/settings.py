"""What finding, loading and choosing tasks take from a run config: small frozen values, built from
the config in one place (:meth:`TaskSettings.of`) and passed down to the loaders explicitly.

A run (``python -m mcpworld``), a prefetch (``python -m mcpworld.cli.prefetch``) and the grading CLI
(``python -m mcpworld.evaluation``) build them; nothing is kept in module state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpworld.core.errors import TaskFileError
from mcpworld.core.paths import BUILTIN_TASKS


@dataclass(frozen=True)
class ToolathlonSettings:
    """``toolathlon.*``: how Toolathlon task folders run (mcpworld/tasks/toolathlon.py)."""

    root: Path | None = None  # a Toolathlon checkout; None: the nearest ancestor of the task folder with utils/
    python: str | None = None  # the graders' interpreter; None: see toolathlon.grader_python
    lang: str = "en"  # en | cn: the *_cn variants (task_cn.md, initial_workspace_cn, main_cn.py …)
    claim_done: bool = True  # upstream grades only an agent that ended by claiming done; else it fails

    def __post_init__(self) -> None:
        if self.lang not in ("en", "cn"):
            raise TaskFileError(f"toolathlon.lang={self.lang}: use en or cn")


@dataclass(frozen=True)
class PcCanarySettings:
    """``pccanary.*``: where MCPWorld/PC-Canary task folders resolve their authors' paths."""

    root: Path | None = None  # a PC-Canary checkout; None: the task folder's nearest ancestor with tests/tasks

    def __post_init__(self) -> None:
        if self.root is not None and not self.root.is_dir():
            raise TaskFileError(f"pccanary.root={self.root}: no such folder; give the PC-Canary checkout the tasks come from")


@dataclass(frozen=True)
class LoaderSettings:
    """What the loaders of imported suites need (each loader reads its own part)."""

    toolathlon: ToolathlonSettings = field(default_factory=ToolathlonSettings)
    pccanary: PcCanarySettings = field(default_factory=PcCanarySettings)
    # WAA's C:\Users\Docker\{Desktop,Downloads,…} become the episode home's folders, as OSWorld's
    # /home/user does; off where the task runs on its own Windows (env=vm)
    windows_home: bool = True
    # env=vm: the suite's own machine (osworld: GNOME's Ubuntu; waa: Windows) runs the task, so what only
    # our desktop lacks (Windows, GNOME Shell, systemd) is no reason to skip it
    vm_kind: str | None = None


@dataclass(frozen=True)
class TaskSelection:
    """Which tasks: those under ``root`` of one of ``apps`` (all when empty), whose id matches one of
    ``patterns`` (fnmatch; all when empty), with none of ``exclude_tags``."""

    root: Path = BUILTIN_TASKS
    apps: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    exclude_tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskSettings:
    selection: TaskSelection = field(default_factory=TaskSelection)
    loaders: LoaderSettings = field(default_factory=LoaderSettings)

    @classmethod
    def of(cls, cfg: Any) -> TaskSettings:
        """The task part of a run config: ``tasks.root``, ``tasks.exclude_tags``, ``app.apps``, ``task``,
        ``toolathlon.*``, ``pccanary.*`` and ``env.backend`` (the one place that reads them)."""
        root = Path(cfg.tasks.root).expanduser().resolve() if cfg.tasks.root else BUILTIN_TASKS
        selection = TaskSelection(
            root=root,
            apps=tuple(str(a) for a in cfg.app.apps),
            patterns=tuple(as_patterns(cfg.task)),
            exclude_tags=tuple(str(t) for t in cfg.tasks.exclude_tags),
        )
        tl = cfg.toolathlon
        toolathlon = ToolathlonSettings(
            root=as_path(tl.root),
            python=str(tl.python) if tl.python else None,
            lang=str(tl.lang or "en"),
            claim_done=bool(tl.claim_done),
        )
        pccanary = PcCanarySettings(root=as_path(cfg.pccanary.root))
        on_vm = str(cfg.env.backend) == "vm"
        return cls(
            selection,
            LoaderSettings(
                toolathlon=toolathlon, pccanary=pccanary, windows_home=not on_vm, vm_kind=str(cfg.env.vm.kind) if on_vm else None
            ),
        )


def as_path(value: Any) -> Path | None:
    """A path setting as given (``~`` expanded), or None when unset."""
    return Path(str(value)).expanduser() if value else None


def as_patterns(task: Any) -> list[str]:
    """``task=``: one id or glob, several separated by commas, or a list of them; nothing: all."""
    if task is None or task == "":
        return []
    if isinstance(task, str):
        return [p.strip() for p in task.split(",") if p.strip()]
    return [str(p) for p in task]
