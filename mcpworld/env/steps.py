"""OSWorld/WAA-style setup and postconfig steps, run against an environment's step host.

A step is ``{"type": T, "parameters": {...}}`` (OSWorld) or the shorthand ``{T: {...}}``.
"""

from __future__ import annotations

import logging
import re
import shlex
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from mcpworld.core.actions import Action
from mcpworld.core.errors import InfraError, TaskFileError
from mcpworld.core.pyautogui_script import Pause, Raises, parse, script_of
from mcpworld.core.steps import as_bool, command_text, fill_screen, normalize_step
from mcpworld.core.sudo import SudoItem, satisfied_here, sudo_items, without_satisfied

log = logging.getLogger(__name__)


class StepHost(Protocol):
    def launch(self, command: list[str] | str, shell: bool, window: str | None, timeout_s: float) -> None: ...
    def execute(
        self, command: list[str] | str, shell: bool, timeout_s: float, env: dict[str, str] | None = None, task_code: bool = False
    ) -> None: ...
    def open_path(self, path: str, app: str | None, window: str | None, timeout_s: float) -> None: ...
    def activate_window(self, pattern: str, timeout_s: float, strict: bool = False, by_class: bool = False) -> None: ...
    def close_window(
        self, pattern: str, timeout_s: float, strict: bool = False, by_class: bool = False, wait: bool = False
    ) -> None: ...
    def copy_in(self, src: str, dest: str) -> None: ...
    def act(self, action: Action) -> None: ...


def _launch(host: StepHost, p: dict) -> None:
    host.launch(p["command"], as_bool(p.get("shell", False)), p.get("window"), float(p.get("timeout", 20)))


def _execute(host: StepHost, p: dict) -> None:
    """OSWorld's execute/command step: ``command`` (argv, or a line with ``shell``); ``stdout`` and
    ``stderr`` name files in the task's cache that get the command's output (a ``cache_file`` getter
    reads them later); ``until`` ({returncode, stdout, stderr}: any one met) runs it again until
    its result says so, within ``timeout`` seconds. A pyautogui one-liner is replayed as input."""
    command = fill_screen(p["command"], getattr(host, "width", 1000), getattr(host, "height", 1000))
    source = script_of(command)
    if source is not None:
        _replay(host, source)
        return
    shell = as_bool(p.get("shell", False))
    rewritten = _without_satisfied_sudo(host, command, shell)
    if rewritten is None:
        log.info("a setup command only asked sudo for what the desktop has: %s", command_text(command)[:200])
        return
    command, shell = rewritten
    timeout = float(p.get("timeout", 60))
    outputs = {stream: str(p[stream]) for stream in ("stdout", "stderr") if p.get(stream)}
    until = p.get("until") or {}
    env = {str(k): str(v) for k, v in (p.get("env") or {}).items()}  # this command's own variables
    if not outputs and not until:
        if as_bool(p.get("preprocess", False)):  # the task's own preprocess: its folder in view
            host.execute(command, shell, timeout, env=env or None, task_code=True)
        elif env:
            host.execute(command, shell, timeout, env=env)
        else:
            host.execute(command, shell, timeout)
        return
    if env:
        raise TaskFileError("an execute step's env cannot go with stdout/stderr/until")
    _run_captured(host, command, shell, timeout, outputs, until)


def _replay(host: StepHost, source: str) -> None:
    for step in parse(source):  # OSWorld's pyautogui one-liners, replayed as input actions
        if isinstance(step, Pause):
            time.sleep(step.seconds)
        elif isinstance(step, Raises):  # the script ends here on the VM too; the task goes on
            log.warning("an execute step's pyautogui script stops early: %s", step.why)
            return
        else:
            host.act(step)


def _without_satisfied_sudo(host: StepHost, command: list[str] | str, shell: bool) -> tuple[list[str] | str, bool] | None:
    """The command with each sudo item the desktop already satisfies (core/sudo.py) replaced by
    ``true``, as a shell line; unchanged when it has none; None when nothing else is left to run."""
    text = command_text(command)
    if "sudo" not in text:
        return command, shell
    if not sudo_items(text):
        return command, shell
    rewritten = without_satisfied(text, lambda item: _satisfied_on(host, item))
    if rewritten == text:
        return command, shell
    if not re.sub(r"\btrue\b|&&|\|\||[;\s]", "", rewritten):
        return None
    return rewritten, True


def _satisfied_on(host: StepHost, item: SudoItem) -> bool:
    """Checked on the desktop itself (its packages, its python3), else on this host."""
    script = item.check_script()
    if script is None:
        return item.given
    shell = getattr(host, "shell", None)
    if shell is None:
        return satisfied_here(item)
    return bool(shell(script, timeout=60).returncode == 0)


def _shell_line(host: StepHost, command: list[str] | str, shell: bool) -> str:
    """The command as one bash line, with its paths mapped as ``execute`` maps them."""
    map_paths = getattr(host, "map_paths", lambda text: text)
    if shell:
        return str(map_paths(command_text(command)))
    argv = shlex.split(command) if isinstance(command, str) else [str(c) for c in command]
    resolve = getattr(host, "resolve", None)
    return shlex.join(str(resolve(a)) if resolve and a.startswith("~") else str(map_paths(a)) for a in argv)


CAPTURE_LIMIT = 64 * 1024 * 1024  # a listing such as `apt list --installed` is kept whole


def _run_captured(
    host: StepHost, command: list[str] | str, shell: bool, timeout: float, outputs: dict[str, str], until: dict[str, Any]
) -> None:
    run = getattr(host, "shell", None)
    if run is None:
        raise InfraError("this desktop cannot return a setup command's output (stdout/stderr/until)")
    line = _shell_line(host, command, shell)
    deadline = time.monotonic() + timeout
    while True:
        result = run(line, timeout=max(1.0, deadline - time.monotonic()), max_output=CAPTURE_LIMIT)
        if result.timed_out:
            raise InfraError(f"setup command {command_text(command)[:200]!r} did not finish within {timeout:.0f}s")
        for stream, name in outputs.items():  # what OSWorld writes into its cache dir, whatever the exit
            _cache_file(host, name).write_text(result.stdout if stream == "stdout" else result.stderr, encoding="utf-8")
        if not until or _met(until, result):
            if result.returncode != 0 and not until:
                log.info("setup command %s exited %s (its output is kept)", command_text(command)[:200], result.returncode)
            return
        if time.monotonic() >= deadline:
            raise InfraError(
                f"setup command {command_text(command)[:200]!r} never gave what its until asks "
                f"({until}) within {timeout:.0f}s; it last exited {result.returncode}"
            )
        time.sleep(0.3)  # OSWorld's pace between tries


def _met(until: dict[str, Any], result: Any) -> bool:
    return (
        ("returncode" in until and result.returncode == int(until["returncode"]))
        or ("stdout" in until and str(until["stdout"]) in result.stdout)
        or ("stderr" in until and str(until["stderr"]) in result.stderr)
    )


def _cache_file(host: StepHost, name: str) -> Path:
    cache = getattr(host, "cache_dir", None)
    if cache is None:
        raise InfraError("this desktop has no task cache to keep a setup command's output in")
    target = (Path(cache) / name).resolve()
    if not target.is_relative_to(Path(cache).resolve()):
        raise TaskFileError(f"a setup step's stdout/stderr {name!r} must be a file name in the task's cache")
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def _open(host: StepHost, p: dict) -> None:
    host.open_path(p["path"], p.get("app"), p.get("window"), float(p.get("timeout", 20)))


def _sleep(host: StepHost, p: dict) -> None:
    time.sleep(float(p.get("seconds", 1)))


def _window_options(p: dict) -> dict[str, bool]:
    """OSWorld's ``strict`` (the whole title, wmctrl -F) and ``by_class`` (WM_CLASS, wmctrl -x), when set."""
    return {k: True for k in ("strict", "by_class") if as_bool(p.get(k, False))}


def _activate(host: StepHost, p: dict) -> None:
    host.activate_window(p["window_name"], float(p.get("timeout", 5)), **_window_options(p))


def _close(host: StepHost, p: dict) -> None:
    """mcpworld's ``wait: true`` (not OSWorld's) also waits, within ``timeout``, for the window's app to
    exit: an app writes what it holds back (Chromium's Preferences and Bookmarks, Thunderbird's
    prefs.js) when it quits, so a postconfig can read the files at once instead of sleeping."""
    wait = {"wait": True} if as_bool(p.get("wait", False)) else {}
    host.close_window(p["window_name"], float(p.get("timeout", 5)), **_window_options(p), **wait)


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


def run_steps(host: StepHost, steps: Sequence[object], where: str = "task") -> None:
    for step in steps:
        kind, params = normalize_step(step, where)
        fn = STEPS.get(kind)
        if fn is None:
            raise TaskFileError(f"{where}: unknown step type {kind!r}; known: {', '.join(sorted(STEPS))}")
        fn(host, params)
