"""``wait_for``: the oracle's wait for the desktop's state (a window, a process, a saved file, a widget in
the accessibility tree, words on the screen, the screen redrawn), polled through the Environment seam
(its shell, accessibility tree and screenshots: env=local, docker and vm alike), so a replayed solution
is as fast as the app and still holds on a busy machine. Only the oracle's replay gets it
(agent.tools.replay_tools); no model is offered it. The vocabulary and its checks are core/waits.py."""

from __future__ import annotations

import asyncio
import re
import shlex
import time
import xml.etree.ElementTree as ET

from PIL import Image

from mcpworld.agent.messages import JSONObject
from mcpworld.agent.tools.base import Observation, Tool, ToolError, integer, number
from mcpworld.agent.tools.computer import BEFORE_LAST_ACTION
from mcpworld.core.errors import TaskFileError
from mcpworld.core.waits import DEFAULT_TIMEOUT_S, TOOL, check_wait, states
from mcpworld.env.a11y_dump import NAMESPACES
from mcpworld.env.base import Environment

POLL_S = 0.2
SCREEN_POLL_S = 0.05  # screenshots are cheap (≈ 1 ms local): a redraw is seen soon after it ends
HOLD_S = 0.3  # the screen counts as still once unchanged this long (a menu's fade, a list's scroll)
A11Y_TIMEOUT_S = 20.0  # one read of the accessibility tree (a big document's takes seconds on a busy machine)
OCR_SCALE = 2  # a region's text (≈ 12 px) read at twice its size: Tesseract misreads small glyphs …
OCR_MAX_PIXELS = 1_000_000  # … unless that makes the image bigger than this (a whole screen: read as it is)
_STATE = "{" + NAMESPACES["st"] + "}"


class WaitForTool(Tool):
    name = TOOL
    family = "oracle"
    description = "Wait until a window appears or disappears, or a file is written or holds a text."
    parameters = {  # noqa: RUF012 - never mutated; an instance attribute MCP tools set
        "type": "object",
        "properties": {
            "window": {"type": "string", "description": "regex on a window's title or class"},
            "process": {"type": "string", "description": "regex on the command line of a process of this desktop"},
            "gone": {"type": "boolean", "description": "wait until no window (process) matches"},
            "file": {"type": "string", "description": "a path on the desktop (~/x)"},
            "changed": {"type": "boolean", "description": "written since the episode began and since the last wait"},
            "contains": {"type": "string", "description": "text the file must hold"},
            "widget": {"type": "string", "description": "regex on an accessible's name (AT-SPI tree)"},
            "role": {"type": "string", "description": "regex on an accessible's role ('menu item', 'push button')"},
            "state": {
                "type": ["string", "array"],
                "items": {"type": "string"},
                "description": "states the accessible must have (focused, showing, selected …)",
            },
            "text": {"type": "string", "description": "regex on the words OCR reads on the screen"},
            "region": {
                "type": "array",
                "items": {"type": "number"},
                "minItems": 4,
                "maxItems": 4,
                "description": "[x1, y1, x2, y2]: where to read text or watch the screen",
            },
            "screen": {
                "type": "string",
                "enum": ["changed", "still"],
                "description": "changed since the last computer action and then still, or only still",
            },
            "timeout": {"type": "number", "description": f"seconds (default {DEFAULT_TIMEOUT_S:g})"},
        },
    }

    def __init__(self, env: Environment, poll_s: float = POLL_S):
        self.env, self.poll_s = env, poll_s
        self.began = time.time()  # files written by the task's setup are older than this
        self.seen: dict[str, float] = {}  # file -> the write an earlier wait_for already waited for

    async def call(self, call_args: JSONObject) -> Observation:
        args: dict[str, object] = dict(call_args)  # as core.waits reads a wait_for step
        try:
            check_wait(args, TOOL)
        except TaskFileError as exc:
            raise ToolError(str(exc)) from None
        timeout = number(args.get("timeout", DEFAULT_TIMEOUT_S))
        self.placed: str | None = None  # the awaited window's geometry at the last look
        # the screen: the frame (of the region) at the last look, since when it has not changed, and
        # the frame before the last computer action (changed: it must differ from that first)
        self.frame: bytes | None = None
        self.still_since = 0.0
        self.reference: bytes | None = None
        self.read: tuple[bytes, str] = (b"", "")  # the last frame OCR read, and its words
        if args.get("screen") == "changed":
            before = BEFORE_LAST_ACTION.get(self.env)
            self.reference = self._crop(before, args).tobytes() if before is not None else None
        poll = min(self.poll_s, SCREEN_POLL_S) if "screen" in args else self.poll_s
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
            await asyncio.sleep(poll)

    def _unmet(self, args: dict[str, object], previous: tuple[float, int] | None) -> tuple[str | None, tuple[float, int] | None]:
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
        if "widget" in args or "role" in args:
            shown = self._widget(args)
            if shown and args.get("gone"):
                return f"the accessible {shown} is still there", stat
            if not shown and not args.get("gone"):
                return f"no accessible has {describe_widget(args)}", stat
        if "text" in args:
            pattern = str(args["text"])
            words = self._read(args)
            read = re.search(pattern, words, re.I)
            if read and args.get("gone"):
                return f"the screen still shows {read.group(0)!r}", stat
            if not read and not args.get("gone"):
                return f"the screen does not show {pattern!r} (read: {words[:200]!r})", stat
        if "screen" in args:
            unsettled = self._screen(args)
            if unsettled:
                return unsettled, stat
        return None, stat

    # -- what the app shows ---------------------------------------------------------------------------
    def _crop(self, image: Image.Image, args: dict[str, object]) -> Image.Image:
        region = args.get("region")
        if not region:
            return image
        if not isinstance(region, list):  # (check_wait took it: four numbers)
            raise ToolError(f"'region' must be [x1, y1, x2, y2], got {region!r}")
        x1, y1, x2, y2 = (integer(v) for v in region)
        return image.crop((x1, y1, x2, y2))

    def _screen(self, args: dict[str, object]) -> str | None:
        """None once the screen (its region) has held still for HOLD_S, after differing from the frame
        before the last computer action where ``screen: changed`` asks that."""
        frame = self._crop(self.env.screenshot(), args).tobytes()
        now = time.monotonic()
        if frame != self.frame:
            self.frame, self.still_since = frame, now
        if self.reference is not None:
            if frame == self.reference:
                return "the screen has not changed since the last computer action"
            self.reference = None  # changed: from now on it only has to hold still
        if now - self.still_since < HOLD_S:
            return "the screen is still changing"
        return None

    def _widget(self, args: dict[str, object]) -> str | None:
        """The first accessible (role 'name') in the desktop's AT-SPI tree that matches, or None."""
        name_rx = re.compile(str(args.get("widget", "")), re.I)
        role_rx = re.compile(str(args.get("role", "")), re.I)
        wanted = [_STATE + s.replace(" ", "-") for s in states(args)]
        try:
            root = ET.fromstring(self.env.accessibility_tree(timeout_s=A11Y_TIMEOUT_S))
        except ET.ParseError:
            return None  # an app went away mid-dump: look again
        for element in root.iter():
            role, name = element.tag.replace("-", " "), element.get("name", "")
            if name_rx.search(name) and role_rx.search(role) and all(element.get(state) == "true" for state in wanted):
                return f"{role} {name!r}"
        return None

    def _read(self, args: dict[str, object]) -> str:
        """The words OCR reads on the screen (in the region), joined by single spaces."""
        from mcpworld.evaluation.metrics.ocr import image_text  # Tesseract, as compare_image_text reads

        image = self._crop(self.env.screenshot(), args)
        pixels = image.tobytes()
        if pixels == self.read[0]:
            return self.read[1]  # the same screen reads the same: no second OCR of it
        scaled = image
        if image.width * image.height * OCR_SCALE**2 <= OCR_MAX_PIXELS:
            scaled = image.resize((image.width * OCR_SCALE, image.height * OCR_SCALE), Image.Resampling.LANCZOS)
        self.read = (pixels, image_text(scaled))
        return self.read[1]

    def _process(self, pattern: str) -> str | None:
        """The command line of a process of this desktop (its account, its display) that matches, or None.
        The pattern is matched here, never written into a command line that would match itself."""
        rx = re.compile(pattern)
        listed = self.env.shell('ps -u "$(id -u)" -o pid=,args=', timeout=10).stdout.splitlines()
        found = {pid: args for pid, _, args in (line.strip().partition(" ") for line in listed) if rx.search(args)}
        if not found:
            return None
        ours = self.env.shell(
            f'for p in {" ".join(found)}; do grep -qsxza "DISPLAY=$DISPLAY" /proc/$p/environ && echo $p; done', timeout=10
        ).stdout.split()
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
        return self.env.window_rows()

    def _matching(self, pattern: str) -> tuple[str, str, str] | None:
        """The first window whose title or class matches (case-insensitive, as setup's ``window:``
        matches), or None."""
        rx = re.compile(pattern, re.I)
        return next((w for w in self._windows() if rx.search(w[0]) or rx.search(w[1])), None)

    def _titles(self) -> list[str]:
        return [title for title, _, _ in self._windows() if title][:8]


def describe(args: dict[str, object]) -> str:
    parts = []
    if "window" in args:
        parts.append(f"window {args['window']!r} {'gone' if args.get('gone') else 'open'}")
    if "process" in args:
        parts.append(f"process {args['process']!r} {'gone' if args.get('gone') else 'running'}")
    if "file" in args:
        what = " written" if args.get("changed") else ""
        parts.append(f"{args['file']}{what}" + (f" contains {args['contains']!r}" if "contains" in args else ""))
    if "widget" in args or "role" in args:
        parts.append(f"accessible {describe_widget(args)} {'gone' if args.get('gone') else 'there'}")
    if "text" in args:
        parts.append(f"text {args['text']!r} {'gone' if args.get('gone') else 'shown'}")
    if "screen" in args:
        parts.append("screen changed and still" if args["screen"] == "changed" else "screen still")
    if "region" in args:
        parts[-1] += f" in {args['region']}"
    return ", ".join(parts)


def describe_widget(args: dict[str, object]) -> str:
    what = [
        f"role {args['role']!r}" if "role" in args else "",
        f"name {args['widget']!r}" if "widget" in args else "",
        f"state {'+'.join(states(args))}" if "state" in args else "",
    ]
    return ", ".join(w for w in what if w)
