"""Image metrics (OSWorld ``gimp.py`` and ``vlc.compare_images`` semantics, anchor bugs fixed).

``result`` is the local path of the image the agent produced (a getter's cached copy) and
``expected`` the gold or original image path, unless a metric says otherwise. A ``None`` path, a
missing file or a file Pillow cannot decode scores 0; only a malformed rules/options object (the
task author's mistake) raises UserError.

Common conventions:

- Pixels are compared as 8-bit RGB. Transparent pixels are composited over white (the reference
  simply dropped alpha, so the arbitrary colour under a fully transparent pixel counted); 16-bit
  greyscale is scaled down to 8 bits rather than clipped.
- Images of different sizes score 0, except in the metrics that resize by design
  (``check_structure_sim_resized``, ``compare_images``).
- SSIM is scikit-image's ``structural_similarity`` (7x7 uniform window, RGB channels averaged,
  data range 255), imported lazily because it is slow to import. Identical images score 1 at any
  size; otherwise an image under 3 px on a side has no measurable structure and scores 0.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from PIL import Image, ImageOps

from mcpworld.errors import UserError
from mcpworld.evaluation.metrics.general import rule_value
from mcpworld.evaluation.registry import metric

# Thresholds from the reference (waa_osworld.md §3.5) and OSWorld's gimp.py.
SSIM_THRESHOLD = 0.9
SSIM_THRESHOLD_RELAXED = 0.85  # check_structure_sim_with_threshold
MIRROR_SSIM_THRESHOLD = 0.99  # a GIMP flip is exact up to re-encoding
CONTRAST_SSIM_THRESHOLD = 0.65  # a contrast change moves SSIM's contrast term a lot
BRIGHTNESS_MSE_THRESHOLD = 0.03  # on [0, 1] pixels after equalising mean brightness
NORMALISED_BRIGHTNESS = 128.0
BASE_RESULT_MARGIN = 0.01  # compare_images with reference_base_result: must beat the base by this
EDGE_FRACTION = 0.05  # "near the centre" / "on the left side": within 5% of the image size
DARK_LEVEL = 128  # a grey level below this counts as dark (text)
SSIM_WINDOW = 7
BACKGROUND = (255, 255, 255, 255)


# ---------------------------------------------------------------- loading and conversion


def _open(path: Any) -> Image.Image | None:
    """The decoded image at ``path`` (first frame), or None when there is no readable image."""
    if not isinstance(path, (str, os.PathLike)) or not os.path.isfile(path):
        return None
    try:
        with Image.open(path) as img:
            img.load()
            return img.copy()
    except Exception:  # noqa: BLE001 - any decoder failure means "no usable image"
        return None


def _open_pair(result: Any, expected: Any) -> tuple[Image.Image, Image.Image] | None:
    a, b = _open(result), _open(expected)
    return None if a is None or b is None else (a, b)


def _has_alpha(img: Image.Image) -> bool:
    return img.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in img.info


def _flatten(img: Image.Image) -> Image.Image:
    """8-bit RGB: transparency composited over white, high-bit-depth greys scaled to 0-255."""
    if img.mode.startswith("I") or img.mode == "F":
        values = np.asarray(img, dtype=np.float64)
        if img.mode.startswith("I;16") or (values.size and values.max() > 255):
            values = values / 257.0
        img = Image.fromarray(np.clip(np.rint(values), 0, 255).astype(np.uint8))
    if _has_alpha(img):
        rgba = img.convert("RGBA")
        return Image.alpha_composite(Image.new("RGBA", rgba.size, BACKGROUND), rgba).convert("RGB")
    return img.convert("RGB")


def _rgb(img: Image.Image) -> np.ndarray:
    return np.asarray(_flatten(img))


def _grey(img: Image.Image) -> np.ndarray:
    return np.asarray(_flatten(img).convert("L"))


def _hsv(img: Image.Image) -> np.ndarray:
    return np.asarray(_flatten(img).convert("HSV"))


def _brightness(img: Image.Image) -> float:
    """Mean grey level (0-255)."""
    return float(_grey(img).mean())


def _saturation(img: Image.Image) -> float:
    """Mean HSV saturation (0-255)."""
    return float(_hsv(img)[..., 1].mean())


# ---------------------------------------------------------------- similarity


def _ssim(a: np.ndarray, b: np.ndarray) -> float:
    """SSIM of two same-shape uint8 arrays (H×W or H×W×C); see the module docstring for tiny images."""
    if a.shape != b.shape:
        return 0.0
    if np.array_equal(a, b):
        return 1.0
    side = min(a.shape[0], a.shape[1])
    if side < 3:
        return 0.0
    from skimage.metrics import structural_similarity  # slow import: only when needed

    window = min(SSIM_WINDOW, side if side % 2 else side - 1)
    return float(
        structural_similarity(a, b, win_size=window, data_range=255, channel_axis=-1 if a.ndim == 3 else None)
    )


def _structure_same(a: Image.Image, b: Image.Image, threshold: float) -> bool:
    """RGB SSIM ≥ threshold; different sizes are never the same."""
    return a.size == b.size and _ssim(_rgb(a), _rgb(b)) >= threshold


def _threshold(value: Any, name: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not -1 <= value <= 1:
        raise UserError(f"metric {name!r}: {key} must be a number in [-1, 1], got {value!r}")
    return float(value)


def _ssim_metric(name: str, result: Any, expected: Any, threshold: Any) -> float:
    threshold = _threshold(threshold, name, "ssim_threshold")
    pair = _open_pair(result, expected)
    return float(pair is not None and _structure_same(*pair, threshold))


# ---------------------------------------------------------------- image vs image


@metric("check_structure_sim")
def check_structure_sim(result: Any, expected: Any, ssim_threshold: float = SSIM_THRESHOLD) -> float:
    """1 when the result image has the gold image's size and RGB SSIM ≥ 0.9 (option ``ssim_threshold``).

    result, expected: image paths.
    """
    return _ssim_metric("check_structure_sim", result, expected, ssim_threshold)


@metric("check_structure_sim_with_threshold")
def check_structure_sim_with_threshold(
    result: Any, expected: Any, ssim_threshold: float = SSIM_THRESHOLD_RELAXED
) -> float:
    """1 when the result image has the gold image's size and RGB SSIM ≥ ``ssim_threshold`` (default 0.85).

    result, expected: image paths.
    """
    return _ssim_metric("check_structure_sim_with_threshold", result, expected, ssim_threshold)


@metric("check_structure_sim_resized")
def check_structure_sim_resized(result: Any, expected: Any, ssim_threshold: float = SSIM_THRESHOLD) -> float:
    """1 when the result, cropped to its opaque content and resized to the gold size, has RGB SSIM ≥ 0.9.

    result, expected: image paths. For a result with transparency only the bounding box of its
    non-transparent pixels is compared (a resized layer on a larger canvas); a fully transparent
    result scores 0. Option ``ssim_threshold``.
    """
    threshold = _threshold(ssim_threshold, "check_structure_sim_resized", "ssim_threshold")
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    img, gold = pair
    if _has_alpha(img):
        img = img.convert("RGBA")
        box = img.getchannel("A").getbbox()
        if box is None:
            return 0.0
        img = img.crop(box)
    img = _flatten(img).resize(gold.size, Image.Resampling.LANCZOS)
    return float(_structure_same(img, gold, threshold))


@metric("check_image_mirror")
def check_image_mirror(result: Any, expected: Any, ssim_threshold: float = MIRROR_SSIM_THRESHOLD) -> float:
    """1 when the result is the original flipped left-right: SSIM(mirror(result), original) ≥ 0.99.

    result: the edited image path; expected: the original image path. Option ``ssim_threshold``.
    """
    threshold = _threshold(ssim_threshold, "check_image_mirror", "ssim_threshold")
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    img, original = pair
    return float(_structure_same(ImageOps.mirror(_flatten(img)), original, threshold))


def _normalised_brightness(img: Image.Image) -> np.ndarray:
    """RGB pixels in [0, 1], scaled so the mean grey level is 128 (an all-black image stays black)."""
    pixels = _rgb(img).astype(np.float64)
    mean = _brightness(img)
    if mean > 0:
        pixels = np.clip(pixels * (NORMALISED_BRIGHTNESS / mean), 0, 255)
    return pixels / 255.0


@metric("check_brightness_decrease_and_structure_sim")
def check_brightness_decrease_and_structure_sim(
    result: Any, expected: Any, threshold: float = BRIGHTNESS_MSE_THRESHOLD
) -> float:
    """1 when the result is darker than the original yet the same picture.

    result: the edited image path; expected: the original image path. "Darker": lower mean grey
    level. "Same picture" (as in the reference): after scaling both to the same mean brightness,
    the mean squared RGB difference on [0, 1] pixels is below ``threshold`` (default 0.03). The
    option keeps the reference's name and meaning (an MSE bound, not an SSIM bound).
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or threshold < 0:
        raise UserError(
            "metric 'check_brightness_decrease_and_structure_sim': threshold must be a non-negative number, "
            f"got {threshold!r}"
        )
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    img, original = pair
    if img.size != original.size or _brightness(img) >= _brightness(original):
        return 0.0
    mse = float(np.mean((_normalised_brightness(img) - _normalised_brightness(original)) ** 2))
    return float(mse < threshold)


@metric("check_saturation_increase_and_structure_sim")
def check_saturation_increase_and_structure_sim(
    result: Any, expected: Any, ssim_threshold: float = SSIM_THRESHOLD
) -> float:
    """1 when the result is more saturated than the original while hue and value keep their structure.

    result: the edited image path; expected: the original image path. Mean HSV saturation must
    rise, and the SSIM of the H channels and of the V channels must each be ≥ 0.9 (option
    ``ssim_threshold``).
    """
    threshold = _threshold(ssim_threshold, "check_saturation_increase_and_structure_sim", "ssim_threshold")
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    img, original = pair
    if img.size != original.size:
        return 0.0
    hsv, hsv_original = _hsv(img), _hsv(original)
    if hsv[..., 1].mean() <= hsv_original[..., 1].mean():
        return 0.0
    return float(all(_ssim(hsv[..., c], hsv_original[..., c]) >= threshold for c in (0, 2)))


@metric("check_contrast_increase_and_structure_sim")
def check_contrast_increase_and_structure_sim(
    result: Any, expected: Any, ssim_threshold: float = CONTRAST_SSIM_THRESHOLD
) -> float:
    """1 when the result has more contrast than the original and RGB SSIM ≥ 0.65 (option ``ssim_threshold``).

    result: the edited image path; expected: the original image path. Contrast is the standard
    deviation of all RGB values.
    """
    threshold = _threshold(ssim_threshold, "check_contrast_increase_and_structure_sim", "ssim_threshold")
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    img, original = pair
    if img.size != original.size or _rgb(img).std() <= _rgb(original).std():
        return 0.0
    return float(_structure_same(img, original, threshold))


@metric("check_palette_and_structure_sim")
def check_palette_and_structure_sim(result: Any, expected: Any, ssim_threshold: float = SSIM_THRESHOLD) -> float:
    """1 when the result is a palette (indexed, mode P) image and its RGB SSIM with the gold is ≥ 0.9.

    result, expected: image paths. Option ``ssim_threshold``.
    """
    threshold = _threshold(ssim_threshold, "check_palette_and_structure_sim", "ssim_threshold")
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    img, gold = pair
    return float(img.mode in ("P", "PA") and _structure_same(img, gold, threshold))


@metric("check_green_background")
def check_green_background(result: Any, expected: Any) -> float:
    """1 when every background pixel of the result is green (G above both R and B).

    result: the edited image path; expected: the original image path, whose non-black pixels mark
    the background. Different sizes, or an original with no non-black pixel, score 0 (the
    reference indexed pixels as [x, y], so it crashed or tested the wrong pixels on non-square images).
    """
    pair = _open_pair(result, expected)
    if pair is None:
        return 0.0
    img, original = pair
    if img.size != original.size:
        return 0.0
    background = _rgb(original).any(axis=-1)
    if not background.any():
        return 0.0
    r, g, b = (_rgb(img)[..., c].astype(np.int16) for c in range(3))
    green = (g > r) & (g > b)
    return float(green[background].all())


@metric("increase_saturation")
def increase_saturation(result: Any, expected: Any) -> float:
    """1 when the result image's mean HSV saturation is higher than the original's.

    result: the edited image path; expected: the original image path. (The reference helper took
    (original, edited); here the order follows every other metric: result first.)
    """
    pair = _open_pair(result, expected)
    return float(pair is not None and _saturation(pair[0]) > _saturation(pair[1]))


@metric("decrease_brightness")
def decrease_brightness(result: Any, expected: Any) -> float:
    """1 when the result image's mean grey level is lower than the original's.

    result: the edited image path; expected: the original image path. (The reference helper took
    (original, edited); here the order follows every other metric: result first.)
    """
    pair = _open_pair(result, expected)
    return float(pair is not None and _brightness(pair[0]) < _brightness(pair[1]))


@metric("compare_images")
def compare_images(result: Any, expected: Any, reference_base_result: float | None = None) -> float:
    """Greyscale SSIM of the result and gold images in [0, 1], after resizing both to the smaller size.

    result, expected: image paths. The common size is the smaller width and the smaller height
    (the reference took the lexicographically smaller (w, h) tuple, which can upscale one side).
    Negative SSIM scores 0. Option ``reference_base_result`` (in [0, 1), the SSIM an unedited
    image gets): below base + 0.01 scores 0, above it the score is ``(ssim - base) / (1 - base)``.
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
    a, b = (_flatten(img).convert("L") for img in pair)
    size = (min(a.width, b.width), min(a.height, b.height))
    a, b = (img if img.size == size else img.resize(size, Image.Resampling.LANCZOS) for img in (a, b))
    similarity = max(0.0, min(1.0, _ssim(np.asarray(a), np.asarray(b))))
    if reference_base_result is None:
        return similarity
    if similarity < reference_base_result + BASE_RESULT_MARGIN:
        return 0.0
    return min(1.0, (similarity - reference_base_result) / (1 - reference_base_result))


def _pixels(img: Image.Image) -> np.ndarray:
    """RGBA pixels with every fully transparent pixel set to (0, 0, 0, 0): invisible colour is ignored."""
    if not _has_alpha(img):
        img = _flatten(img)
    rgba = np.array(img.convert("RGBA"))
    rgba[rgba[..., 3] == 0] = 0
    return rgba


@metric("compare_image_list")
def compare_image_list(result: Any, expected: Any) -> float:
    """1 when each result image is pixel-for-pixel identical to the gold image at the same position.

    result, expected: an image path or a list of paths (pairs matched by position). Lists of
    different lengths, an empty list, any missing image, or any size difference score 0 (the
    reference silently compared only the shorter list's pairs and passed empty lists).
    """
    results = result if isinstance(result, (list, tuple)) else [result]
    golds = expected if isinstance(expected, (list, tuple)) else [expected]
    if not results or len(results) != len(golds):
        return 0.0
    for r, g in zip(results, golds):
        pair = _open_pair(r, g)
        if pair is None or pair[0].size != pair[1].size:
            return 0.0
        if not np.array_equal(_pixels(pair[0]), _pixels(pair[1])):
            return 0.0
    return 1.0


# ---------------------------------------------------------------- single image


def _content_size(img: Image.Image) -> tuple[int, int]:
    """(width, height) of the bounding box of the non-transparent pixels; (0, 0) if none."""
    box = img.convert("RGBA").getchannel("A").getbbox()
    return (0, 0) if box is None else (box[2] - box[0], box[3] - box[1])


def _optional_int(rules: Any, key: str, name: str) -> int | None:
    value = rule_value(rules, key, name, default=None)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise UserError(f"metric {name!r}: rules {key!r} must be a non-negative integer, got {value!r}")
    return value


@metric("check_image_size")
def check_image_size(result: Any, rules: Any) -> float:
    """1 when the image's width and/or height equal ``rules["width"]`` / ``rules["height"]``.

    result: image path; rules: ``{width?, height?, ignore_transparent?}``. With neither width nor
    height any readable image scores 1, as in OSWorld. With ``ignore_transparent: true`` an image
    with transparency is measured by the bounding box of its non-transparent pixels (the
    reference's operator-precedence bug applied that to every image with a transparency key,
    even without the flag).
    """
    name = "check_image_size"
    width, height = _optional_int(rules, "width", name), _optional_int(rules, "height", name)
    ignore_transparent = bool(rule_value(rules, "ignore_transparent", name, default=False))
    img = _open(result)
    if img is None:
        return 0.0
    actual_w, actual_h = _content_size(img) if ignore_transparent and _has_alpha(img) else img.size
    return float((width is None or actual_w == width) and (height is None or actual_h == height))


@metric("check_image_file_size")
def check_image_file_size(result: Any, rules: Any) -> float:
    """1 when the result is a readable image whose file is at most ``rules["max_size"]`` bytes.

    result: image path; rules: ``{max_size: bytes}``. The reference used a strict "<" and did not
    check that the file is an image; here the bound is inclusive and an undecodable file scores 0.
    """
    max_size = rule_value(rules, "max_size", "check_image_file_size")
    if isinstance(max_size, bool) or not isinstance(max_size, (int, float)) or max_size < 0:
        raise UserError(
            f"metric 'check_image_file_size': rules 'max_size' must be a non-negative number, got {max_size!r}"
        )
    if _open(result) is None:
        return 0.0
    return float(os.path.getsize(result) <= max_size)


@metric("check_triangle_position")
def check_triangle_position(result: Any) -> float:
    """1 when the triangle's centroid is within 5% of the image centre on both axes.

    result: image path. The background is the most common colour and the triangle the second most
    common (as in the reference); an image with a single colour scores 0.
    """
    img = _open(result)
    if img is None:
        return 0.0
    pixels = _rgb(img)
    colours, counts = np.unique(pixels.reshape(-1, 3), axis=0, return_counts=True)
    if len(colours) < 2:
        return 0.0
    triangle = colours[np.argsort(counts, kind="stable")[-2]]
    centroid = np.argwhere(np.all(pixels == triangle, axis=-1)).mean(axis=0)
    shape = np.array(pixels.shape[:2], dtype=np.float64)
    return float(np.all(np.abs(centroid - shape / 2) < EDGE_FRACTION * shape))


@metric("check_textbox_on_leftside")
def check_textbox_on_leftside(result: Any) -> float:
    """1 when the leftmost dark pixel (grey < 128, i.e. text) lies within the left 5% of the image.

    result: image path (transparent areas count as white). An image with no dark pixel scores 0.
    """
    img = _open(result)
    if img is None:
        return 0.0
    dark_columns = np.flatnonzero((_grey(img) < DARK_LEVEL).any(axis=0))
    return float(dark_columns.size > 0 and dark_columns[0] < img.width * EDGE_FRACTION)


@metric("check_file_exists_and_structure_sim")
def check_file_exists_and_structure_sim(result: Any, expected: Any) -> float:
    """1 when the exported image exists and has the source's structure (same size, RGB SSIM ≥ 0.9).

    OSWorld's GIMP export task (77b8ab4d): ``check_structure_sim`` under that task's name; a
    missing export scores 0.
    """
    return _ssim_metric("check_file_exists_and_structure_sim", result, expected, SSIM_THRESHOLD)
