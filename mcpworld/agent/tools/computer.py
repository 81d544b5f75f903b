"""The computer tool: Anthropic's computer-use action set, mapped onto Environment input actions."""

from __future__ import annotations

import math
import time
from typing import Any

from PIL import Image

from mcpworld.agent.tools.base import Observation, OffScreen, Tool, ToolError
from mcpworld.env.base import Environment

ACTIONS = ("key", "type", "mouse_move", "left_click", "right_click", "middle_click", "double_click",
           "triple_click", "left_click_drag", "left_mouse_down", "left_mouse_up", "scroll",
           "screenshot", "cursor_position", "wait")
CLICKS = {"left_click": (1, 1), "right_click": (3, 1), "middle_click": (2, 1),
          "double_click": (1, 2), "triple_click": (1, 3)}


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


def _point(args: dict[str, Any], key: str = "coordinate") -> tuple[float, float] | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ToolError(f"'{key}' must be [x, y], got {value!r}")
    try:
        x, y = float(value[0]), float(value[1])
    except (TypeError, ValueError):
        raise ToolError(f"'{key}' must be two numbers, got {value!r}") from None
    if not (math.isfinite(x) and math.isfinite(y)):
        raise ToolError(f"'{key}' must be finite numbers, got {value!r}")
    return x, y


class ComputerTool(Tool):
    name = "computer"
    family = "computer"
    description = ("Use the mouse and keyboard on the desktop and take screenshots. Every action except "
                   "cursor_position returns a fresh screenshot.")

    def __init__(self, env: Environment, coords: CoordinateMap):
        self.env = env
        self.coords = coords
        w, h = coords.bounds
        self.parameters = {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": list(ACTIONS)},
                "coordinate": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2,
                               "description": f"[x, y] with x in 0..{w} and y in 0..{h}"},
                "start_coordinate": {"type": "array", "items": {"type": "number"},
                                     "description": "drag start for left_click_drag"},
                "text": {"type": "string", "description": "text to type, or keys like 'ctrl+s' for key"},
                "scroll_direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
                "scroll_amount": {"type": "integer", "minimum": 1},
                "duration": {"type": "number", "description": "seconds, for wait"},
            },
            "required": ["action"],
        }

    async def call(self, args: dict[str, Any]) -> Observation:
        action = args.get("action")
        if action not in ACTIONS:
            raise ToolError(f"unknown computer action {action!r}; use one of {', '.join(ACTIONS)}")
        env = self.env
        if action == "cursor_position":
            x, y = self.coords.from_screen(*env.cursor_position())
            return Observation(text=f"X={x},Y={y}")
        if action == "screenshot":
            return Observation(image=self.coords.fit(env.screenshot()))
        if action == "wait":
            time.sleep(min(float(args.get("duration", 1.0)), 30.0))
            return Observation(image=self.coords.fit(env.screenshot()))

        before = env.screenshot()
        point = _point(args)
        xy = self.coords.to_screen(*point) if point else None
        if action in ("key", "type"):
            text = args.get("text")
            if not isinstance(text, str) or not text:
                raise ToolError(f"action {action!r} needs 'text'")
            env.act({"kind": "key", "keys": text} if action == "key" else {"kind": "type", "text": text})
        elif action == "mouse_move":
            if not xy:
                raise ToolError("mouse_move needs 'coordinate'")
            env.act({"kind": "move", "x": xy[0], "y": xy[1]})
        elif action in CLICKS:
            button, count = CLICKS[action]
            click = {"kind": "click", "button": button, "count": count}
            if xy:
                click.update(x=xy[0], y=xy[1])
            env.act(click)
        elif action == "left_click_drag":
            start = _point(args, "start_coordinate")
            if not start or not xy:
                raise ToolError("left_click_drag needs 'start_coordinate' and 'coordinate'")
            x0, y0 = self.coords.to_screen(*start)
            env.act({"kind": "drag", "x0": x0, "y0": y0, "x": xy[0], "y": xy[1]})
        elif action in ("left_mouse_down", "left_mouse_up"):
            env.act({"kind": "down" if action == "left_mouse_down" else "up", "button": 1})
        elif action == "scroll":
            scroll = {"kind": "scroll", "direction": args.get("scroll_direction", "down"),
                      "amount": int(args.get("scroll_amount", 3))}
            if xy:
                scroll.update(x=xy[0], y=xy[1])
            env.act(scroll)
        return Observation(image=self.coords.fit(env.settle(before)))
