"""The screen as Qwen3-VL's reference agent shows it: the screenshot resized by ``smart_resize``
(sides multiples of 32, pixel count bounded) and the model's relative 0..999 grid mapped back to
screen pixels the way the reference maps it (``int(x * width / 999)``: divisor 999, truncation)."""

from __future__ import annotations

from PIL import Image

from mcpworld.agent.profiles.smart_resize import smart_resize as qwen_smart_resize
from mcpworld.agent.tools.base import OffScreen
from mcpworld.agent.tools.computer import CoordinateMap

# OSWorld's Qwen3-VL agent (process_image): factor 32, max_pixels 16*16*4*12800, and qwen_vl_utils'
# defaults for the rest (min_pixels 56*56, longest side 8192)
FACTOR = 32
MIN_PIXELS = 56 * 56
MAX_PIXELS = 16 * 16 * 4 * 12800
MAX_LONG_SIDE = 8192
GRID = 999  # the divisor the reference scales the model's coordinates by


def smart_resize(width: int, height: int) -> tuple[int, int]:
    """The size OSWorld's Qwen3-VL agent sends a ``width`` x ``height`` screenshot at."""
    return qwen_smart_resize(
        width, height, factor=FACTOR, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS, max_long_side=MAX_LONG_SIDE
    )


class QwenGrid(CoordinateMap):
    """Model coordinates on the relative grid → screen pixels, as OSWorld's Qwen3-VL agent maps them.

    The prompt says "The screen's resolution is 1000x1000"; the reference divides by 999 and truncates.
    It accepts 0..1000; where the reference would click one pixel past the edge (x = 999 or 1000 on
    some widths) we clamp to the last pixel (pyautogui's X11 backend ends there too)."""

    def __init__(self, screen: tuple[int, int]):
        super().__init__("normalized_1000", screen, smart_resize(*screen))

    @property
    def bounds(self) -> tuple[int, int]:
        return 1000, 1000

    def to_screen(self, x: float, y: float) -> tuple[int, int]:
        if not (0 <= x <= 1000 and 0 <= y <= 1000):
            raise OffScreen(f"coordinate [{x:g}, {y:g}] is off the screen: x and y must be in 0..1000")
        sw, sh = self.screen
        return min(int(x * sw / GRID), sw - 1), min(int(y * sh / GRID), sh - 1)

    def from_screen(self, x: int, y: int) -> tuple[int, int]:
        sw, sh = self.screen
        return round(x * GRID / sw), round(y * GRID / sh)

    def fit(self, image: Image.Image) -> Image.Image:
        """Resized as the reference resizes (PIL's default filter, bicubic), also when that enlarges
        a side (1080 → 1088)."""
        return image if image.size == self.image else image.resize(self.image)
