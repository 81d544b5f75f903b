"""Image metrics with OSWorld's ``gimp.py`` and ``vlc.compare_images`` scoring.

``result`` is the local path of the image the agent produced (a getter's cached copy) and
``expected`` the gold or original image path, unless a metric says otherwise. Scores follow
OSWorld's functions case for case, including their quirks (kept on purpose: a task written for
OSWorld must score the same here). Where OSWorld would raise on the agent's output (a missing or
undecodable file, an image mode its code cannot index) the score is 0; only a malformed
rules/options object (the task author's mistake) raises UserError.

Common conventions, as in OSWorld:

- Images are converted with Pillow's ``convert``: to RGB the alpha channel is simply dropped
  (the colour under a transparent pixel counts), palettes are expanded.
- Structure is scikit-image SSIM on 8-bit RGB (7x7 window, data range 255). Either image under
  7 px on a side, or images of different sizes, are never "the same structure".
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from PIL import Image, ImageChops, ImageStat

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.crash import zero_on_crash
from mcpworld.evaluation.metrics.general import rule_value
from mcpworld.evaluation.registry import metric

SSIM_THRESHOLD = 0.9
SSIM_THRESHOLD_RELAXED = 0.85  # check_structure_sim_with_threshold's default
MIRROR_SSIM_THRESHOLD = 0.99  # a GIMP flip is exact up to re-encoding
CONTRAST_SSIM_THRESHOLD = 0.65  # a contrast change moves SSIM's contrast term a lot
BRIGHTNESS_MSE_THRESHOLD = 0.03  # on [0, 1] pixels after equalising mean brightness
NORMALISED_BRIGHTNESS = 128
BASE_RESULT_MARGIN = 0.01  # compare_images with reference_base_result: must beat the base by this
EDGE_FRACTION = 0.05  # "near the centre" / "on the left side": within 5% of the image size
DARK_LEVEL = 128  # a grey level below this counts as dark (text)
SSIM_WINDOW = 7


# ---------------------------------------------------------------- loading and similarity


def _open(path: Any) -> Image.Image | None:
    """The decoded image at ``path`` (first frame), or None when there is no readable image."""
    if not isinstance(path, (str, os.PathLike)) or not path or not os.path.isfile(path):
        return None
    try:
        with Image.open(path) as img:
            img.load()
            return img.copy()
    except Exception:
        return None


def _open_pair(result: Any, expected: Any) -> tuple[Image.Image, Image.Image] | None:
    a, b = _open(result), _open(expected)
    return None if a is None or b is None else (a, b)


def _flatten(img: Image.Image) -> Image.Image:
    """8-bit RGB with transparency composited over white (used by the OCR metric, not by the ones here)."""
    if img.mode.startswith("I") or img.mode == "F":
        values = np.asarray(img, dtype=np.float64)
        if img.mode.startswith("I;16") or (values.size and values.max() > 255):
            values = values / 257.0
        img = Image.fromarray(np.clip(np.rint(values), 0, 255).astype(np.uint8))
    if img.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in img.info:
        rgba = img.convert("RGBA")
        return Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba).convert("RGB")
    return img.convert("RGB")


def _rgb(img: Image.Image) -> Image.Image:
    return img if img.mode == "RGB" else img.convert("RGB")


def _ssim_arrays(a: np.ndarray, b: np.ndarray, window: int = SSIM_WINDOW) -> float:
    from skimage.metrics import structural_similarity  # slow import: only when needed

    return float(structural_similarity(a, b, win_size=window, data_range=255, channel_axis=2))


def _same_structure(a: Image.Image, b: Image.Image, threshold: float = SSIM_THRESHOLD) -> bool:
    """RGB SSIM ≥ threshold; an image under 7 px on a side, or a size mismatch, is never the same."""
    if min(a.width, a.height, b.width, b.height) < SSIM_WINDOW:
        return False
    try:
        a, b = _rgb(a), _rgb(b)
        if a.size != b.size:
            return False
        return _ssim_arrays(np.asarray(a), np.asarray(b)) >= threshold
    except Exception:
        return False


def _mean_grey(img: Image.Image) -> float:
    return ImageStat.Stat(img.convert("L")).mean[0]


def _mean_saturation(img: Image.Image) -> float:
    return float(np.asarray(img.convert("HSV"))[..., 1].mean())


# ---------------------------------------------------------------- image vs image


@metric("check_structure_sim")
@zero_on_crash
def check_structure_sim(result: Any, expected: Any) -> float:
    """1 when the result image has the gold image's size and RGB SSIM ≥ 0.9. result, expected: image paths."""
    pair = _open_pair(result, expected)
    return float(pair is not None and pair[0].size == pair[1].size and _same_structure(*pair))


@metric("check_structure_sim_with_threshold")
@zero_on_crash
def check_structure_sim_with_threshold(result: Any, expected: Any, ssim_threshold: float = SSIM_THRESHOLD_RELAXED) -> float:
    """1 when RGB SSIM of the result (Lanczos-resized to the gold size if it differs) and gold ≥ ``ssim_threshold``.

    result, expected: image paths; ``ssim_threshold`` defaults to 0.85. Images under 7 px on a
    side use the largest odd window that fits, as OSWorld does.
    """
    if isinstance(ssim_threshold, bool) or not isinstance(ssim_threshold, (int, float)):
        raise UserError(f"metric 'check_structure_sim_with_threshold': ssim_threshold must be a number, got {ssim_threshold!r}")
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    img, gold = pair
    if img.size != gold.size:
        img = img.resize(gold.size, Image.Resampling.LANCZOS)
    a, b = np.asarray(_rgb(img)), np.asarray(_rgb(gold))
    side = min(a.shape[0], a.shape[1])
    window = SSIM_WINDOW if side >= SSIM_WINDOW else (side if side % 2 else side - 1)
    if window < 1:
        return 0.0
    return float(_ssim_arrays(a, b, window) >= ssim_threshold)


@metric("check_structure_sim_resized")
@zero_on_crash
def check_structure_sim_resized(result: Any, expected: Any) -> float:
    """1 when the result, resized to the gold size, has RGB SSIM ≥ 0.9 with it.

    result, expected: image paths. A result with transparency (RGBA/LA mode or a transparency
    key) is first cropped to its non-transparent pixels; a fully transparent one scores 0.
    Resizing uses Pillow's default filter.
    """
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    img, gold = pair
    if img.mode in ("RGBA", "LA") or "transparency" in img.info:
        img = img.convert("RGBA")
        box = img.getchannel("A").getbbox()
        if box is None:
            return 0.0
        img = img.crop(box).convert("RGB")
    return float(_same_structure(img.resize(gold.size), _rgb(gold)))


@metric("check_image_mirror")
@zero_on_crash
def check_image_mirror(result: Any, expected: Any) -> float:
    """1 when the result flipped left-right has RGB SSIM ≥ 0.99 with the original.

    result: the edited image path; expected: the original image path.
    """
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    img, original = pair
    return float(_same_structure(img.transpose(Image.Transpose.FLIP_LEFT_RIGHT), original, MIRROR_SSIM_THRESHOLD))


def _brightness_normalised(img: Image.Image) -> Image.Image:
    """The image with every channel value scaled so its mean grey level is 128 (truncated, clipped)."""
    factor = NORMALISED_BRIGHTNESS / _mean_grey(img)
    return img.point(lambda v: min(255, max(0, int(v * factor))))


@metric("check_brightness_decrease_and_structure_sim")
@zero_on_crash
def check_brightness_decrease_and_structure_sim(result: Any, expected: Any, threshold: float = BRIGHTNESS_MSE_THRESHOLD) -> float:
    """1 when the result is darker than the original yet the same picture.

    result: the edited image path; expected: the original image path. "Darker": lower mean grey
    level. "Same picture": after scaling both to mean grey 128, the mean squared RGB difference
    on [0, 1] pixels is below ``threshold`` (default 0.03); a result of another size is first
    Lanczos-resized to the original's. An all-black image scores 0 (OSWorld divides by zero).
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise UserError(f"metric 'check_brightness_decrease_and_structure_sim': threshold must be a number, got {threshold!r}")
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    img, original = pair
    darker = _mean_grey(original) > _mean_grey(img)
    a, b = _brightness_normalised(img), _brightness_normalised(original)
    if a.size != b.size:
        a = a.resize(b.size, Image.Resampling.LANCZOS)
    pixels_a, pixels_b = (np.asarray(_rgb(x), dtype=np.float32) / 255 for x in (a, b))
    mse = np.mean((pixels_a - pixels_b) ** 2)
    return float(darker and bool(mse < threshold))


@metric("check_saturation_increase_and_structure_sim")
@zero_on_crash
def check_saturation_increase_and_structure_sim(result: Any, expected: Any) -> float:
    """1 when the result is more saturated than the original while hue and value keep their structure.

    result: the edited image path; expected: the original image path. Mean HSV saturation must
    rise, and the SSIM of the H channels and of the V channels must each be ≥ 0.9.
    """
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    hsv, hsv_original = (img.convert("HSV") for img in pair)
    if not np.asarray(hsv_original)[..., 1].mean() < np.asarray(hsv)[..., 1].mean():
        return 0.0
    h, _, v = hsv.split()
    h0, _, v0 = hsv_original.split()
    return float(_same_structure(h, h0) and _same_structure(v, v0))


@metric("check_contrast_increase_and_structure_sim")
@zero_on_crash
def check_contrast_increase_and_structure_sim(result: Any, expected: Any) -> float:
    """1 when the result has more contrast than the original and RGB SSIM ≥ 0.65.

    result: the edited image path; expected: the original image path. Contrast is the standard
    deviation of the image's raw channel values (alpha and palette indices included, as OSWorld).
    """
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    img, original = pair
    higher = np.std(np.asarray(original, dtype=np.float32)) < np.std(np.asarray(img, dtype=np.float32))
    return float(bool(higher) and _same_structure(img, original, CONTRAST_SSIM_THRESHOLD))


@metric("check_palette_and_structure_sim")
@zero_on_crash
def check_palette_and_structure_sim(result: Any, expected: Any) -> float:
    """1 when the result is a palette (mode P) image and its RGB SSIM with the gold is ≥ 0.9. result, expected: image paths."""
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    img, gold = pair
    return float(img.mode == "P" and _same_structure(img, gold))


@metric("check_green_background")
@zero_on_crash
def check_green_background(result: Any, expected: Any) -> float:
    """1 when every background pixel of the result is green (G above both R and B).

    result: the edited image path; expected: the original image path, whose pixels that are not
    RGB black mark the background (an all-black original passes). As in OSWorld, whose loop
    indexes pixels as [x, y] and so raises on anything else, only square originals can pass;
    the result must cover the original and have RGB channels.
    """
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    img, original = pair
    w, h = original.size
    target = np.asarray(original)
    if w == 0 or h == 0:
        return 1.0
    if target.ndim < 3 or target.shape[0] < w or target.shape[1] < h:
        return 0.0
    target = target[:w, :h]
    # fewer than three channels never equal (0, 0, 0)
    background = target[..., :3].any(axis=-1) if target.shape[2] >= 3 else np.ones(target.shape[:2], dtype=bool)
    if not background.any():
        return 1.0
    source = np.asarray(img)
    rows, cols = np.nonzero(background)
    if source.ndim < 3 or source.shape[2] < 3 or rows.max() >= source.shape[0] or cols.max() >= source.shape[1]:
        return 0.0
    r, g, b = (source[rows, cols, c] for c in range(3))
    return float(bool(np.all((g > r) & (g > b))))


@metric("increase_saturation")
@zero_on_crash
def increase_saturation(result: Any, expected: Any) -> float:
    """1 when the *expected* image's mean HSV saturation is higher than the result's.

    OSWorld's helper takes (image1, image2) and returns 1 when image2 is more saturated; called
    as a metric that is (result, expected), so the order is kept as OSWorld scores it.
    """
    pair = _open_pair(result, expected)
    return float(
        pair is not None
        and ImageStat.Stat(pair[0].convert("HSV").split()[1]).mean[0] < ImageStat.Stat(pair[1].convert("HSV").split()[1]).mean[0]
    )


@metric("decrease_brightness")
@zero_on_crash
def decrease_brightness(result: Any, expected: Any) -> float:
    """1 when the *expected* image's mean grey level is lower than the result's.

    OSWorld's helper takes (image1, image2) and returns 1 when image2 is darker; called as a
    metric that is (result, expected), so the order is kept as OSWorld scores it.
    """
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    a, b = (np.asarray(img.convert("L"), dtype=np.float64) for img in pair)
    return float(a.sum() / a.size > b.sum() / b.size)


@metric("compare_images")
@zero_on_crash
def compare_images(result: Any, expected: Any, reference_base_result: float | None = None) -> float:
    """Greyscale SSIM of the result and gold images, both Lanczos-resized to the smaller size.

    result, expected: image paths. "Smaller" is OSWorld's: the lexicographically smaller
    (width, height) pair. Images under 7 px on a side score 0; negative SSIM scores 0. Option
    ``reference_base_result`` (the SSIM an unedited image gets): below base + 0.01 scores 0,
    otherwise ``(ssim - base) / (1 - base)``.
    """
    if reference_base_result is not None and (
        isinstance(reference_base_result, bool)
        or not isinstance(reference_base_result, (int, float))
        or not 0 <= reference_base_result < 1
    ):
        raise UserError(
            f"metric 'compare_images': reference_base_result must be a number in [0, 1), got {reference_base_result!r}"
        )
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    grey_a, grey_b = (img.convert("L") for img in pair)
    size = min(grey_a.size, grey_b.size)
    a, b = (np.asarray(img.resize(size, Image.Resampling.LANCZOS)) for img in (grey_a, grey_b))
    from skimage.metrics import structural_similarity

    similarity = float(structural_similarity(a, b, win_size=SSIM_WINDOW, data_range=255))
    if reference_base_result is not None:
        if similarity < reference_base_result + BASE_RESULT_MARGIN:
            return 0.0
        similarity = (similarity - reference_base_result) / (1 - reference_base_result)
    return max(0.0, min(1.0, similarity))


@metric("compare_image_list")
@zero_on_crash
def compare_image_list(result: Any, expected: Any) -> float:
    """1 when each result image equals the gold image at the same position.

    result, expected: an image path or a list of paths, paired by position up to the shorter
    list (so empty lists pass, as in OSWorld). A missing image scores 0. A result of another
    size is Lanczos-resized to the gold's, and converted to the gold's mode; then no pixel may
    differ as Pillow's ``getbbox`` of the difference sees it (for RGBA that is the alpha band).
    """
    if not isinstance(result, list):
        result, expected = [result], [expected]
    for r, g in zip(result, expected, strict=False):
        if not r or not g:
            return 0.0
        pair = _open_pair(r, g)
        if pair is None:
            return 0.0
        img, gold = pair
        if img.size != gold.size:
            img = img.resize(gold.size, Image.Resampling.LANCZOS)
        if img.mode != gold.mode:
            img = img.convert(gold.mode)
        if ImageChops.difference(img, gold).getbbox():
            return 0.0
    return 1.0


# ---------------------------------------------------------------- single image


@metric("check_image_size")
@zero_on_crash
def check_image_size(result: Any, rules: Any) -> float:
    """1 when the image's width and/or height equal ``rules["width"]`` / ``rules["height"]``.

    result: image path; rules: ``{width?, height?, ignore_transparent?}``; with neither width nor
    height any readable image scores 1. The content's bounding box (non-transparent pixels)
    is measured instead of the canvas for an RGBA/LA image when ``ignore_transparent`` is set,
    and, as in OSWorld (an operator-precedence slip there, kept for equal scores), for any image
    with a transparency key whatever the flag.
    """
    name = "check_image_size"
    width = rule_value(rules, "width", name, default=None)
    height = rule_value(rules, "height", name, default=None)
    ignore_transparent = rule_value(rules, "ignore_transparent", name, default=False)
    img = _open(result)
    if img is None:
        return 0.0
    if (ignore_transparent and img.mode in ("RGBA", "LA")) or "transparency" in img.info:
        box = img.convert("RGBA").getchannel("A").getbbox()
        actual_w, actual_h = (0, 0) if box is None else (box[2] - box[0], box[3] - box[1])
    else:
        actual_w, actual_h = img.size
    return float((width is None or actual_w == width) and (height is None or actual_h == height))


@metric("check_image_file_size")
@zero_on_crash
def check_image_file_size(result: Any, rules: Any) -> float:
    """1 when the result file is smaller than ``rules["max_size"]`` bytes (strictly; the file is not decoded).

    result: image path; a missing file scores 0.
    """
    max_size = rule_value(rules, "max_size", "check_image_file_size")
    if isinstance(max_size, bool) or not isinstance(max_size, (int, float)):
        raise UserError(f"metric 'check_image_file_size': rules 'max_size' must be a number, got {max_size!r}")
    if not isinstance(result, (str, os.PathLike)) or not result or not os.path.isfile(result):
        return 0.0
    return float(os.path.getsize(result) < max_size)


@metric("check_triangle_position")
@zero_on_crash
def check_triangle_position(result: Any) -> float:
    """1 when the "triangle" colour's centroid is within 5% of the image centre on both axes.

    result: image path. Colours are the image's raw pixel values (RGBA counts alpha); as in
    OSWorld the "triangle" is the colour at index 1 of the colours sorted by ascending pixel
    count (with two colours that is the more common one, the background). Greyscale or palette
    images and single-colour images score 0 (OSWorld raises).
    """
    img = _open(result)
    if img is None:
        return 0.0
    pixels = np.array(img)
    if pixels.ndim < 3:
        return 0.0
    colours, counts = np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0, return_counts=True)
    if len(colours) < 2:
        return 0.0
    colour = colours[np.argsort(counts)][1]
    centroid = np.argwhere(np.all(pixels == colour, axis=2)).mean(axis=0)
    shape = np.array(pixels.shape[:2])
    return float(bool(np.all(np.abs(centroid - shape / 2) < EDGE_FRACTION * shape)))


@metric("check_textbox_on_leftside")
@zero_on_crash
def check_textbox_on_leftside(result: Any) -> float:
    """1 when the leftmost dark pixel (grey < 128, i.e. text) lies within the left 5% of the image.

    result: image path; converted to grey as Pillow does (alpha dropped). No dark pixel scores 0.
    """
    img = _open(result)
    if img is None:
        return 0.0
    dark_columns = np.flatnonzero((np.asarray(img.convert("L")) < DARK_LEVEL).any(axis=0))
    leftmost = dark_columns[0] if dark_columns.size else img.width
    return float(leftmost < img.width * EDGE_FRACTION)


@metric("check_file_exists_and_structure_sim")
@zero_on_crash
def check_file_exists_and_structure_sim(result: Any, expected: Any) -> float:
    """1 when the exported image exists and has the source's structure (same size, RGB SSIM ≥ 0.9).

    OSWorld's GIMP export task (77b8ab4d); a missing export scores 0.
    """
    pair = _open_pair(result, expected)
    return float(pair is not None and _same_structure(*pair))
