"""``compare_pptx_files``: OSWorld's slide-by-slide comparison of two presentations, with its options
(which properties to examine) and its quirks kept."""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from typing import Any

from lxml import etree
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pptx.enum.text import PP_ALIGN

from mcpworld.evaluation.metrics.crash import zero_on_crash
from mcpworld.evaluation.metrics.slides.reading import A_NS, FREEFORM, NS, PICTURE, TABLE, background_rgb, open_presentation
from mcpworld.evaluation.registry import metric

log = logging.getLogger(__name__)


_EXAMINE_DEFAULTS = {
    "examine_number_of_slides": True,
    "examine_shape": True,
    "examine_text": True,
    "examine_indent": True,
    "examine_font_name": True,
    "examine_font_size": True,
    "examine_font_bold": True,
    "examine_font_italic": True,
    "examine_color_rgb": True,
    "examine_font_underline": True,
    "examine_strike_through": True,
    "examine_alignment": True,
    "examine_title_bottom_position": False,
    "examine_table_bottom_position": False,
    "examine_run_count": True,
    "examine_right_position": False,
    "examine_top_position": False,
    "examine_shape_for_shift_size": False,
    "examine_image_size": False,
    "examine_modify_height": False,
    "examine_bullets": True,
    "examine_background_color": True,
    "examine_note": True,
}
# OSWorld's hard-coded task constants for its position toggles (EMU) and the one exempt text.
TITLE_MIN_TOP = 3600000
RIGHT_MIN_LEFT = 4320000
PICTURE_MAX_TOP = 1980000
SHIFT_EXEMPT_TEXT = "Elaborate on what you want to discuss."


class _Mismatch(Exception):
    """Raised inside the comparison at the first difference (scored 0)."""


def _has_text(shape: Any) -> bool:
    return hasattr(shape, "text")


def _text_shapes(shapes: Any) -> list[Any]:
    """Shapes with text, depth first, descending into groups."""
    found = []
    for shape in shapes:
        if hasattr(shape, "text") and hasattr(shape, "text_frame"):
            found.append(shape)
        if hasattr(shape, "shapes"):
            found.extend(_text_shapes(shape.shapes))
    return found


def _paired_runs(p1: Any, p2: Any) -> tuple[list[Any], list[Any]]:
    """The two paragraphs' runs; when both are blank only runs with visible text (0 vs 1 empty run)."""
    if (p1.text or "").strip() == "" and (p2.text or "").strip() == "":
        return [r for r in p1.runs if (r.text or "").strip()], [r for r in p2.runs if (r.text or "").strip()]
    return p1.runs, p2.runs


def _merge_alike(runs: list[Any]) -> list[Any]:
    """Adjacent runs with identical run properties collapsed to the first (mcpworld's normalize_runs)."""
    merged: list[Any] = []
    last: bytes | None = None
    for run in runs:
        props = run._r.rPr
        key = etree.tostring(props) if props is not None else b""
        if not merged or key != last:
            merged.append(run)
        last = key
    return merged


def _not_set_or_false(value: Any) -> bool:
    return value is None or value is False


def _toggle_differs(a: Any, b: Any) -> bool:
    """Bold/italic differ, where unset and False are the same."""
    return a != b and not (_not_set_or_false(a) and _not_set_or_false(b))


def _underline_differs(a: Any, b: Any) -> bool:
    """Two set underline values differ, or one is True and the other unset."""
    if a == b:
        return False
    return (a is not None and b is not None) or (a is None and b is True) or (a is True and b is None)


def _colors_differ(run1: Any, run2: Any) -> bool:
    c1, c2 = run1.font.color, run2.font.color
    return hasattr(c1, "rgb") and hasattr(c2, "rgb") and c1.rgb != c2.rgb


def _slide_bullets(xml: str) -> list[tuple[Any, str | None, str]]:
    """(level, bullet char, text) of each paragraph with visible text in a slide's XML (a buChar
    without ``char`` gives None)."""
    bullets = []
    for paragraph in ET.fromstring(xml).iter(f"{{{A_NS}}}p"):
        props = paragraph.find("a:pPr", NS)
        level: str | None = "No Level"
        char: str | None = "No Bullet"
        if props is not None:
            level = props.get("lvl")
            bu = props.find("a:buChar", NS)
            char = bu.get("char") if bu is not None else "No Bullet"
        text = "".join(t.text or "" for t in paragraph.iter(f"{{{A_NS}}}t"))
        if text.strip():
            bullets.append((level, char, text))
    return bullets


def _bullets_match(b1: list[tuple[Any, str | None, str]], b2: list[tuple[Any, str | None, str]]) -> bool:
    """Same texts and bullet chars; levels compared (unset = '0') only where a bullet shows."""
    if len(b1) != len(b2):
        return False
    for (l1, c1, t1), (l2, c2, t2) in zip(b1, b2, strict=True):
        if t1 != t2 or c1 != c2:
            return False
        if (c1 != "No Bullet" or c2 != "No Bullet") and ("0" if l1 is None else l1) != ("0" if l2 is None else l2):
            return False
    return True


class _Comparison:
    def __init__(self, options: dict[str, Any]):
        self.opt = {key: options.get(key, default) for key, default in _EXAMINE_DEFAULTS.items()}
        self.debug = options.get("enable_debug", True)
        self.tolerance = options.get("approximately_tolerance", 0.005)
        self.normalize_runs = options.get("normalize_runs", False)

    def check(self, failed: Any) -> None:
        if failed:
            raise _Mismatch

    def close(self, a: Any, b: Any) -> bool:
        if a == b or (a == 0 and b == 0):
            return True
        if a == 0 or b == 0:
            return False
        return abs(a - b) / max(abs(a), abs(b)) <= self.tolerance

    def same_box(self, s1: Any, s2: Any) -> bool:
        """Left, top, width and height equal within the tolerance (evaluated in that order, lazily)."""
        return all(self.close(getattr(s1, attr), getattr(s2, attr)) for attr in ("left", "top", "width", "height"))

    def presentations(self, prs1: Any, prs2: Any) -> None:
        self.check(len(prs1.slides) != len(prs2.slides) and self.opt["examine_number_of_slides"])
        for number, (slide1, slide2) in enumerate(zip(prs1.slides, prs2.slides, strict=False), 1):
            self.slide(number, slide1, slide2)

    def slide(self, number: int, slide1: Any, slide2: Any) -> None:
        o = self.opt
        self.check(background_rgb(slide1) != background_rgb(slide2) and o["examine_background_color"])
        notes1, notes2 = (s.notes_slide.notes_text_frame.text for s in (slide1, slide2))
        self.check(notes1.strip() != notes2.strip() and o["examine_note"])
        texts1, texts2 = _text_shapes(slide1.shapes), _text_shapes(slide2.shapes)
        self.check(len(slide1.shapes) != len(slide2.shapes))
        self.bullets_checked = False
        for shape1, shape2 in zip(slide1.shapes, slide2.shapes, strict=True):
            self.shape(number, shape1, shape2)
        if o["examine_alignment"] and len(texts1) == len(texts2):
            for t1, t2 in zip(texts1, texts2, strict=True):
                self.check(t1.text.strip() != t2.text.strip() and o["examine_text"])
                self.check(len(t1.text_frame.paragraphs) != len(t2.text_frame.paragraphs))
                for p1, p2 in zip(t1.text_frame.paragraphs, t2.text_frame.paragraphs, strict=True):
                    self.alignment(p1, p2)
        else:
            self.check(len(texts1) != len(texts2))

    def shape(self, number: int, s1: Any, s2: Any) -> None:
        o = self.opt
        if self.debug:  # OSWorld's debug log reads both shape types (python-pptx may raise on odd shapes)
            s1.shape_type, s2.shape_type  # noqa: B018 - evaluated for its error
        both_text = _has_text(s1) and _has_text(s2)
        if o["examine_title_bottom_position"]:
            if both_text and s1.text == s2.text:
                self.check(s1.text == "Product Comparison" and (s1.top <= s2.top or s1.top < TITLE_MIN_TOP))
            else:
                self.check(not self.same_box(s1, s2))
        if o["examine_table_bottom_position"]:
            if number == 3 and s1.shape_type == TABLE and s2.shape_type == TABLE:
                self.check(s1.top <= s2.top or s1.top < TITLE_MIN_TOP)
            else:
                self.check(not self.same_box(s1, s2))
        if o["examine_right_position"] and number == 2 and not _has_text(s1) and not _has_text(s2):
            self.check(s1.left <= s2.left or s1.left < RIGHT_MIN_LEFT)
        if o["examine_top_position"] and number == 2 and s1.shape_type == PICTURE and s2.shape_type == PICTURE:
            self.check(s1.top >= s2.top or s1.top > PICTURE_MAX_TOP)
        if o["examine_shape_for_shift_size"] and not self.same_box(s1, s2):
            self.check(not (both_text and s1.text == s2.text and s1.text == SHIFT_EXEMPT_TEXT))
        # Geometry is compared even when examine_shape is off (a failure there is what raises).
        moved = not self.same_box(s1, s2)
        blank = all(not getattr(s, "text", None) or (s.text or "").strip() == "" for s in (s1, s2))
        self.check(moved and o["examine_shape"] and not blank)
        if o["examine_image_size"]:
            if s1.shape_type == PICTURE and s2.shape_type == PICTURE:
                self.check(not self.close(s1.width, s2.width) or not self.close(s1.height, s2.height))
            else:
                self.check(not self.same_box(s1, s2))
        if o["examine_modify_height"]:
            if (not _has_text(s1) and not _has_text(s2)) or (s1.shape_type == FREEFORM and s2.shape_type == FREEFORM):
                self.check(not self.close(s1.height, s2.height))
            else:
                self.check(not self.same_box(s1, s2))
        if s1.shape_type == MSO_SHAPE_TYPE.TABLE:
            self.table(s1.table, s2.table)
        if both_text:
            self.text_frame(s1, s2)

    def table(self, t1: Any, t2: Any) -> None:
        """Cells: paragraph and run counts, colour; bold, italic and underline always (OSWorld ignores those toggles here)."""
        o = self.opt
        self.check(len(t1.rows) != len(t2.rows) or len(t1.columns) != len(t2.columns))
        for r in range(len(t1.rows)):
            for c in range(len(t1.columns)):
                paras1, paras2 = t1.cell(r, c).text_frame.paragraphs, t2.cell(r, c).text_frame.paragraphs
                self.check(len(paras1) != len(paras2))
                for p1, p2 in zip(paras1, paras2, strict=True):
                    runs1, runs2 = _paired_runs(p1, p2)
                    self.check(len(runs1) != len(runs2) and o["examine_run_count"])
                    for run1, run2 in zip(runs1, runs2, strict=False):
                        self.check(_colors_differ(run1, run2) and o["examine_color_rgb"])
                        self.check(_toggle_differs(run1.font.bold, run2.font.bold))
                        self.check(_toggle_differs(run1.font.italic, run2.font.italic))
                        self.check(_underline_differs(run1.font.underline, run2.font.underline))

    def alignment(self, p1: Any, p2: Any) -> None:
        a1 = PP_ALIGN.LEFT if p1.alignment is None else p1.alignment  # unset means left
        a2 = PP_ALIGN.LEFT if p2.alignment is None else p2.alignment
        self.check(a1 != a2)

    def text_frame(self, s1: Any, s2: Any) -> None:
        o = self.opt
        self.check(s1.text.strip() != s2.text.strip() and o["examine_text"])
        paras1, paras2 = s1.text_frame.paragraphs, s2.text_frame.paragraphs
        self.check(len(paras1) != len(paras2))
        for p1, p2 in zip(paras1, paras2, strict=True):
            if o["examine_alignment"]:
                self.alignment(p1, p2)
            self.check(p1.text != p2.text and o["examine_text"])
            if p1.level != p2.level and o["examine_indent"]:  # levels 0 and 1 look the same
                self.check(not ({p1.level or 0, p2.level or 0} <= {0, 1}))
            runs1, runs2 = _paired_runs(p1, p2)
            if self.normalize_runs:
                runs1, runs2 = _merge_alike(runs1), _merge_alike(runs2)
            self.check(len(runs1) != len(runs2) and o["examine_run_count"])
            for run1, run2 in zip(runs1, runs2, strict=False):
                self.run(run1, run2)

    def run(self, r1: Any, r2: Any) -> None:
        o = self.opt
        f1, f2 = r1.font, r2.font
        self.check(f1.name != f2.name and o["examine_font_name"])
        self.check(f1.size != f2.size and o["examine_font_size"])
        self.check(o["examine_font_bold"] and _toggle_differs(f1.bold, f2.bold))
        self.check(o["examine_font_italic"] and _toggle_differs(f1.italic, f2.italic))
        self.check(_colors_differ(r1, r2) and o["examine_color_rgb"])
        self.check(o["examine_font_underline"] and _underline_differs(f1.underline, f2.underline))
        strike1, strike2 = (f._element.attrib.get("strike", "noStrike") for f in (f1, f2))
        self.check(strike1 != strike2 and o["examine_strike_through"])
        if o["examine_bullets"] and not self.bullets_checked:
            # OSWorld compares the bullets of the whole slide at each run; once per slide is the same.
            try:
                same = _bullets_match(_slide_bullets(r1.part.blob.decode("utf-8")), _slide_bullets(r2.part.blob.decode("utf-8")))
            except Exception:
                same = True
            self.check(not same)
            self.bullets_checked = True


@metric("compare_pptx_files")
@zero_on_crash
def compare_pptx_files(result: Any, expected: Any = None, **options: Any) -> float:
    """1 when the result pptx matches the gold pptx slide by slide, shape by shape, run by run (OSWorld's rules).

    result, expected: local pptx paths (agent's file, gold file). Options as in OSWorld, with its
    defaults; any other key is ignored as OSWorld ignores it. On by default: ``examine_number_of_slides``,
    ``examine_shape`` (left/top/width/height within ``approximately_tolerance``, relative,
    default 0.005; shapes without text on both sides are exempt), ``examine_text``,
    ``examine_indent`` (paragraph levels; 0 and 1 count as equal), ``examine_alignment`` (unset =
    left; also over all text shapes including group children), ``examine_run_count``,
    ``examine_font_name`` / ``_size`` / ``_bold`` / ``_italic`` / ``_underline``,
    ``examine_color_rgb`` (only when both runs have an RGB colour), ``examine_strike_through``,
    ``examine_bullets`` (slide-wide bullet chars and levels), ``examine_background_color`` (solid
    slide background, else the master's), ``examine_note``. Off by default: ``examine_image_size``,
    ``examine_modify_height`` and OSWorld's task-specific position checks
    (``examine_title_bottom_position``, ``examine_table_bottom_position``, ``examine_right_position``,
    ``examine_top_position``, ``examine_shape_for_shift_size``) with their hard-coded constants.
    The shape count per slide must match whatever the options; table cells always compare bold,
    italic and underline. mcpworld extension (OSWorld ignores the key): ``normalize_runs: true``
    collapses adjacent runs with identical formatting before runs are paired. Deliberate difference:
    a missing result or gold file scores 0 (OSWorld's ``Presentation(None)`` silently opened
    python-pptx's default template and compared that).
    """
    prs1, prs2 = open_presentation(result), open_presentation(expected)
    if prs1 is None or prs2 is None:
        return 0.0
    try:
        _Comparison(options).presentations(prs1, prs2)
    except _Mismatch:
        return 0.0
    return 1.0


# ---------------------------------------------------------------------------------------------
# single-file checks
