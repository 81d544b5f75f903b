"""Windows Agent Arena's paths in the Windows account's home, as the paths they stand for on a Linux
desktop: ``C:\\Users\\Docker\\Downloads\\x.xlsx`` is ``/home/user/Downloads/x.xlsx`` (which a desktop
maps onto the episode home, as for OSWorld), VS Code's and LibreOffice's user settings folders under
``AppData\\Roaming`` are where those programs keep them on Linux.

Only folders with a faithful Linux equivalent are mapped; any other Windows path (``AppData\\Local``,
``C:\\Program Files``), a path inside a PowerShell or cmd line, or a Windows program keeps its task
needing Windows (tasks/osworld.py says so).
"""

from __future__ import annotations

import re
from typing import Any

WINDOWS_HOME = re.compile(r"^C:[\\/]Users[\\/]Docker(?=[\\/]|$)", re.IGNORECASE)  # either separator
# the account's folders (Windows, under the home) and where the same thing lives on Linux
FOLDERS = (
    (("appdata", "roaming", "code", "user"), ".config/Code/User"),  # VS Code's settings.json, keybindings.json
    (("appdata", "roaming", "libreoffice", "4", "user"), ".config/libreoffice/4/user"),  # registrymodifications.xcu
    (("desktop",), "Desktop"),
    (("documents",), "Documents"),
    (("downloads",), "Downloads"),
    (("pictures",), "Pictures"),
    (("music",), "Music"),
    (("videos",), "Videos"),
)
# a home path inside prose (the instruction): the separators' parts, stopping at quotes and spaces
IN_TEXT = re.compile(r"C:[\\/]Users[\\/]Docker(?:[\\/][^\\/\s'\"<>|?*]+)*[\\/]?", re.IGNORECASE)


def linux_path(path: str) -> str | None:
    """The ``/home/user/…`` path a Windows home path stands for, or None (not one, or no equivalent)."""
    if not WINDOWS_HOME.match(path):
        return None
    parts = [p for p in re.split(r"[\\/]", path[len("C:\\Users\\Docker") :]) if p]
    if not parts:
        return "/home/user"
    lowered = [p.lower() for p in parts]
    for windows, linux in FOLDERS:
        if tuple(lowered[: len(windows)]) == windows:
            return "/".join(["/home/user", linux, *parts[len(windows) :]])
    return None


def map_paths(value: Any) -> Any:
    """A task's JSON (its config or evaluator) with every string that is a mappable Windows home
    path replaced by its Linux path; everything else as it was."""
    if isinstance(value, str):
        return linux_path(value) or value
    if isinstance(value, dict):
        return {key: map_paths(item) for key, item in value.items()}
    if isinstance(value, list):
        return [map_paths(item) for item in value]
    return value


def map_text(text: str) -> str:
    """Prose (an instruction) with the mappable Windows home paths it names as Linux paths."""
    return IN_TEXT.sub(lambda m: linux_path(m.group(0).rstrip("\\/")) or m.group(0), text)
