"""The computer tool: Anthropic's computer-use action set, mapped onto Environment input actions.

Without a version it offers the generic set below (any model); with an Anthropic tool version
(``computer_20241022``, ``computer_20250124``, ``computer_20251124``) it offers exactly that version's
actions with their documented arguments, as Claude was trained on them: clicks and scrolls with
modifier keys held (``text``), ``hold_key`` for a duration, ``zoom`` into a region.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from PIL import Image

from mcpworld.agent.messages import JSONObject
from mcpworld.agent.tools.base import Observation, OffScreen, Tool, ToolError, integer, number
from mcpworld.env.base import Environment

ACTIONS = (
    "key",
    "type",
    "mouse_move",
    "left_click",
    "right_click",
    "middle_click",
    "double_click",
    "triple_click",
    "left_click_drag",
    "left_mouse_down",
    "left_mouse_up",
    "scroll",
    "screenshot",
    "cursor_position",
    "wait",
)
CLICKS = {"left_click": (1, 1), "right_click": (3, 1), "middle_click": (2, 1), "double_click": (1, 2), "triple_click": (1, 3)}
# Anthropic's versions (the computer-use tool documentation; the reference agent's tools/computer.py)
ACTIONS_20241022 = (
    "key",
    "type",
    "mouse_move",
    "left_click",
    "left_click_drag",
    "right_click",
    "middle_click",
    "double_click",
    "screenshot",
    "cursor_position",
)
ACTIONS_20250124 = (*ACTIONS_20241022, "left_mouse_down", "left_mouse_up", "scroll", "hold_key", "wait", "triple_click")
VERSIONS: dict[str, tuple[str, ...]] = {
    "computer_20241022": ACTIONS_20241022,
    "computer_20250124": ACTIONS_20250124,
    "computer_20251124": (*ACTIONS_20250124, "zoom"),
}
MAX_DURATION_S = 100.0  # hold_key / wait: the reference agent refuses longer
# each desktop's screen just before the last input action sent to it: what the oracle's
# ``wait_for: {screen: changed}`` compares with (agent/tools/wait_for.py)
BEFORE_LAST_ACTION: weakref.WeakKeyDictionary[Environment, Image.Image] = weakref.WeakKeyDictionary()


def image_size(screen: tuple[int, int], image_max: list[int] | tuple[int, int] | None) -> tuple[int, int]:
    """Size of the screenshot the model is sent: the screen, shrunk (aspect kept) to fit ``image_max``."""
    sw, sh = screen
    if not image_max:
        return sw, sh
    mw, mh = int(image_max[0]), int(image_max[1])
    scale = min(mw / sw, mh / sh)
    if scale >= 1.0:
        return sw, sh
    return max(1, round(sw * scale)), max(1, round(sh * scale))


class CoordinateMap:
    """Model coordinates → screen pixels. ``pixels``: pixels of the screenshot the model saw (which may
    be downscaled from the screen); ``normalized_1000``: 0–1000 on both axes (Qwen-VL family)."""

    def __init__(self, convention: str, screen: tuple[int, int], image: tuple[int, int] | None = None):
        if convention not in ("pixels", "normalized_1000"):
            raise ToolError(f"unknown coordinate convention {convention!r}")
        self.convention = convention
        self.screen = screen
        self.image = image or screen

    @property
    def bounds(self) -> tuple[int, int]:
        """The largest x and y a model may give: 1000 (normalised) or the image's size."""
        return (1000, 1000) if self.convention == "normalized_1000" else self.image

    def to_screen(self, x: float, y: float) -> tuple[int, int]:
        """Screen pixel for a model coordinate; OffScreen outside what the model was shown."""
        bx, by = self.bounds
        if not (0 <= x <= bx and 0 <= y <= by):
            raise OffScreen(f"coordinate [{x:g}, {y:g}] is off the screen: x must be in 0..{bx} and y in 0..{by}")
        sw, sh = self.screen
        px, py = x * sw / bx, y * sh / by
        return min(max(round(px), 0), sw - 1), min(max(round(py), 0), sh - 1)

    def fit(self, image: Image.Image) -> Image.Image:
        """The screenshot as the model is sent it (downscaled when the model's image is smaller)."""
        if self.convention == "pixels" and image.size != self.image:
            return image.resize(self.image, Image.Resampling.BICUBIC, reducing_gap=2.0)
        return image

    def from_screen(self, x: int, y: int) -> tuple[int, int]:
        (sw, sh), (bx, by) = self.screen, self.bounds
        return round(x * bx / sw), round(y * by / sh)


def _point(args: JSONObject, key: str = "coordinate") -> tuple[float, float] | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ToolError(f"'{key}' must be [x, y], got {value!r}")
    try:
        x, y = number(value[0]), number(value[1])
    except (TypeError, ValueError):
        raise ToolError(f"'{key}' must be two numbers, got {value!r}") from None
    if not (math.isfinite(x) and math.isfinite(y)):
        raise ToolError(f"'{key}' must be finite numbers, got {value!r}")
    return x, y


class ComputerTool(Tool):
    name = "computer"
    family = "computer"
    description = (
        "Use the mouse and keyboard on the desktop and take screenshots. Every action except "
        "cursor_position returns a fresh screenshot."
    )

    def __init__(self, env: Environment, coords: CoordinateMap, version: str | None = None):
        if version is not None and version not in VERSIONS:
            raise ToolError(f"unknown computer tool version {version!r}; known: {', '.join(VERSIONS)}")
        self.env = env
        self.coords = coords
        self.version = version
        self.actions = VERSIONS[version] if version else ACTIONS
        w, h = coords.bounds
        properties: dict[str, Any] = {
            "action": {"type": "string", "enum": list(self.actions)},
            "coordinate": {
                "type": "array",
                "items": {"type": "number"},
                "minItems": 2,
                "maxItems": 2,
                "description": f"[x, y] with x in 0..{w} and y in 0..{h}",
            },
            "start_coordinate": {"type": "array", "items": {"type": "number"}, "description": "drag start for left_click_drag"},
            "text": {"type": "string", "description": "text to type, or keys like 'ctrl+s' for key"},
            "scroll_direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
            "scroll_amount": {"type": "integer", "minimum": 1},
            "duration": {"type": "number", "description": "seconds, for wait"},
        }
        if version == "computer_20241022":
            del properties["start_coordinate"]  # this version drags from the cursor
        if version:  # the versions' own arguments: modifiers held, hold_key, zoom's region
            properties["text"]["description"] += "; keys held down during a click or scroll ('shift'); the keys hold_key holds"
            properties["duration"]["description"] = "seconds, for wait and hold_key"
        if "zoom" in self.actions:
            properties["region"] = {
                "type": "array",
                "items": {"type": "number"},
                "minItems": 4,
                "maxItems": 4,
                "description": "[x1, y1, x2, y2]: the top-left and bottom-right corners to zoom into",
            }
        self.parameters = {"type": "object", "properties": properties, "required": ["action"]}

    async def call(self, args: JSONObject) -> Observation:
        action = args.get("action")
        if action not in self.actions:
            which = f" in {self.version}" if self.version and any(action in a for a in VERSIONS.values()) else ""
            raise ToolError(f"unknown computer action {action!r}{which}; use one of {', '.join(self.actions)}")
        env = self.env
        if action == "cursor_position":
            x, y = self.coords.from_screen(*env.cursor_position())
            return Observation(text=f"X={x},Y={y}")
        if action == "screenshot":
            return Observation(image=self.coords.fit(env.screenshot()))
        if action == "wait":
            time.sleep(self._duration(args) if self.version else min(number(args.get("duration", 1.0)), 30.0))
            return Observation(image=self.coords.fit(env.screenshot()))
        if action == "zoom":
            return Observation(image=self._zoom(args))

        before = env.screenshot()
        BEFORE_LAST_ACTION[env] = before
        point = _point(args)
        xy = self.coords.to_screen(*point) if point else None
        if action in ("key", "type"):
            text = args.get("text")
            if not isinstance(text, str) or not text:
                raise ToolError(f"action {action!r} needs 'text'")
            env.act({"kind": "key", "keys": text} if action == "key" else {"kind": "type", "text": text})
        elif action == "hold_key":
            keys, duration = self._keys(args, required=True), self._duration(args)
            with self._held(keys):
                time.sleep(duration)
        elif action == "mouse_move":
            if not xy:
                raise ToolError("mouse_move needs 'coordinate'")
            env.act({"kind": "move", "x": xy[0], "y": xy[1]})
        elif action in CLICKS:
            button, count = CLICKS[action]
            click = {"kind": "click", "button": button, "count": count}
            keys = self._keys(args)
            self._place(click, xy, keys)
            with self._held(keys):
                env.act(click)
        elif action == "left_click_drag":
            self._drag(args, xy)
        elif action in ("left_mouse_down", "left_mouse_up"):
            if self.version and xy:
                raise ToolError(f"{action} takes no 'coordinate': move the mouse first (mouse_move)")
            env.act({"kind": "down" if action == "left_mouse_down" else "up", "button": 1})
        elif action == "scroll":
            self._scroll(args, xy)
        return Observation(image=self.coords.fit(env.settle(before)))

    # -- the versions' arguments ------------------------------------------------------------------
    def _keys(self, args: JSONObject, required: bool = False) -> str:
        """The keys held during a click or scroll (``text``; the reference agent reads ``key`` for
        clicks), or that hold_key holds. The generic tool holds none: its ``text`` means nothing there."""
        keys = args.get("text") if args.get("text") is not None else args.get("key")
        if not self.version or (keys is None and not required):
            return ""
        if self.version == "computer_20241022" and not required:
            raise ToolError(f"{args.get('action')} takes no 'text' in computer_20241022 (no modifier keys)")
        if not isinstance(keys, str) or not keys.strip():
            raise ToolError(f"{args.get('action')} needs 'text': the keys to hold, such as 'shift' or 'ctrl'")
        return keys

    @contextmanager
    def _held(self, keys: str) -> Iterator[None]:
        """Keys pressed for the duration of the block and released whatever happens inside it."""
        if not keys:
            yield
            return
        self.env.act({"kind": "key_down", "keys": keys})
        try:
            yield
        finally:
            self.env.act({"kind": "key_up", "keys": keys})

    def _duration(self, args: JSONObject) -> float:
        value = args.get("duration")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ToolError(f"{args.get('action')} needs 'duration': a number of seconds, got {value!r}")
        if not 0 <= value <= MAX_DURATION_S:
            raise ToolError(f"'duration' must be between 0 and {MAX_DURATION_S:g} seconds, got {value!r}")
        return float(value)

    def _drag(self, args: JSONObject, xy: tuple[int, int] | None) -> None:
        """From ``start_coordinate`` (documented from computer_20250124 on) or else from the cursor
        (computer_20241022, and the reference agent @44c2b5c for every version; @27ca8aa refuses a
        drag without a start, which we keep accepting) to ``coordinate``."""
        start = _point(args, "start_coordinate")
        if start and self.version == "computer_20241022":
            raise ToolError(
                "left_click_drag takes no 'start_coordinate' in computer_20241022: it drags from the "
                "cursor (mouse_move there first)"
            )
        if not xy or (start is None and self.version is None):  # the generic tool names both ends
            raise ToolError("left_click_drag needs 'start_coordinate' and 'coordinate'")
        x0, y0 = self.coords.to_screen(*start) if start else self.env.cursor_position()
        self.env.act({"kind": "drag", "x0": x0, "y0": y0, "x": xy[0], "y": xy[1]})

    def _scroll(self, args: JSONObject, xy: tuple[int, int] | None) -> None:
        direction, amount = args.get("scroll_direction", "down"), args.get("scroll_amount", 3)
        if self.version:  # the versions document both as required
            direction, amount = args.get("scroll_direction"), args.get("scroll_amount")
            if direction not in ("up", "down", "left", "right"):
                raise ToolError(f"scroll needs 'scroll_direction': up, down, left or right, got {direction!r}")
            if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
                raise ToolError(f"scroll needs 'scroll_amount': a non-negative integer, got {amount!r}")
        scroll: dict[str, object] = {"kind": "scroll", "direction": direction, "amount": integer(amount)}
        keys = self._keys(args)
        self._place(scroll, xy, keys)
        with self._held(keys):
            self.env.act(scroll)

    def _place(self, action: dict[str, object], xy: tuple[int, int] | None, keys: str) -> None:
        """Where a click or scroll happens: in the action itself, or, with keys to hold, by moving
        there before they go down (the reference agent's order: move, keydown, click, keyup)."""
        if xy and keys:
            self.env.act({"kind": "move", "x": xy[0], "y": xy[1]})
        elif xy:
            action.update(x=xy[0], y=xy[1])

    def _zoom(self, args: JSONObject) -> Image.Image:
        """The screen's ``region`` (model coordinates) at the screen's own resolution, shrunk only
        as far as the screenshot the model is sent (so it costs no more than one). The far corner is
        the crop's edge, not a pixel inside it (the reference's convention: width x2 - x1). Unlike the
        reference (@27ca8aa), which cuts the screen-scaled box out of the downscaled screenshot, this
        crops the real screen, so the region is the one the model named."""
        region = args.get("region")
        if not isinstance(region, (list, tuple)) or len(region) != 4:
            raise ToolError(f"zoom needs 'region': [x1, y1, x2, y2], got {region!r}")
        corners = [_point({"region": list(region[i : i + 2])}, "region") for i in (0, 2)]
        (x1, y1), (x2, y2) = (c for c in corners if c is not None)
        sx1, sy1 = self.coords.to_screen(x1, y1)
        self.coords.to_screen(x2, y2)  # OffScreen past what the model was shown
        (sw, sh), (bx, by) = self.coords.screen, self.coords.bounds
        sx2, sy2 = min(round(x2 * sw / bx), sw), min(round(y2 * sh / by), sh)
        if sx2 <= sx1 or sy2 <= sy1:
            raise ToolError(f"zoom 'region' must be [x1, y1, x2, y2] with x1 < x2 and y1 < y2, got {region!r}")
        crop = self.env.screenshot().crop((sx1, sy1, sx2, sy2))
        size = image_size(crop.size, self.coords.image)
        return crop if size == crop.size else crop.resize(size, Image.Resampling.BICUBIC, reducing_gap=2.0)
