"""Screenshots by in-process XShm grab (mss), and adaptive waiting for the screen to settle.

A persistent grabber per display costs ≈ 1 ms a frame (PIL's ImageGrab reconnects each call, ≈ 6 ms).
"""

from __future__ import annotations

import contextlib
import io
import time
from dataclasses import dataclass

import mss
from PIL import Image


class Screen:
    """Grabs frames of one X display. Not thread-safe: one per episode thread."""

    def __init__(self, display_name: str):
        self._mss = mss.MSS(display=display_name)
        self._monitor = self._mss.monitors[0]

    def raw(self) -> tuple[tuple[int, int], bytes]:
        shot = self._mss.grab(self._monitor)
        return shot.size, bytes(shot.raw)

    def grab(self) -> Image.Image:
        shot = self._mss.grab(self._monitor)
        return to_image(shot.size, shot.raw)  # the BGRX unpack copies: no need to copy first

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._mss.close()


def to_image(size: tuple[int, int], raw: bytes | bytearray) -> Image.Image:
    return Image.frombuffer("RGB", size, raw, "raw", "BGRX", 0, 1)


@dataclass
class SettlePolicy:
    """Poll frames every ``interval_s``; stop when ``stable_frames`` consecutive frames match after a
    change, when nothing changed for ``idle_s`` (the action had no visible effect), or at ``max_s``."""

    interval_s: float = 0.03
    stable_frames: int = 3
    idle_s: float = 0.3
    max_s: float = 3.0


def settle(screen: Screen, before: Image.Image | None, policy: SettlePolicy) -> tuple[Image.Image, float]:
    """Return (last frame, seconds waited)."""
    start = time.monotonic()
    reference = before.tobytes("raw", "BGRX") if before is not None else None
    changed = before is None
    size, last = screen.raw()
    stable = 0
    while True:
        elapsed = time.monotonic() - start
        if elapsed >= policy.max_s:
            break
        if not changed:
            if last != reference:
                changed, stable = True, 0
            elif elapsed >= policy.idle_s:
                break
        elif stable >= policy.stable_frames:
            break
        time.sleep(policy.interval_s)
        size, frame = screen.raw()
        stable = stable + 1 if frame == last else 0
        last = frame
    return to_image(size, last), time.monotonic() - start


FORMATS = {"png": ("PNG", "image/png"), "jpeg": ("JPEG", "image/jpeg")}


def encode(image: Image.Image, fmt: str = "png", quality: int = 85) -> bytes:
    """PNG (lossless, compress_level=1, ≈ 16-20 ms at 1000x1000) or JPEG (≈ 3 ms)."""
    buf = io.BytesIO()
    if fmt.lower() == "png":
        image.save(buf, "PNG", compress_level=1)
    else:
        image.convert("RGB").save(buf, "JPEG", quality=quality)
    return buf.getvalue()
