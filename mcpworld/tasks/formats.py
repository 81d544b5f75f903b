"""The registry of task file formats: format name → how to recognise a file of it and how to load one.

Each loader module registers its format with :func:`task_format` on its loader;
:mod:`mcpworld.tasks.load` imports every loader module (so the registry is full) and dispatches on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpworld.core.registry import load_group
from mcpworld.core.task import Task
from mcpworld.tasks.settings import LoaderSettings

# (the task file, its parsed JSON or None for a file that is not .json) → whether it is of the format
Detector = Callable[[Path, Any], bool]
# (the task file, its parsed JSON or None, the loaders' settings, the suite root or None) → the task
Loader = Callable[[Path, Any, LoaderSettings, "Path | None"], Task]


@dataclass(frozen=True)
class TaskFormat:
    name: str
    detect: Detector
    load: Loader
    pattern: str  # the file names discovery under a root considers (a glob: "task.yaml", "*.json")
    needs: str  # what a file of the format holds, for the error that names every format

    def describe(self) -> str:
        return f"{self.name} ({self.needs})"


FORMATS: dict[str, TaskFormat] = {}
GROUP = "mcpworld.task_formats"  # the entry-point group another package's loader modules are named in
_outside_loaded = False


def all_formats() -> dict[str, TaskFormat]:
    """Every format: the built-ins and those of other installed packages, whose loader modules (named in
    the entry-point group ``mcpworld.task_formats``) register themselves with ``task_format`` when imported."""
    global _outside_loaded
    if not _outside_loaded:
        _outside_loaded = True
        load_group("task format", GROUP)
    return FORMATS


def task_format(name: str, *, detect: Detector, pattern: str, needs: str) -> Callable[[Loader], Loader]:
    """Register the decorated loader as the format ``name``."""

    def register(load: Loader) -> Loader:
        if name in FORMATS:
            raise ValueError(f"task format {name!r} is registered twice")
        FORMATS[name] = TaskFormat(name, detect, load, pattern, needs)
        return load

    return register
