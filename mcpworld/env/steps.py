"""OSWorld/WAA-style setup and postconfig steps, run against an environment's step host.

A step is ``{"type": T, "parameters": {...}}`` (OSWorld) or the shorthand ``{T: {...}}``.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Protocol

from mcpworld.core.actions import Action
from mcpworld.core.errors import InfraError, TaskFileError
from mcpworld.core.pyautogui_script import Pause, Raises, parse, script_of
from mcpworld.core.steps import fill_screen, normalize_step

log = logging.getLogger(__name__)


class StepHost(Protocol):
    def launch(self, command: list[str] | str, shell: bool, window: str | None, timeout_s: float) -> None: ...
    def execute(self, command: list[str] | str, shell: bool, timeout_s: float) -> None: ...
    def open_path(self, path: str, app: str | None, window: str | None, timeout_s: float) -> None: ...
    def activate_window(self, pattern: str, timeout_s: float) -> None: ...
    def close_window(self, pattern: str, timeout_s: float) -> None: ...
    def copy_in(self, src: str, dest: str) -> None: ...
    def act(self, action: Action) -> None: ...


def _launch(host: StepHost, p: dict) -> None:
    host.launch(p["command"], bool(p.get("shell", False)), p.get("window"), float(p.get("timeout", 20)))


def _execute(host: StepHost, p: dict) -> None:
    p = dict(p, command=fill_screen(p["command"], getattr(host, "width", 1000), getattr(host, "height", 1000)))
    source = script_of(p["command"])
    if source is None:
        host.execute(p["command"], bool(p.get("shell", False)), float(p.get("timeout", 60)))
        return
    for step in parse(source):  # OSWorld's pyautogui one-liners, replayed as input actions
        if isinstance(step, Pause):
            time.sleep(step.seconds)
        elif isinstance(step, Raises):  # the script ends here on the VM too; the task goes on
            log.warning("an execute step's pyautogui script stops early: %s", step.why)
            return
        else:
            host.act(step)


def _open(host: StepHost, p: dict) -> None:
    host.open_path(p["path"], p.get("app"), p.get("window"), float(p.get("timeout", 20)))


def _sleep(host: StepHost, p: dict) -> None:
    time.sleep(float(p.get("seconds", 1)))


def _activate(host: StepHost, p: dict) -> None:
    host.activate_window(p["window_name"], float(p.get("timeout", 5)))


def _close(host: StepHost, p: dict) -> None:
    host.close_window(p["window_name"], float(p.get("timeout", 5)))


def _copy(host: StepHost, p: dict) -> None:
    host.copy_in(str(p["src"]), str(p["dest"]))


def _download(host: StepHost, p: dict) -> None:
    """A file named by URL, through the default file cache. A run localizes these steps into copies
    before the episode (mcpworld/tasks/remote_files.py, honouring files.mirror/rewrite); this is the
    path for a step that reaches the desktop unlocalized. A host that cannot serve it is the
    environment's failure, never the agent's."""
    from mcpworld.core.downloads import DownloadError, FileCache

    try:
        local = FileCache().fetch(str(p["url"]))
    except DownloadError as exc:
        raise InfraError(str(exc)) from None
    host.copy_in(str(local), str(p["dest"]))


def _cdp_port(host: StepHost) -> int | None:
    return (getattr(host, "ports", None) or {}).get("cdp")


def _chrome_open_tabs(host: StepHost, p: dict) -> None:
    from mcpworld.env.chrome_steps import open_tabs

    open_tabs(_cdp_port(host), [str(u) for u in p["urls_to_open"]])


def _chrome_close_tabs(host: StepHost, p: dict) -> None:
    from mcpworld.env.chrome_steps import close_tabs

    close_tabs(_cdp_port(host), [str(u) for u in p["urls_to_close"]])


def _update_browse_history(host: StepHost, p: dict) -> None:
    from mcpworld.env.chrome_steps import history_command

    host.execute(history_command(list(p["history"]), "chromium"), False, 90)


STEPS: dict[str, Callable[[StepHost, dict], None]] = {
    "launch": _launch,
    "execute": _execute,
    "command": _execute,
    "open": _open,
    "sleep": _sleep,
    "activate_window": _activate,
    "close_window": _close,
    "copy": _copy,  # a local file into the home (OSWorld download/upload_file of local files)
    "download": _download,  # a file named by URL (OSWorld download steps)
    "chrome_open_tabs": _chrome_open_tabs,  # OSWorld's, over the desktop Chromium's DevTools port
    "chrome_close_tabs": _chrome_close_tabs,
    "update_browse_history": _update_browse_history,
}


def run_steps(host: StepHost, steps: list[Any], where: str = "task") -> None:
    for step in steps:
        kind, params = normalize_step(step, where)
        fn = STEPS.get(kind)
        if fn is None:
            raise TaskFileError(f"{where}: unknown step type {kind!r}; known: {', '.join(sorted(STEPS))}")
        fn(host, params)
