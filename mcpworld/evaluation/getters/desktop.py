"""Getters of the desktop session itself: the accessibility tree, screen and window geometry, the
active window's title, the default video player, the wallpaper, what the terminal shows, the
clipboard, and the launchers on ~/Desktop.

Most ask the desktop's X server or shell (xdotool, xdg-mime, gsettings) and raise InfraError when
the environment lacks the tool; a setting that is not there gives None.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shlex
import time
from typing import TYPE_CHECKING, Any

from mcpworld.core.errors import InfraError, UserError
from mcpworld.evaluation.getters.base import cache_target, canonical_home, copy_to_cache, read_or_none, require, store
from mcpworld.evaluation.registry import getter

if TYPE_CHECKING:
    from mcpworld.env.base import Environment
    from mcpworld.env.vm.environment import VmEnvironment

log = logging.getLogger(__name__)


def suite_vm(env: Environment) -> VmEnvironment | None:
    """The environment when it is a suite's own VM (env=vm), whose server answers what OSWorld's
    getters ask it (/terminal, /window_size, /wallpaper); None for a desktop of ours."""
    from mcpworld.env.vm.environment import VmEnvironment

    return env if isinstance(env, VmEnvironment) else None


@getter("accessibility_tree")
def accessibility_tree(env: Environment, cfg: dict[str, Any]) -> str:
    """The live AT-SPI tree of the desktop as XML, for ``check_accessibility_tree``.

    Only a live desktop has one: standalone grading of a home directory raises InfraError.
    """
    return env.accessibility_tree(timeout_s=float(cfg.get("timeout", 60.0)))


@getter("vm_screen_size")
def vm_screen_size(env: Environment, cfg: dict[str, Any]) -> dict[str, int]:
    """The screen size ``{"width", "height"}`` in pixels."""
    return {"width": int(env.width), "height": int(env.height)}


def _parse_geometry(text: str) -> list[dict[str, int]]:
    """Windows from ``xdotool getwindowgeometry --shell`` output (blocks of KEY=value lines)."""
    windows: list[dict[str, int]] = []
    current: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if not sep:
            continue
        if key == "WINDOW" and current:
            windows.append(current)
            current = {}
        with contextlib.suppress(ValueError):
            current[key] = int(value)
    if current:
        windows.append(current)
    return [w for w in windows if "WIDTH" in w and "HEIGHT" in w]


@getter("vm_window_size")
def vm_window_size(env: Environment, cfg: dict[str, Any]) -> dict[str, int] | None:
    """``{"width", "height"}`` of the visible window whose WM class is ``app_class_name``, or None.

    With several matching windows (apps keep small helper windows) the largest is taken. On a
    suite's VM the VM's server answers (``POST /window_size``, as OSWorld asks: the first window
    whose WM class is the name).
    """
    name = require(cfg, "app_class_name")
    vm = suite_vm(env)
    if vm is not None:
        return vm.window_size(str(name))
    command = f"xdotool search --onlyvisible --class {shlex.quote(str(name))} getwindowgeometry --shell %@"
    result = env.shell(command, timeout=float(cfg.get("timeout", 10.0)))
    if result.returncode == 127 or "command not found" in result.stderr:
        raise InfraError("getter 'vm_window_size' needs xdotool in the environment")
    if "open display" in result.stderr:
        raise InfraError(f"getter 'vm_window_size': no X display: {result.stderr.strip()[-200:]}")
    windows = _parse_geometry(result.stdout)
    if not windows:
        return None
    biggest = max(windows, key=lambda w: w["WIDTH"] * w["HEIGHT"])
    return {"width": biggest["WIDTH"], "height": biggest["HEIGHT"]}


@getter("vm_active_window_title")
def vm_active_window_title(env: Environment, cfg: dict[str, Any]) -> str | None:
    """The title of the active window (``xdotool getactivewindow getwindowname``), None if none is."""
    result = env.shell("xdotool getactivewindow getwindowname", timeout=float(cfg.get("timeout", 10.0)))
    if result.returncode == 127 or "command not found" in result.stderr:
        raise InfraError("getter 'vm_active_window_title' needs xdotool in the environment")
    title = result.stdout.strip()
    return title if result.returncode == 0 and title else None


# --------------------------------------------------------------------------------------------
# desktop settings: default applications, wallpaper


# The video types whose default application decides "the default video player" (as OSWorld asks).
VIDEO_TYPES = [
    "3gp",
    "3gpp",
    "3gpp2",
    "avi",
    "divx",
    "dv",
    "fli",
    "flv",
    "mp2t",
    "mp4",
    "mp4v-es",
    "mpeg",
    "mpeg-system",
    "msvideo",
    "ogg",
    "quicktime",
    "vnd.divx",
    "vnd.mpegurl",
    "vnd.rn-realvideo",
    "webm",
    "x-anim",
    "x-avi",
    "x-flc",
    "x-fli",
    "x-flv",
    "x-m4v",
    "x-matroska",
    "x-mpeg",
    "x-mpeg-system",
    "x-mpeg2",
    "x-ms-asf",
    "x-ms-asf-plugin",
    "x-ms-asx",
    "x-ms-wm",
    "x-ms-wmv",
    "x-ms-wmx",
    "x-ms-wvx",
    "x-msvideo",
    "x-nsv",
    "x-ogm",
    "x-ogm+ogg",
    "x-theora",
    "x-theora+ogg",
]


@getter("default_video_player")
def default_video_player(env: Environment, cfg: dict[str, Any]) -> str:
    """The desktop entry (``vlc.desktop``) that is the default application for most video types,
    by ``xdg-mime query default video/<type>``; ``"unknown"`` when no type has one.

    ``xdg-mime`` reads the user's ``~/.config/mimeapps.list`` (what a file manager's "set as
    default" and ``xdg-mime default`` write). OSWorld listed most types twice; here each counts once.
    """
    types = " ".join(shlex.quote(f"video/{t}") for t in VIDEO_TYPES)
    script = f'for t in {types}; do printf "%s\\n" "$(xdg-mime query default "$t" 2>/dev/null)"; done'
    result = env.shell(script, timeout=float(cfg.get("timeout", 60.0)))
    if result.returncode == 127 or "xdg-mime: command not found" in result.stderr:
        raise InfraError("getter 'default_video_player' needs xdg-mime (xdg-utils) in the environment")
    counts: dict[str, int] = {}
    for line in result.stdout.splitlines():
        if line.strip():
            counts[line.strip()] = counts.get(line.strip(), 0) + 1
    return max(counts, key=counts.__getitem__) if counts else "unknown"  # ties: the first seen


def _setting_files(env: Environment, patterns: list[str]) -> list[tuple[int, str]]:
    """``(mtime, path)`` of the home files matching the glob patterns (relative to the home)."""
    globs = " ".join(f'"$HOME"/{p}' for p in patterns)
    result = env.shell(
        f'for f in {globs}; do [ -f "$f" ] && printf "%s\\t%s\\n" "$(stat -c %Y "$f")" "$f"; done; true', timeout=30.0
    )
    found = []
    for line in result.stdout.splitlines():
        mtime, _, path = line.partition("\t")
        if mtime.isdigit() and path:
            found.append((int(mtime), path))
    return found


def _file_uri_path(value: str) -> str:
    """``'file:///a/b%20c.png'`` (as gsettings prints it) → ``/a/b c.png``."""
    from urllib.parse import unquote, urlparse

    value = value.strip().strip("'\"")
    return unquote(urlparse(value).path) if value.startswith("file://") else value


def _gsettings_wallpaper(env: Environment) -> str | None:
    result = env.shell("gsettings get org.gnome.desktop.background picture-uri", timeout=30.0)
    if result.returncode != 0 or not result.stdout.strip():
        return None
    return _file_uri_path(result.stdout) or None


def _pcmanfm_wallpaper(env: Environment, path: str) -> str | None:
    data = read_or_none(env, path)
    if data is None:
        return None
    for line in data.decode("utf-8", errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "wallpaper" and value.strip():
            return value.strip()
    return None


@getter("vm_wallpaper")
def vm_wallpaper(env: Environment, cfg: dict[str, Any]) -> str | None:
    """Local copy (at ``dest``) of the desktop's wallpaper image file, or None when none is set or
    the file is gone.

    OSWorld reads GNOME's ``org.gnome.desktop.background picture-uri``. That setting works on this
    desktop too (``gsettings set`` stores it in the desktop's dconf database), and so does
    pcmanfm's desktop wallpaper (``pcmanfm --set-wallpaper``, its desktop preferences). The
    setting written last wins; GSettings' default counts only when nothing was set. On a suite's VM
    the VM's server sends the file (``POST /wallpaper``, as OSWorld asks).
    """
    dest = cfg.get("dest") or "wallpaper.png"
    vm = suite_vm(env)
    if vm is not None:
        target = cache_target(env, dest, "vm_wallpaper")
        image_bytes = vm.wallpaper()
        if image_bytes is None:
            log.info("vm_wallpaper: the VM has no wallpaper file to send")
            target.unlink(missing_ok=True)
            return None
        return store(target, image_bytes)
    candidates = _setting_files(env, [".config/dconf/user", ".config/pcmanfm/*/desktop-items-*.conf"])
    image = None
    for _, path in sorted(candidates, reverse=True):
        image = _gsettings_wallpaper(env) if path.endswith("/dconf/user") else _pcmanfm_wallpaper(env, path)
        if image:
            break
    if not image:
        image = _gsettings_wallpaper(env)
    if not image:
        log.info("vm_wallpaper: no wallpaper is set")
        return None
    return copy_to_cache(env, {"canonical_home": False}, image, dest, "vm_wallpaper")


# --------------------------------------------------------------------------------------------
# terminal output

# Where this desktop's xterm logs what it shows (xterm -l -lf <this>; see vm_terminal_output).
TERMINAL_LOG = "~/.cache/mcpworld/terminal.log"
TERMINAL_SETTLE_S, TERMINAL_SETTLE_MAX_S = 0.5, 5.0  # the log is read again until it holds still this long

_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_CSI = re.compile(r"\x1b\[([0-?]*)[ -/]*([@-~])")
_OTHER_ESCAPE = re.compile(r"\x1b(?:[()*+][0-9A-Za-z]|[ -/]*[0-~])")


def terminal_text(raw: str) -> str:
    """The text a terminal's output stream leaves on its lines: escape sequences dropped, carriage
    returns, backspaces and line-editing moves (cursor left/right, erase to end of line, delete and
    insert characters) replayed, so a command line edited in readline reads as it was run."""
    raw = _OSC.sub("", raw)
    lines: list[str] = []
    line: list[str] = []
    col = 0
    pos = 0
    while pos < len(raw):
        char = raw[pos]
        if char == "\x1b":
            csi = _CSI.match(raw, pos)
            if csi:
                params, final = csi.group(1), csi.group(2)
                count = int(params) if params.isdigit() else 1
                if final == "D":
                    col = max(0, col - count)
                elif final == "C":
                    col += count
                elif final == "K" and params in ("", "0"):
                    del line[col:]
                elif final == "P":
                    del line[col : col + count]
                elif final == "@":
                    line[col:col] = [" "] * count
                pos = csi.end()
                continue
            other = _OTHER_ESCAPE.match(raw, pos)
            pos = other.end() if other else pos + 1
            continue
        if char == "\n":
            lines.append("".join(line).rstrip())
            line, col = [], 0
        elif char == "\r":
            col = 0
        elif char == "\b":
            col = max(0, col - 1)
        elif char == "\t" or char >= " ":
            if col > len(line):
                line.extend(" " * (col - len(line)))
            if col < len(line):
                line[col] = char
            else:
                line.append(char)
            col += 1
        pos += 1
    lines.append("".join(line).rstrip())
    return "\n".join(lines).rstrip()


@getter("vm_terminal_output")
def vm_terminal_output(env: Environment, cfg: dict[str, Any]) -> str | None:
    """The text the desktop's terminal shows: its output since it started, as lines (None when no
    terminal has run).

    OSWorld reads the accessibility text of the focused GNOME Terminal tab (when its window is
    active). This desktop's terminal is xterm, which has no accessibility text; the desktop starts
    it logging everything it displays to ``TERMINAL_LOG`` (``xterm -l -lf …``), and this getter
    replays that log into text (``terminal_text``). Differences: the log holds every xterm of the
    episode, not only the focused one, and text a full-screen program drew or ``clear`` wiped is
    still in it. ``path`` reads another log.

    On a suite's VM (env=vm) the VM's server answers, as OSWorld asks it (``GET /terminal``: the
    text of the focused GNOME Terminal tab of the active window, None when none is active).
    """
    vm = suite_vm(env)
    if vm is not None and not cfg.get("path"):
        return vm.terminal_output()
    path = cfg.get("path") or TERMINAL_LOG
    data = read_or_none(env, path)
    if data is None:
        log.info("vm_terminal_output: no terminal log at %s (no xterm ran, or it was not started logging)", path)
        return None
    # a command a postconfig step has just entered is still running or being logged: read until the log
    # holds still (GNOME Terminal's text, which OSWorld reads, shows the output as soon as it is drawn)
    deadline = time.monotonic() + TERMINAL_SETTLE_MAX_S
    while time.monotonic() < deadline:
        time.sleep(TERMINAL_SETTLE_S)
        again = read_or_none(env, path)
        if again == data:
            break
        data = again if again is not None else data
    return terminal_text(data.decode("utf-8", errors="replace"))


# --------------------------------------------------------------------------------------------
# clipboard


def _wait_for_event(display: Any, kind: int, deadline: float) -> Any:
    import select

    while True:
        while display.pending_events():
            event = display.next_event()
            if event.type == kind:
                return event
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        select.select([display], [], [], remaining)


def read_selection(display_name: str, selection: str = "CLIPBOARD", timeout: float = 5.0) -> str | None:
    """The text of an X selection (what ``xsel --clipboard --output`` prints), asked of its owner
    through python-xlib; None when nobody owns it or the owner offers no text.

    Text as UTF8_STRING, else STRING (Latin-1). An owner that answers INCR (a transfer in pieces,
    for text beyond the X server's request size, a few hundred KiB) is not read: None.
    """
    from Xlib import X

    from mcpworld.env.local.xconnection import open_display

    display = open_display(display_name)
    try:
        owned = display.intern_atom(selection)
        if display.get_selection_owner(owned) == X.NONE:
            return None
        window = display.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        prop = display.intern_atom("MCPWORLD_SELECTION")
        deadline = time.monotonic() + timeout
        for target, encoding in (("UTF8_STRING", "utf-8"), ("STRING", "latin-1")):
            window.convert_selection(owned, display.intern_atom(target), prop, X.CurrentTime)
            display.flush()
            event = _wait_for_event(display, X.SelectionNotify, deadline)
            if event is None:
                raise InfraError(f"the owner of the X selection {selection} did not answer within {timeout:g} s")
            if event.property == X.NONE:
                continue
            reply = window.get_full_property(prop, X.AnyPropertyType)
            window.delete_property(prop)
            if reply is None or reply.property_type == display.intern_atom("INCR"):
                log.info("read_selection: %s is not offered in one piece; not read", selection)
                return None
            value = reply.value
            return value.decode(encoding, errors="replace") if isinstance(value, bytes) else str(value)
        return None
    finally:
        display.close()


@getter("vm_clipboard")
def vm_clipboard(env: Environment, cfg: dict[str, Any]) -> str | None:
    """The text on the desktop's clipboard (``selection``: CLIPBOARD, or PRIMARY for the mouse
    selection), or None when it is empty; read from the X server as ``xsel``/``xclip`` would.

    OSWorld's task reads it with ``xsel --clipboard --output`` inside the VM; this desktop has no
    xsel unless installed, and this getter needs nothing in the environment but its X display. On a
    suite's VM the VM reads it (OSWorld's: its python-xlib; WAA's: pyperclip, the Windows clipboard).
    """
    selection = str(cfg.get("selection", "CLIPBOARD")).upper()
    if selection not in ("CLIPBOARD", "PRIMARY", "SECONDARY"):
        raise UserError(f"getter 'vm_clipboard': selection must be CLIPBOARD, PRIMARY or SECONDARY, got {selection!r}")
    vm = suite_vm(env)
    if vm is not None:  # the VM's display is not on this host: the VM reads it
        return vm.clipboard(selection)
    display = env.shell('printf %s "$DISPLAY"', timeout=10.0).stdout.strip()
    if not display:
        raise InfraError("getter 'vm_clipboard' needs the environment's X display (a live desktop)")
    return read_selection(display, selection, float(cfg.get("timeout", 5.0)))


# --------------------------------------------------------------------------------------------
# launchers

SHORTCUT_SUFFIX = ".desktop"


@getter("shortcuts_on_desktop")
def shortcuts_on_desktop(env: Environment, cfg: dict[str, Any]) -> dict[str, str]:
    """``{file name: text}`` of every ``.desktop`` launcher in ``~/Desktop`` (``{}`` when there is none)."""
    try:
        names = env.list_dir("~/Desktop")
    except (FileNotFoundError, NotADirectoryError):
        return {}
    shortcuts = {}
    for name in names:
        if not name.endswith(SHORTCUT_SUFFIX):
            continue
        data = read_or_none(env, f"~/Desktop/{name}")
        if data is not None:
            shortcuts[name] = canonical_home(env, data).decode("utf-8", errors="replace")
    return shortcuts
