"""Loader for OSWorld / Windows-Agent-Arena task JSON (``id``, ``instruction``, ``config``, ``evaluator``).

WAA's paths in the Windows account's home (``C:\\Users\\Docker\\Downloads``) become the Linux home's
(tasks/windows_paths.py). Setup steps map onto ours: ``download`` of a URL becomes our ``download`` step (fetched through the
file cache, mcpworld/downloads.py), of a local file, and ``upload_file``, a copy into the home.
A task that needs what this machine cannot give (Windows, a Google account, a step we lack) loads
with a ``skip_reason`` naming it, so a run says so and skips it instead of failing the agent.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from mcpworld.core.errors import TaskFileError
from mcpworld.core.shell_words import programs
from mcpworld.core.steps import REQUIRED, as_bool, parse_steps, unreplayable
from mcpworld.core.task import Task, read_json
from mcpworld.core.task_parts import parse_evaluator
from mcpworld.tasks.formats import task_format
from mcpworld.tasks.settings import LoaderSettings
from mcpworld.tasks.windows_paths import map_paths, map_text

# What only a Google account gives (OSWorld's Drive tasks log into one with its own credentials).
ACCOUNT_STEPS = {
    "googledrive": "a Google Drive account (OSWorld's googledrive setup step logs into one)",
    "login": "a website account (OSWorld's login setup step)",
}
ACCOUNT_GETTERS = {"googledrive_file": "a Google Drive account (the googledrive_file getter reads the agent's Drive)"}
# Windows Agent Arena's tasks for Windows' own programs, and its Windows-only setup steps.
WINDOWS_APPS = {"file_explorer", "msedge", "edge", "settings", "clock", "windows_calc", "microsoft_paint", "notepad"}
WINDOWS_STEPS = {"create_folder", "recycle_file", "update_browse_history_edge"}
# Windows' own commands, run by a step or a grader (taskkill /IM chrome.exe /F, cmd /c …)
WINDOWS_COMMANDS = {
    "taskkill",
    "tasklist",
    "cmd",
    "cmd.exe",
    "powershell",
    "powershell.exe",
    "pwsh",
    "Stop-Process",
    "Start-Process",
    "reg",
    "findstr",
    "fsutil",
    "wmic",
    "explorer.exe",
}
# A Windows path (C:\Users\…, %USERPROFILE%) or a Windows shell anywhere in the task's steps or evaluator.
WINDOWS_TEXT = re.compile(r"(?<![\w\\])[A-Z]:[\\/]\w|%(?:USERPROFILE|APPDATA|LOCALAPPDATA|HOMEPATH)%|\b(?i:powershell)\b")
# What OSWorld's Ubuntu VM runs and our desktop (Xvfb + openbox, no init system) does not. The
# GNOME desktop schemas are here (gsettings with dconf works), GNOME Shell's own are not.
DESKTOP_NEEDS = (
    (re.compile(r"\borg\.gnome\.shell\b"), "GNOME Shell (it reads or sets the org.gnome.shell settings)"),
    (
        re.compile(r"\b(?:timedatectl|hostnamectl|localectl|loginctl|systemctl)\b"),
        "systemd as the init system (its commands talk to systemd's services)",
    ),
)


# how the suites spell our catalog's apps in related_apps ("libreoffice calc", WAA's "libreoffice-calc")
APP_SPELLINGS = {
    "vs_code": "vscode",
    "calc": "libreoffice_calc",
    "writer": "libreoffice_writer",
    "impress": "libreoffice_impress",
}


def app_name(name: str) -> str:
    """The catalog app a suite's related_apps entry names (its own spelling when it names none)."""
    spelled = re.sub(r"[\s-]+", "_", name.strip().lower())
    return APP_SPELLINGS.get(spelled, spelled)


def is_osworld_task(data: Any) -> bool:
    return isinstance(data, dict) and "instruction" in data and "evaluator" in data and "app" not in data


def _local_source(url: str, task_dir: Path) -> Path | None:
    parsed = urlparse(url)
    if parsed.scheme in ("http", "https", "ftp"):
        return None
    path = Path(parsed.path if parsed.scheme == "file" else url)
    return path if path.is_absolute() else task_dir / path


def needs_windows(data: dict[str, Any]) -> str | None:
    """Why a (WAA) task can only run on Windows: a Windows program, step, path or shell; else None."""
    apps = [str(a) for a in data.get("related_apps") or []] + [str(data.get("snapshot") or "")]
    windows_apps = sorted({a for a in apps if a in WINDOWS_APPS})
    if windows_apps:
        return f"needs Windows: it works {', '.join(windows_apps)}, a Windows program"
    for part, steps in (
        ("setup", data.get("config") or []),
        ("postconfig", (data.get("evaluator") or {}).get("postconfig") or []),
    ):
        for step in steps:
            if isinstance(step, dict) and step.get("type") in WINDOWS_STEPS:
                return f"needs Windows: its {part} step {step['type']!r} is Windows Agent Arena's, for Windows"
    for part, value in (("setup", data.get("config")), ("evaluator", data.get("evaluator"))):
        found = next((text for text in _strings(value) if WINDOWS_TEXT.search(text)), None)
        if found:
            return f"needs Windows: its {part} names a Windows path or shell ({found[:70]!r})"
    for part, command, shell in _commands(data):
        windows = next((name for name in programs(command, shell) if name in WINDOWS_COMMANDS), None)
        if windows:
            return f"needs Windows: its {part} runs {windows}, a Windows command"
    return None


def _commands(data: dict[str, Any]) -> Any:
    """(part, command, shell) of each command in a task file's steps and command getters."""
    evaluator = data.get("evaluator") or {}
    for part, steps in (("setup", data.get("config") or []), ("postconfig", evaluator.get("postconfig") or [])):
        for step in steps:
            params = step.get("parameters") or {} if isinstance(step, dict) else {}
            if isinstance(params, dict) and isinstance(params.get("command"), (str, list)):
                yield part, params["command"], as_bool(params.get("shell", False))
    for key in ("result", "expected"):
        value = evaluator.get(key)
        for getter in value if isinstance(value, list) else [value]:
            if isinstance(getter, dict) and isinstance(getter.get("command"), (str, list)):
                yield "evaluator", getter["command"], isinstance(getter["command"], str)


def needs_desktop(data: dict[str, Any]) -> str | None:
    """Why a task needs more of a desktop than ours runs (GNOME Shell, systemd); else None.

    Without them the task's setup and its evaluator's command fail whatever the agent does, so a
    run would blame the agent for the machine."""
    for part, value in (("setup", data.get("config")), ("evaluator", data.get("evaluator"))):
        for text in _strings(value):
            for pattern, what in DESKTOP_NEEDS:
                if pattern.search(text):
                    return f"needs {what}, which mcpworld's desktop does not run (its {part}: {text[:70]!r})"
    return None


def _strings(value: Any) -> Any:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _map_steps(steps: list[Any], task_dir: Path, where: str) -> tuple[list[dict[str, Any]], str | None]:
    """(our steps, skip reason or None)."""
    out: list[dict[str, Any]] = []
    part = "postconfig" if where.endswith("(postconfig)") else "setup"
    for step in steps:
        if not isinstance(step, dict) or "type" not in step:
            raise TaskFileError(f"{where}: each config step needs 'type' and 'parameters', got {step!r}")
        kind, params = step["type"], dict(step.get("parameters") or {})
        if kind in ACCOUNT_STEPS:
            return out, f"needs {ACCOUNT_STEPS[kind]}, which mcpworld does not have"
        if kind in ("download", "upload_file"):
            for item in params.get("files") or []:
                source = item.get("url") or item.get("local_path") or ""
                if not source or not item.get("path"):
                    raise TaskFileError(
                        f"{where}: each file of a {kind} step needs 'url' (or 'local_path') and 'path', got {item!r}"
                    )
                local = _local_source(source, task_dir)
                if local is None:
                    out.append({"download": {"url": source, "dest": item["path"]}})
                else:
                    out.append({"copy": {"src": str(local), "dest": item["path"]}})
        elif kind in REQUIRED:
            why = unreplayable(kind, params)
            if why:
                return out, f"its {part} {kind} step: {why}"
            out.append({"type": kind, "parameters": params})
        else:
            return out, (
                f"its {part} step {kind!r} is one mcpworld does not have "
                f"(it has {', '.join(sorted(REQUIRED))}, download, upload_file)"
            )
    return out, None


def _getter_types(spec: dict[str, Any]) -> set[str]:
    types = set()
    for key in ("result", "expected"):
        value = spec.get(key)
        for cfg in value if isinstance(value, list) else [value]:
            if isinstance(cfg, dict) and "type" in cfg:
                types.add(str(cfg["type"]))
    return types


def load_osworld(path: Path, data: dict[str, Any] | None = None, windows_home: bool = True, vm_kind: str | None = None) -> Task:
    """``windows_home``: WAA's paths in the Windows account's home become the Linux home's
    (tasks/windows_paths.py); off where the task runs on Windows itself. ``vm_kind``: the suite's own
    VM runs the task (env=vm): Windows (waa) or GNOME and systemd (osworld) are there."""
    path = Path(path)
    where = str(path)
    if data is None:
        data = read_json(path)
    for key in ("id", "instruction", "evaluator"):
        if not data.get(key):
            raise TaskFileError(f"{where}: missing required key '{key}'")
    if not isinstance(data["evaluator"], dict):
        raise TaskFileError(f"{where}: 'evaluator' must be an object")
    if windows_home:
        data = dict(
            data,
            config=map_paths(data.get("config")),
            evaluator=map_paths(data["evaluator"]),
            instruction=map_text(str(data["instruction"])),
        )
    setup, skip = _map_steps(list(data.get("config") or []), path.parent, where)
    evaluator = dict(data["evaluator"])
    post, post_skip = _map_steps(list(evaluator.get("postconfig") or []), path.parent, where + " (postconfig)")
    evaluator["postconfig"] = post
    account = sorted(ACCOUNT_GETTERS[g] for g in _getter_types(evaluator) & set(ACCOUNT_GETTERS))
    platform_skip = None if vm_kind == "waa" else needs_windows(data) if vm_kind else needs_windows(data) or needs_desktop(data)
    skip = platform_skip or skip or post_skip or (f"needs {account[0]}, which mcpworld does not have" if account else None)
    apps = data.get("related_apps") or []
    app = app_name(str(apps[0] if apps else data.get("snapshot") or "os"))
    # as the suite wrote it: /home/user exists on the desktops (a view of the episode's home: env/local/mountns.py);
    # a desktop without it shows the agent ~ in its place (tasks/instructions.py)
    return Task(
        id=str(data["id"]),
        app=app,
        instruction=str(data["instruction"]),
        dir=path.parent,
        source=path,
        setup=parse_steps(setup, where),
        evaluator=parse_evaluator(evaluator, where),
        format="osworld",
        skip_reason=skip,
        tags=[str(data.get("snapshot", ""))] if data.get("snapshot") else [],
    )


@task_format(
    "osworld",
    pattern="*.json",
    needs="an OSWorld/WAA .json with 'id', 'instruction' and 'evaluator'",
    detect=lambda path, data: is_osworld_task(data),
)
def _load_file(path: Path, data: Any, settings: LoaderSettings, root: Path | None) -> Task:
    return load_osworld(path, data, windows_home=settings.windows_home, vm_kind=settings.vm_kind)
