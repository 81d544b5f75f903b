"""One entry point for every task file format: native task.yaml, OSWorld/WAA JSON, MCPWorld config.json,
Toolathlon task_config.json. Each format registers itself (mcpworld/tasks/formats.py); this module
finds task files and hands each to the one format that recognises it."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

from mcpworld.core.errors import TaskFileError
from mcpworld.core.task import Task, read_json
from mcpworld.tasks import mcpworld_format, native, osworld, toolathlon  # noqa: F401  (each registers its format)
from mcpworld.tasks.formats import TaskFormat, all_formats
from mcpworld.tasks.settings import LoaderSettings

TASK_FILE_NAMES = ("task_config.json", "config.json", "task.yaml")  # what a task folder names its task file
DEFAULTS = LoaderSettings()


def load_task_file(path: Path, root: Path | None = None, settings: LoaderSettings = DEFAULTS) -> Task:
    """``path``: a task file, or a task folder holding one (Toolathlon's and MCPWorld's tasks are folders);
    ``root``: the suite folder it was found under (native ids are relative to it)."""
    path = Path(path)
    if path.is_dir():
        inside = [path / name for name in TASK_FILE_NAMES if (path / name).is_file()]
        if not inside:
            raise TaskFileError(f"{path}: a folder without a task file ({', '.join(TASK_FILE_NAMES)})")
        path = inside[0]
    if not path.is_file():
        raise TaskFileError(f"{path}: no such task file")
    data = read_json(path) if path.suffix == ".json" else None
    return format_of(path, data).load(path, data, settings, root)


def format_of(path: Path, data: Any) -> TaskFormat:
    """The one registered format that recognises the file; else an error naming every format."""
    claimed = [f for f in all_formats().values() if f.detect(path, data)]
    if not claimed:
        raise TaskFileError(
            f"{path}: not a task file of a known format; known formats: "
            + "; ".join(f.describe() for f in all_formats().values())
        )
    if len(claimed) > 1:
        raise TaskFileError(
            f"{path}: a task file of more than one format ({', '.join(f.name for f in claimed)}); "
            "keep the keys of one format only"
        )
    return claimed[0]


def find_task_files(root: Path) -> list[Path]:
    """The files under ``root`` a registered format recognises (context data JSON is left alone)."""
    found = []
    for path in root.rglob("*"):
        candidates = [f for f in all_formats().values() if fnmatch.fnmatchcase(path.name, f.pattern)]
        if not candidates or not path.is_file():
            continue
        data = None
        if path.suffix == ".json":
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                if looks_like_task(path):  # a broken task file is an error, not a silently missing task
                    raise TaskFileError(
                        f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column "
                        f"{exc.colno}; fix the file or move it out of the task folder"
                    ) from None
                continue
            except (UnicodeDecodeError, OSError):
                continue
        if any(f.detect(path, data) for f in candidates):
            found.append(path)
    return sorted(found)


def looks_like_task(path: Path) -> bool:
    """A JSON file named as MCPWorld/Toolathlon tasks are, or whose text has OSWorld's task keys
    (context data JSON that happens to be broken is not ours to judge)."""
    if path.name in ("config.json", "task_config.json"):
        return True
    text = path.read_text(encoding="utf-8", errors="replace")
    return all(f'"{key}"' in text for key in ("id", "instruction", "evaluator"))
