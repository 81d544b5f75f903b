"""Loader for Toolathlon task folders (``task_config.json`` + ``docs/`` + ``initial_workspace/`` +
``preprocess/main.py`` + ``evaluation/main.py``), mapped onto the one task model.

The agent works in ``~/workspace``: ``initial_workspace/`` is copied there (top-level ``*.tar.gz``
unpacked safely unless a preprocess script owns them), then ``preprocess/main.py --agent_workspace
W --launch_time T`` runs. ``evaluation/main.py`` judges (exit 0 = pass) with the workspace, the
ground truth and the ``traj_log.json`` the episode writes. Graders, ground truth and preprocess
scripts stay in the task folder: nothing of them is copied where the agent works.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from mcpworld.errors import TaskFileError
from mcpworld.tasks.model import ContextEntry, Task, read_json
from mcpworld.tasks.native import normalize_call

WORKSPACE = "~/workspace"
WORKSPACE_TOKENS = ("!!<<<<||||workspace_dir||||>>>>!!", "!!<<<<||||current_working_dir||||>>>>!!")
# local tools we provide; ones we accept without offering (the harness manages the context itself)
LOCAL_TOOLS = {"claim_done", "python_execute", "sleep", "handle_overlong_tool_outputs"}
IGNORED_LOCAL_TOOLS = {"manage_context", "history"}
UNAVAILABLE_LOCAL_TOOLS = {"web_search": "a Serper web-search key", "ai_webpage_summary": "a web summary service"}


def is_toolathlon_config(data: Any) -> bool:
    return isinstance(data, dict) and "needed_mcp_servers" in data


def launch_time() -> str:
    """Toolathlon's format: ``2026-11-22 14:03:00 Sunday``."""
    return time.strftime("%Y-%m-%d %H:%M:%S %A")


def _read(path: Path, where: str, required: bool = True) -> str:
    if not path.is_file():
        if required:
            raise TaskFileError(f"{where}: missing {path.relative_to(path.parents[1])} (the task's instruction)")
        return ""
    return path.read_text(encoding="utf-8").strip()


def load_toolathlon(path: Path, data: dict[str, Any] | None = None) -> Task:
    path = Path(path)
    where = str(path)
    data = read_json(path) if data is None else data
    folder = path.parent
    servers = data.get("needed_mcp_servers") or []
    local = data.get("needed_local_tools") or []
    if not isinstance(servers, list) or not isinstance(local, list):
        raise TaskFileError(f"{where}: 'needed_mcp_servers' and 'needed_local_tools' must be lists of names")
    instruction = _read(folder / "docs" / "task.md", where)
    when = launch_time()
    prompt = _read(folder / "docs" / "agent_system_prompt.md", where, required=False)
    for token in WORKSPACE_TOKENS:
        prompt = prompt.replace(token, "{workspace}")
    prompt = (prompt.replace("!!<<<<||||workspace_dir_rela||||>>>>!!", "workspace")
              .replace("!!<<<<||||time||||>>>>!!", when)
              .replace("!!<<<<||||task_description||||>>>>!!", instruction))

    skip = None
    for name in local:
        if name in UNAVAILABLE_LOCAL_TOOLS:
            skip = f"it needs the local tool {name} ({UNAVAILABLE_LOCAL_TOOLS[name]}), which mcpworld does not provide"
        elif name not in LOCAL_TOOLS | IGNORED_LOCAL_TOOLS:
            skip = skip or f"it needs the unknown local tool {name!r}"

    preprocess = folder / "preprocess" / "main.py"
    initial = folder / "initial_workspace"
    context = [ContextEntry(initial, WORKSPACE, extract_archives=not preprocess.is_file())] if initial.is_dir() else []
    setup: list[dict[str, Any]] = [{"execute": {"command": ["mkdir", "-p", WORKSPACE]}}]
    if preprocess.is_file():
        setup.append({"execute": {"command": [sys.executable, str(preprocess), "--agent_workspace", WORKSPACE,
                                              "--launch_time", when], "timeout": 300}})
    grader = folder / "evaluation" / "main.py"
    if not grader.is_file():
        raise TaskFileError(f"{where}: missing evaluation/main.py (the task's grader)")

    solution: dict[str, list[dict[str, Any]]] = {}
    if (folder / "solution.json").is_file():
        data_solution = read_json(folder / "solution.json")
        if not isinstance(data_solution, dict):
            raise TaskFileError(f"{folder / 'solution.json'}: must be an object like {{\"mcp\": [tool calls]}}")
        calls = data_solution.get("mcp") or []
        steps = [normalize_call(c, str(folder / "solution.json")) for c in calls]
        solution = {"mcp": steps, "hybrid": steps}

    max_turns = data.get("max_turns")
    return Task(
        id=f"toolathlon/{folder.name}", app="toolathlon", instruction=instruction, dir=folder, source=path,
        params={"launch_time": when}, max_steps=int(max_turns) if max_turns else None,
        tags=["toolathlon"], context=context, setup=setup, mcp_servers=[str(s) for s in servers],
        workspace=WORKSPACE, local_tools=[str(t) for t in local if t in LOCAL_TOOLS], system_prompt=prompt,
        grader={"script": str(grader), "groundtruth": str(folder / "groundtruth_workspace"), "launch_time": when},
        solution=solution, format="toolathlon", skip_reason=skip,
    )
