"""Qwen-VL's image sizing (``smart_resize`` of qwen_vl_utils), shared by the families built on it:
Qwen3-VL (factor 32) and UI-TARS-1.5 on Qwen2.5-VL (factor 28). Each passes its reference's bounds."""

from __future__ import annotations

import math

MAX_RATIO = 200  # qwen_vl_utils refuses images more elongated than this


def smart_resize(
    width: int, height: int, *, factor: int, min_pixels: int, max_pixels: int, max_long_side: int | None = None
) -> tuple[int, int]:
    """(width, height) of the image the model is sent: each side rounded to a multiple of ``factor``
    (at least one factor), then scaled with the aspect kept into [min_pixels, max_pixels]. The order
    is (width, height), where qwen_vl_utils returns (height, width)."""
    if min(width, height) < 2 or max(width, height) / min(width, height) > MAX_RATIO:
        raise ValueError(f"a {width}x{height} screen cannot be sent to Qwen-VL (sides >= 2, aspect <= {MAX_RATIO})")
    if max_long_side and max(width, height) > max_long_side:
        shrink = max(width, height) / max_long_side
        width, height = int(width / shrink), int(height / shrink)
    w, h = max(factor, round(width / factor) * factor), max(factor, round(height / factor) * factor)
    if w * h > max_pixels:
        beta = math.sqrt(width * height / max_pixels)
        w, h = math.floor(width / beta / factor) * factor, math.floor(height / beta / factor) * factor
    elif w * h < min_pixels:
        beta = math.sqrt(min_pixels / (width * height))
        w, h = math.ceil(width * beta / factor) * factor, math.ceil(height * beta / factor) * factor
    return w, h
