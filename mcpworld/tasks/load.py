"""One entry point for every task file format: native task.yaml, OSWorld/WAA JSON, MCPWorld config.json,
Toolathlon task_config.json."""

from __future__ import annotations

import json
from pathlib import Path

from mcpworld.core.errors import TaskFileError
from mcpworld.core.task import Task, read_json
from mcpworld.tasks.mcpworld_format import is_mcpworld_task, load_mcpworld
from mcpworld.tasks.native import load_task
from mcpworld.tasks.osworld import is_osworld_task, load_osworld
from mcpworld.tasks.toolathlon import is_toolathlon_config, load_toolathlon

TASK_FILE_NAMES = ("task_config.json", "config.json", "task.yaml")  # what a task folder names its task file


def load_task_file(path: Path, root: Path | None = None) -> Task:
    """``path``: a task file, or a task folder holding one (Toolathlon's and MCPWorld's tasks are folders)."""
    path = Path(path)
    if path.is_dir():
        inside = [path / name for name in TASK_FILE_NAMES if (path / name).is_file()]
        if not inside:
            raise TaskFileError(f"{path}: a folder without a task file ({', '.join(TASK_FILE_NAMES)})")
        path = inside[0]
    if not path.is_file():
        raise TaskFileError(f"{path}: no such task file")
    if path.suffix in (".yaml", ".yml"):
        return load_task(path, root)
    if path.suffix == ".json":
        data = read_json(path)
        if is_osworld_task(data):
            return load_osworld(path, data)
        if is_mcpworld_task(data):
            return load_mcpworld(path, data)
        if path.name == "task_config.json" and is_toolathlon_config(data):
            return load_toolathlon(path, data)
        raise TaskFileError(f"{path}: not a task file (an OSWorld/WAA task needs 'id', 'instruction' and "
                            f"'evaluator'; an MCPWorld config.json needs 'instruction_template'; a Toolathlon "
                            f"task_config.json needs 'needed_mcp_servers')")
    raise TaskFileError(f"{path}: unknown task file type (expected task.yaml or an OSWorld/WAA .json)")


def find_task_files(root: Path) -> list[Path]:
    """task.yaml files, and JSON files that are OSWorld/WAA tasks (context data JSON is left alone)."""
    found = list(root.rglob("task.yaml"))
    for path in root.rglob("*.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if is_osworld_task(data) or (path.name == "config.json" and is_mcpworld_task(data)) \
                    or (path.name == "task_config.json" and is_toolathlon_config(data)):
                found.append(path)
        except json.JSONDecodeError as exc:
            if looks_like_task(path):  # a broken task file is an error, not a silently missing task
                raise TaskFileError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}; "
                                    "fix the file or move it out of the task folder") from None
            continue
        except (UnicodeDecodeError, OSError):
            continue
    return sorted(found)


def looks_like_task(path: Path) -> bool:
    """A JSON file named as MCPWorld/Toolathlon tasks are, or whose text has OSWorld's task keys
    (context data JSON that happens to be broken is not ours to judge)."""
    if path.name in ("config.json", "task_config.json"):
        return True
    text = path.read_text(encoding="utf-8", errors="replace")
    return all(f'"{key}"' in text for key in ("id", "instruction", "evaluator"))
