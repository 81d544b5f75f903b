"""OSWorld's single-property presentation checks: slide-number colours, strikethrough, transitions,
orientation, image placement, fill colours."""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
import zipfile
from math import sqrt
from pathlib import Path
from typing import Any

from pptx.util import Inches

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.crash import zero_on_crash
from mcpworld.evaluation.metrics.general import rule_value
from mcpworld.evaluation.metrics.slides.reading import INHERITED, NS, PICTURE, SOLID, open_presentation
from mcpworld.evaluation.registry import metric

log = logging.getLogger(__name__)


@metric("check_slide_numbers_color")
@zero_on_crash
def check_slide_numbers_color(result: Any, expected: Any = None) -> float:
    """1 when the slides show a number and the master's number placeholder text is red (FF0000).

    result: local pptx path. The first shape whose text is all digits decides; the colour is the
    first paragraph's font colour of the first master placeholder whose text is ``<number>``.
    No numeric shape (OSWorld returns None, not a score) scores 0.
    """
    prs = open_presentation(result)
    if prs is None:
        return 0.0
    for slide in prs.slides:
        for shape in slide.shapes:
            if hasattr(shape, "text") and shape.text.isdigit():
                color = _master_number_color(prs)
                return float(bool(color) and color.rgb == (255, 0, 0))
    return 0.0


def _master_number_color(prs: Any) -> Any:
    for master in prs.slide_masters:
        for placeholder in master.placeholders:
            if placeholder.has_text_frame and placeholder.text == "<number>":
                paragraphs = placeholder.text_frame.paragraphs
                if paragraphs:
                    return paragraphs[0].font.color
    return None


def _indices(rules: Any, key: str, name: str) -> list[Any]:
    value = rule_value(rules, key, name)
    if not isinstance(value, list):
        raise UserError(f"metric {name!r}: rules {key!r} must be a list of indices, got {value!r}")
    return value


@metric("check_strikethrough")
@zero_on_crash
def check_strikethrough(result: Any, rules: Any) -> float:
    """1 when the first run of each chosen paragraph carries a ``strike`` attribute.

    result: local pptx path. rules: ``{slide_index_s, shape_index_s, paragraph_index_s}``, lists
    of 0-based indices; every combination is checked. As in OSWorld only each paragraph's first
    run is looked at and any ``strike`` value counts (even ``noStrike``); a missing index scores 0.
    """
    name = "check_strikethrough"
    slides, shapes, paragraphs = (_indices(rules, k, name) for k in ("slide_index_s", "shape_index_s", "paragraph_index_s"))
    prs = open_presentation(result)
    if prs is None:
        return 0.0
    for s in slides:
        slide = prs.slides[s]
        for h in shapes:
            paras = slide.shapes[h].text_frame.paragraphs
            for p in paragraphs:
                if "strike" not in paras[p].runs[0].font._element.attrib:
                    return 0.0
    return 1.0


@metric("check_transition")
@zero_on_crash
def check_transition(result: Any, rules: Any) -> float:
    """1 when ``ppt/slides/slide<slide_idx+1>.xml`` has a ``p:transition`` containing ``p:<transition_type>``.

    result: local pptx path. rules: ``{slide_idx: int, transition_type: str}`` (e.g. ``dissolve``,
    matched case-sensitively). As in OSWorld the slide is found by its part name, and only the
    first transition element of the slide is looked at.
    """
    name = "check_transition"
    index = rule_value(rules, "slide_idx", name)
    kind = rule_value(rules, "transition_type", name)
    if isinstance(index, bool) or not isinstance(index, int):
        raise UserError(f"metric {name!r}: rules 'slide_idx' must be an integer, got {index!r}")
    if not isinstance(kind, str) or not kind:
        raise UserError(f"metric {name!r}: rules 'transition_type' must be a transition name, got {kind!r}")
    if not isinstance(result, (str, Path)) or not str(result) or not Path(result).is_file():
        return 0.0
    with zipfile.ZipFile(result) as archive:
        part = f"ppt/slides/slide{index + 1}.xml"
        if part not in archive.namelist():
            return 0.0
        with archive.open(part) as handle:
            root = ET.parse(handle).getroot()
    transition = root.find(".//p:transition", NS)
    return float(transition is not None and transition.find(f".//p:{kind}", NS) is not None)


@metric("check_slide_orientation_Portrait")
@zero_on_crash
def check_slide_orientation_Portrait(result: Any, expected: Any = None) -> float:
    """1 when the presentation's slides are portrait (height greater than width). result: local pptx path."""
    prs = open_presentation(result)
    if prs is None:
        return 0.0
    return float(prs.slide_width < prs.slide_height)


# ---------------------------------------------------------------------------------------------
# pictures, backgrounds and slide numbers (OSWorld Impress tasks)

STRETCH_TOLERANCE = Inches(0.5)


@metric("check_image_stretch_and_center")
@zero_on_crash
def check_image_stretch_and_center(result: Any, expected: Any) -> float:
    """1 when the first slide's picture now covers the whole slide, centred (within half an inch).

    expected: the original pptx; its first slide's first (non-placeholder) picture is the one to
    stretch. Of the result's first-slide pictures with the same image bytes the last one
    decides: its width and height must be the slide's and its offsets centre it, each within 0.5 in.
    """
    prs, original = open_presentation(result), open_presentation(expected)
    if prs is None or original is None:
        return 0.0
    pictures = [s for s in original.slides[0].shapes if s.shape_type == PICTURE]
    candidates = [s for s in prs.slides[0].shapes if s.shape_type == PICTURE]
    if not pictures:
        return 0.0
    blob = pictures[0].image.blob
    stretched = None
    for shape in candidates:
        if shape.image.blob == blob:
            stretched = shape
    if stretched is None:
        return 0.0
    width, height = original.slide_width, original.slide_height
    return float(
        abs(stretched.width - width) <= STRETCH_TOLERANCE
        and abs(stretched.height - height) <= STRETCH_TOLERANCE
        and abs(stretched.left - (width - stretched.width) / 2) <= STRETCH_TOLERANCE
        and abs(stretched.top - (height - stretched.height) / 2) <= STRETCH_TOLERANCE
    )


MAX_RGB_DISTANCE = sqrt(3 * 255**2)


def _rgb_or_none(color: Any) -> Any:
    try:
        return color.rgb
    except Exception:
        return None


@metric("evaluate_presentation_fill_to_rgb_distance")
@zero_on_crash
def evaluate_presentation_fill_to_rgb_distance(result: Any, rules: Any) -> float:
    """1 minus the mean, over slides, of the distance of each slide's background to ``rules["rgb"]``.

    A slide's distance is the Euclidean RGB distance of its solid background colour (its own,
    else the master's when the slide has no fill) to the target, divided by the largest
    possible; a background that is not a solid RGB colour, or that still is
    ``rules["original_rgb"]`` when given, counts as 1. No slides scores 0.
    """
    name = "evaluate_presentation_fill_to_rgb_distance"
    target = rule_value(rules, "rgb", name)
    original = rule_value(rules, "original_rgb", name, default=None)
    if not isinstance(target, (list, tuple)) or len(target) != 3:
        raise UserError(f"metric {name!r}: rules 'rgb' must be [r, g, b], got {target!r}")
    prs = open_presentation(result)
    if prs is None:
        return 0.0

    def distance(slide: Any) -> float:
        fill = slide.background.fill
        if fill.type == INHERITED:
            fill = slide.slide_layout.slide_master.background.fill
        elif fill.type != SOLID:
            return 1.0
        if fill.type != SOLID:
            return 1.0
        color = _rgb_or_none(fill.fore_color)
        if color is None:
            return 1.0
        if original is not None and tuple(color) == tuple(original):
            return 1.0
        return sqrt(sum((a - b) ** 2 for a, b in zip(color, target, strict=False))) / MAX_RGB_DISTANCE

    slides = list(prs.slides)
    return 1.0 - sum(distance(slide) for slide in slides) / len(slides)


COLOR_MARGIN = 50  # a channel must exceed the others by this much for the colour to be "red" …
_COLOR_FAMILIES = {
    "red": lambda r, g, b: r > g + COLOR_MARGIN and r > b + COLOR_MARGIN,
    "green": lambda r, g, b: g > r + COLOR_MARGIN and g > b + COLOR_MARGIN,
    "blue": lambda r, g, b: b > g + COLOR_MARGIN and b > r + COLOR_MARGIN,
    "black": lambda r, g, b: r < COLOR_MARGIN and g < COLOR_MARGIN and b < COLOR_MARGIN,
}


def _master_number_hex(root: ET.Element) -> str | None:
    """OSWorld's guess at the slide-number colour in slideMaster1.xml, most specific first."""

    def first_rgb(elem: ET.Element) -> str | None:
        found = elem.find(".//a:solidFill//a:srgbClr", NS)
        return found.get("val") if found is not None else None

    number = root.find('.//p:ph[@type="sldNum"]', NS)
    if number is not None and first_rgb(number):
        return first_rgb(number)
    for placeholder in root.findall(".//p:ph", NS):
        if placeholder.get("type") in ("sldNum", "ftr", "dt") and first_rgb(placeholder):
            return first_rgb(placeholder)
    for elem in reversed(root.findall(".//a:rPr//a:solidFill//a:srgbClr", NS)):
        if elem.get("val") and elem.get("val") != "000000":
            return elem.get("val")
    colors = root.findall(".//a:solidFill//a:srgbClr", NS)
    for elem in reversed(colors):
        if elem.get("val") and elem.get("val") != "000000":
            return elem.get("val")
    return colors[-1].get("val") if colors else None


@metric("check_page_number_colors")
@zero_on_crash
def check_page_number_colors(result: Any, rules: Any) -> float:
    """1 when the first slide master's slide-number colour is in the family ``rules["color"]`` (red, green, blue, black).

    A colour is red/green/blue when that channel exceeds both others by more than 50, black
    when every channel is below 50. The colour is found as OSWorld finds it in
    ``slideMaster1.xml``: an RGB fill inside the ``sldNum`` placeholder element, else inside a
    ``sldNum``/``ftr``/``dt`` one, else the last non-black RGB run colour, else the last
    non-black (or last) RGB fill anywhere in the master.
    """
    name = "check_page_number_colors"
    family = rule_value(rules, "color", name)
    if family not in _COLOR_FAMILIES:
        raise UserError(f"metric {name!r}: rules 'color' must be one of {', '.join(_COLOR_FAMILIES)}, got {family!r}")
    if not isinstance(result, (str, Path)) or not str(result) or not Path(result).is_file():
        return 0.0
    with zipfile.ZipFile(result) as archive, archive.open("ppt/slideMasters/slideMaster1.xml") as handle:
        root = ET.parse(handle).getroot()
    value = _master_number_hex(root)
    if value is None:
        return 0.0
    value = value.lstrip("#")
    if len(value) != 6:
        return 0.0
    try:
        rgb = (int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16))
    except ValueError:
        return 0.0
    return float(_COLOR_FAMILIES[family](*rgb))
