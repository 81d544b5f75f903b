"""Loader for OSWorld / Windows-Agent-Arena task JSON (``id``, ``instruction``, ``config``, ``evaluator``).

Setup steps map onto ours: ``download`` of a URL becomes our ``download`` step (fetched through the
file cache, mcpworld/downloads.py), of a local file, and ``upload_file``, a copy into the home.
A task that needs what this machine cannot give (Google Drive, a step we lack) loads with a
``skip_reason`` so a run says so and skips it instead of failing it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from mcpworld.env.base import HOME_USER
from mcpworld.env.steps import STEPS, unreplayable
from mcpworld.errors import TaskFileError
from mcpworld.tasks.model import Task, read_json

NETWORK_GETTERS = {"url_dashPart", "active_url_from_accessTree", "info_from_website",
                   "page_info", "googledrive_file", "open_tabs_info", "active_tab_info", "active_tab_url_parse"}


def is_osworld_task(data: Any) -> bool:
    return isinstance(data, dict) and "instruction" in data and "evaluator" in data and "app" not in data


def _local_source(url: str, task_dir: Path) -> Path | None:
    parsed = urlparse(url)
    if parsed.scheme in ("http", "https", "ftp"):
        return None
    path = Path(parsed.path if parsed.scheme == "file" else url)
    return path if path.is_absolute() else task_dir / path


def _map_steps(steps: list[Any], task_dir: Path, where: str) -> tuple[list[dict[str, Any]], str | None]:
    """(our steps, skip reason or None)."""
    out: list[dict[str, Any]] = []
    for step in steps:
        if not isinstance(step, dict) or "type" not in step:
            raise TaskFileError(f"{where}: each config step needs 'type' and 'parameters', got {step!r}")
        kind, params = step["type"], dict(step.get("parameters") or {})
        if kind in ("download", "upload_file"):
            for item in params.get("files") or []:
                source = item.get("url") or item.get("local_path") or ""
                if not source or not item.get("path"):
                    raise TaskFileError(f"{where}: each file of a {kind} step needs 'url' (or 'local_path') "
                                        f"and 'path', got {item!r}")
                local = _local_source(source, task_dir)
                if local is None:
                    out.append({"download": {"url": source, "dest": item["path"]}})
                else:
                    out.append({"copy": {"src": str(local), "dest": item["path"]}})
        elif kind in STEPS:
            why = unreplayable(kind, params)
            if why:
                return out, f"{kind} step: {why}"
            out.append({"type": kind, "parameters": params})
        else:
            return out, f"setup step {kind!r} is not supported here"
    return out, None


def _getter_types(spec: dict[str, Any]) -> set[str]:
    types = set()
    for key in ("result", "expected"):
        value = spec.get(key)
        for cfg in value if isinstance(value, list) else [value]:
            if isinstance(cfg, dict) and "type" in cfg:
                types.add(str(cfg["type"]))
    return types


def load_osworld(path: Path, data: dict[str, Any] | None = None) -> Task:
    path = Path(path)
    where = str(path)
    if data is None:
        data = read_json(path)
    for key in ("id", "instruction", "evaluator"):
        if not data.get(key):
            raise TaskFileError(f"{where}: missing required key '{key}'")
    if not isinstance(data["evaluator"], dict):
        raise TaskFileError(f"{where}: 'evaluator' must be an object")
    setup, skip = _map_steps(list(data.get("config") or []), path.parent, where)
    evaluator = dict(data["evaluator"])
    post, post_skip = _map_steps(list(evaluator.get("postconfig") or []), path.parent, where + " (postconfig)")
    evaluator["postconfig"] = post
    skip = skip or post_skip
    network = sorted(_getter_types(evaluator) & NETWORK_GETTERS)
    if not skip and network:
        skip = f"its evaluator reads {', '.join(network)}, which needs the network"
    apps = data.get("related_apps") or []
    app = str(apps[0] if apps else data.get("snapshot") or "os")
    # the episode's home stands in for the VM's /home/user; tell the agent the path it can use
    instruction = HOME_USER.sub("~", str(data["instruction"]))
    return Task(id=str(data["id"]), app=app, instruction=instruction, dir=path.parent, source=path,
                setup=setup, evaluator=evaluator, format="osworld", skip_reason=skip,
                tags=[str(data.get("snapshot", ""))] if data.get("snapshot") else [])
