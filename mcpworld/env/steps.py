"""OSWorld/WAA-style setup and postconfig steps, run against an environment's step host.

A step is ``{"type": T, "parameters": {...}}`` (OSWorld) or the shorthand ``{T: {...}}``.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any, Callable, Protocol

from mcpworld.env.base import Action
from mcpworld.env.pyautogui_script import Pause, Raises, Unsupported, parse, script_of
from mcpworld.errors import InfraError, TaskFileError

log = logging.getLogger(__name__)


class StepHost(Protocol):
    def launch(self, command: list[str] | str, shell: bool, window: str | None, timeout_s: float) -> None: ...
    def execute(self, command: list[str] | str, shell: bool, timeout_s: float) -> None: ...
    def open_path(self, path: str, app: str | None, window: str | None, timeout_s: float) -> None: ...
    def activate_window(self, pattern: str, timeout_s: float) -> None: ...
    def close_window(self, pattern: str, timeout_s: float) -> None: ...
    def copy_in(self, src: str, dest: str) -> None: ...
    def act(self, action: Action) -> None: ...


def normalize_step(step: Any, where: str = "task") -> tuple[str, dict[str, Any]]:
    if not isinstance(step, dict) or not step:
        raise TaskFileError(f"{where}: a step must be a mapping like {{launch: {{command: [...]}}}}, got {step!r}")
    if "type" in step:
        return str(step["type"]), dict(step.get("parameters") or {})
    if len(step) != 1:
        raise TaskFileError(f"{where}: step {step!r} must have exactly one key (its type) or 'type'+'parameters'")
    (kind, params), = step.items()
    if isinstance(params, (list, str)):
        params = {"command": params} if kind in ("launch", "execute", "command") else {"path": params} \
            if kind == "open" else {"seconds": params} if kind == "sleep" else {"window_name": params}
    elif isinstance(params, (int, float)) and kind == "sleep":
        params = {"seconds": params}
    return kind, dict(params or {})


def _launch(host: StepHost, p: dict) -> None:
    host.launch(p["command"], bool(p.get("shell", False)), p.get("window"), float(p.get("timeout", 20)))


SCREEN_PLACEHOLDERS = re.compile(r"\{SCREEN_(WIDTH|HEIGHT)(_HALF)?\}")
# the desktop account's password where a desktop grants sudo (env=docker), as on OSWorld's VMs
CLIENT_PASSWORD = "password"


def fill_screen(command: Any, width: int, height: int) -> Any:
    """OSWorld's ``{SCREEN_WIDTH}``/``{SCREEN_HEIGHT}`` (and ``_HALF``) in a command, as its setup
    controller fills them from the screen size (e.g. a click in the middle of the screen), and its
    ``{CLIENT_PASSWORD}`` (``echo {CLIENT_PASSWORD} | sudo -S …``), filled with its VMs' password."""
    def fill(text: str) -> str:
        text = text.replace("{CLIENT_PASSWORD}", CLIENT_PASSWORD)
        return SCREEN_PLACEHOLDERS.sub(
            lambda m: str((width if m.group(1) == "WIDTH" else height) // (2 if m.group(2) else 1)), text)
    return fill(command) if isinstance(command, str) else [fill(str(c)) for c in command]


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


def unreplayable(kind: str, params: dict[str, Any]) -> str | None:
    """Why an execute step's pyautogui script cannot be replayed, or None when it can (or is none)."""
    command = fill_screen(params.get("command", ""), 1000, 1000)  # any size: replayable or not alike
    source = script_of(command) if kind in ("execute", "command") else None
    if source is None:
        return None
    try:
        parse(source)
    except Unsupported as exc:
        return f"its pyautogui script uses {exc}, which mcpworld does not replay"
    return None


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
    from mcpworld.downloads import DownloadError, FileCache

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


REQUIRED = {"launch": ("command",), "execute": ("command",), "command": ("command",), "open": ("path",),
            "activate_window": ("window_name",), "close_window": ("window_name",), "copy": ("src", "dest"),
            "download": ("url", "dest"), "chrome_open_tabs": ("urls_to_open",), "chrome_close_tabs": ("urls_to_close",),
            "update_browse_history": ("history",)}


def validate_steps(steps: list[Any], where: str) -> None:
    for step in steps:
        kind, params = normalize_step(step, where)
        if kind not in STEPS:
            raise TaskFileError(f"{where}: unknown step type {kind!r}; known: {', '.join(sorted(STEPS))}")
        for required in REQUIRED.get(kind, ()):
            if required not in params:
                raise TaskFileError(f"{where}: step {kind!r} needs '{required}'")
        why = unreplayable(kind, params)
        if why:
            raise TaskFileError(f"{where}: step {kind!r}: {why}")


SUDO = re.compile(r"(^|[\s;&|(`])sudo(\s|$)")


def sudo_command(steps: list[Any]) -> str | None:
    """The first step command that calls sudo (OSWorld's ``echo {CLIENT_PASSWORD} | sudo -S …``),
    or None: a desktop on this host never grants root to what a task runs."""
    for step in steps:
        kind, params = normalize_step(step)
        command = params.get("command")
        text = command if isinstance(command, str) else " ".join(str(c) for c in command or [])
        if kind in ("launch", "execute", "command") and (SUDO.search(text) or text.split()[:1] == ["sudo"]):
            return text
    return None


def run_steps(host: StepHost, steps: list[Any], where: str = "task") -> None:
    for step in steps:
        kind, params = normalize_step(step, where)
        fn = STEPS.get(kind)
        if fn is None:
            raise TaskFileError(f"{where}: unknown step type {kind!r}; known: {', '.join(sorted(STEPS))}")
        fn(host, params)
