"""``wait_for``: the oracle's wait for the desktop's state (a window, a process, a saved file), polled through
the Environment seam, so a replayed solution is as fast as the app and still holds on a busy
machine. Only the oracle's replay gets it (agent.tools.replay_tools); no model is offered it.
The vocabulary and its checks are core/waits.py."""

from __future__ import annotations

import asyncio
import re
import shlex
import time
from typing import Any

from mcpworld.agent.tools.base import Observation, Tool, ToolError
from mcpworld.core.errors import TaskFileError
from mcpworld.core.waits import DEFAULT_TIMEOUT_S, TOOL, check_wait
from mcpworld.env.base import Environment

POLL_S = 0.2
# every managed window (EWMH's client list): "<title>\t<WM_CLASS>\t<geometry>" per line; xprop and
# xdotool are in every desktop (x11-utils, xdotool), local or in the container
LIST_WINDOWS = ("for w in $(xprop -root _NET_CLIENT_LIST 2>/dev/null | grep -o '0x[0-9a-fA-F]*'); do "
                "printf '%s\\t%s\\t%s\\n' \"$(xdotool getwindowname \"$w\" 2>/dev/null)\" "
                "\"$(xprop -id \"$w\" WM_CLASS 2>/dev/null | sed -n 's/^[^=]*= //p')\" "
                "\"$(xdotool getwindowgeometry \"$w\" 2>/dev/null | tr '\\n' ' ')\"; done")


class WaitForTool(Tool):
    name = TOOL
    family = "oracle"
    description = "Wait until a window appears or disappears, or a file is written or holds a text."
    parameters = {
        "type": "object",
        "properties": {
            "window": {"type": "string", "description": "regex on a window's title or class"},
            "process": {"type": "string", "description": "regex on the command line of a process of this desktop"},
            "gone": {"type": "boolean", "description": "wait until no window (process) matches"},
            "file": {"type": "string", "description": "a path on the desktop (~/x)"},
            "changed": {"type": "boolean", "description": "written since the episode began and since the last wait"},
            "contains": {"type": "string", "description": "text the file must hold"},
            "timeout": {"type": "number", "description": f"seconds (default {DEFAULT_TIMEOUT_S:g})"},
        },
    }

    def __init__(self, env: Environment, poll_s: float = POLL_S):
        self.env, self.poll_s = env, poll_s
        self.began = time.time()  # files written by the task's setup are older than this
        self.seen: dict[str, float] = {}  # file -> the write an earlier wait_for already waited for

    async def call(self, args: dict[str, Any]) -> Observation:
        try:
            check_wait(args, TOOL)
        except TaskFileError as exc:
            raise ToolError(str(exc)) from None
        timeout = float(args.get("timeout", DEFAULT_TIMEOUT_S))
        self.placed: str | None = None  # the awaited window's geometry at the last look
        start = time.monotonic()
        previous: tuple[float, int] | None = None  # the file's (mtime, size) at the last look
        while True:
            unmet, stat = await asyncio.to_thread(self._unmet, args, previous)
            previous = stat
            waited = time.monotonic() - start
            if unmet is None:
                if args.get("changed") and stat is not None:
                    self.seen[str(args["file"])] = stat[0]
                return Observation(text=f"wait_for: {describe(args)} after {waited:.1f}s")
            if waited >= timeout:
                return Observation(text=f"wait_for timed out after {timeout:g}s: {unmet}", ok=False)
            await asyncio.sleep(self.poll_s)

    def _unmet(self, args: dict[str, Any], previous: tuple[float, int] | None) -> tuple[str | None, tuple[float, int] | None]:
        """What does not hold yet (None: all does), and the file's (mtime, size) as seen now."""
        stat = None
        if "file" in args:
            path = str(args["file"])
            stat = self._stat(path)
            if stat is None:
                return f"{path} does not exist", None
            if args.get("changed"):
                since = self.seen.get(path, self.began)
                if stat[0] <= since:
                    when = "the last wait_for" if path in self.seen else "the episode began"
                    return f"{path} was not written since {when}", stat
                if stat != previous:  # written: wait one more look for the writer to finish
                    return f"{path} is still being written", stat
            if "contains" in args and str(args["contains"]) not in self._text(path):
                return f"{path} does not contain {str(args['contains'])!r}", stat
        if "window" in args:
            pattern = str(args["window"])
            found = self._matching(pattern)
            present = (found[0] or found[1]) if found else None
            if present and args.get("gone"):
                return f"a window matching {pattern!r} is still open ({present!r})", stat
            if not present and not args.get("gone"):
                return f"no window matches {pattern!r} (open: {', '.join(self._titles()) or 'none'})", stat
            if present and not args.get("gone"):
                # shown where it stays: mapped, then placed by the window manager and laid out by the
                # app, a window's first moments take no clicks where its controls will be
                geometry, self.placed = self.placed, found[2] if found else None  # found: present
                if geometry != self.placed:
                    return f"the window {present!r} is still being placed", stat
        if "process" in args:
            pattern = str(args["process"])
            running = self._process(pattern)
            if running and args.get("gone"):
                return f"a process matching {pattern!r} still runs ({running!r})", stat
            if not running and not args.get("gone"):
                return f"no process of this desktop matches {pattern!r}", stat
        return None, stat

    def _process(self, pattern: str) -> str | None:
        """The command line of a process of this desktop (its account, its display) that matches, or None.
        The pattern is matched here, never written into a command line that would match itself."""
        rx = re.compile(pattern)
        listed = self.env.shell('ps -u "$(id -u)" -o pid=,args=', timeout=10).stdout.splitlines()
        found = {pid: args for pid, _, args in (line.strip().partition(" ") for line in listed) if rx.search(args)}
        if not found:
            return None
        ours = self.env.shell(f"for p in {' '.join(found)}; do grep -qsxza \"DISPLAY=$DISPLAY\" /proc/$p/environ "
                              "&& echo $p; done", timeout=10).stdout.split()
        return found[ours[0]] if ours else None

    def _stat(self, path: str) -> tuple[float, int] | None:
        target = shlex.quote(str(self.env.resolve(path)))
        result = self.env.shell(f"stat -c '%.9Y %s' -- {target}", timeout=10)
        if result.returncode != 0:
            return None
        mtime, size = result.stdout.split()
        return float(mtime), int(size)

    def _text(self, path: str) -> str:
        try:
            return self.env.read_file(path).decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def _windows(self) -> list[tuple[str, str, str]]:
        """(title, class, geometry) of each managed window."""
        result = self.env.shell(LIST_WINDOWS, timeout=10)
        rows = ((line.split("\t") + ["", ""])[:3] for line in result.stdout.splitlines())
        return [(title, cls, geometry) for title, cls, geometry in rows]

    def _matching(self, pattern: str) -> tuple[str, str, str] | None:
        """The first window whose title or class matches (case-insensitive, as setup's ``window:``
        matches), or None."""
        rx = re.compile(pattern, re.I)
        return next((w for w in self._windows() if rx.search(w[0]) or rx.search(w[1])), None)

    def _titles(self) -> list[str]:
        return [title for title, _, _ in self._windows() if title][:8]


def describe(args: dict[str, Any]) -> str:
    parts = []
    if "window" in args:
        parts.append(f"window {args['window']!r} {'gone' if args.get('gone') else 'open'}")
    if "process" in args:
        parts.append(f"process {args['process']!r} {'gone' if args.get('gone') else 'running'}")
    if "file" in args:
        what = " written" if args.get("changed") else ""
        parts.append(f"{args['file']}{what}" + (f" contains {args['contains']!r}" if "contains" in args else ""))
    return ", ".join(parts)
