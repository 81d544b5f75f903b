"""Presentation (pptx) metrics, read with python-pptx (OSWorld's Impress ``slides.py``).

Every metric scores a missing or unreadable presentation (``None``, a path that is not a file, a
file python-pptx cannot open) as 0 and never raises for it. The anchor called
``Presentation(None)`` for a missing file, which silently opens python-pptx's *default template*;
here a presentation is only ever opened from an existing file. A malformed ``rules`` object or an
unknown option is the task author's mistake and raises UserError naming the metric and the key.

Formatting is read from the OOXML itself (``a:rPr`` / ``a:pPr`` / ``p:bg``) wherever python-pptx
has no read-only accessor: python-pptx's ``font.color`` and ``background.fill`` rewrite the XML
they inspect.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from lxml import etree
from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER
from pptx.enum.text import PP_ALIGN
from pptx.oxml.ns import qn
from pptx.shapes.group import GroupShape
from pptx.shapes.picture import Picture

from mcpworld.errors import UserError
from mcpworld.evaluation.metrics.general import rule_value
from mcpworld.evaluation.registry import metric

log = logging.getLogger(__name__)

_TRUE = ("1", "true", "on")


def _open_presentation(path: Any) -> Any | None:
    """The presentation at a local path, or None when there is no such readable pptx file."""
    if not isinstance(path, (str, Path)) or not str(path):
        return None
    if not Path(path).is_file():
        return None
    try:
        return Presentation(str(path))
    except Exception as exc:  # not a zip, not a pptx package, broken XML …
        log.debug("cannot open presentation %s: %s", path, exc)
        return None


def _xml_color(parent: Any) -> str | None:
    """A colour choice element's value (``srgb:FF0000``, ``scheme:accent1`` …) under ``parent``."""
    if parent is None:
        return None
    for child in parent:
        if not isinstance(child.tag, str):
            continue
        kind = etree.QName(child).localname
        if kind == "srgbClr":
            return f"srgb:{(child.get('val') or '').upper()}"
        if kind == "sysClr":
            return f"srgb:{(child.get('lastClr') or '').upper()}" if child.get("lastClr") else f"sys:{child.get('val')}"
        if kind in ("schemeClr", "prstClr"):
            return f"{kind[:-3]}:{child.get('val')}"
    return None


_FILLS = ("noFill", "solidFill", "gradFill", "blipFill", "pattFill", "grpFill")


def _fill_key(props: Any) -> str | None:
    """The fill under a properties element: ``srgb:FF0000`` for a solid fill, the fill kind otherwise."""
    if props is None:
        return None
    for child in props:
        if isinstance(child.tag, str) and etree.QName(child).localname in _FILLS:
            kind = etree.QName(child).localname
            return _xml_color(child) if kind == "solidFill" else kind
    return None


# ---------------------------------------------------------------------------------------------
# compare_pptx_files


@dataclass(frozen=True)
class _Checks:
    """What compare_pptx_files examines; option ``examine_<field>`` sets a boolean field."""

    number_of_slides: bool = True
    shape: bool = True
    text: bool = True
    indent: bool = True
    font_name: bool = True
    font_size: bool = True
    font_bold: bool = True
    font_italic: bool = True
    color_rgb: bool = True
    font_underline: bool = True
    strike_through: bool = True
    alignment: bool = True
    bullets: bool = True
    background_color: bool = True
    note: bool = True
    image_size: bool = False
    modify_height: bool = False
    normalize_runs: bool = False
    tolerance: float = 0.005


_EXAMINE = {f"examine_{f.name}": f.name for f in fields(_Checks) if isinstance(f.default, bool)}
_EXAMINE.pop("examine_normalize_runs")
_EXAMINE["examine_font_color"] = "color_rgb"  # the name a reader of "font name/size/colour" guesses
_EXAMINE["normalize_runs"] = "normalize_runs"
# OSWorld toggles hard-wired to one task's shape text, slide number and EMU constants.
_TASK_SPECIFIC = (
    "examine_title_bottom_position",
    "examine_table_bottom_position",
    "examine_right_position",
    "examine_top_position",
    "examine_shape_for_shift_size",
)
_IGNORED = ("enable_debug",)  # OSWorld's logging switch; mismatches are logged at DEBUG here


def _parse_checks(options: dict[str, Any]) -> _Checks:
    values: dict[str, Any] = {}
    for key, value in options.items():
        if key in _IGNORED:
            continue
        if key in _TASK_SPECIFIC:
            if value:
                raise UserError(
                    f"metric 'compare_pptx_files': option {key!r} is not supported (OSWorld hard-codes one task's "
                    "positions); set examine_shape: false and check the position with a dedicated metric"
                )
            continue
        if key == "approximately_tolerance":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
                raise UserError(f"metric 'compare_pptx_files': approximately_tolerance must be a number in [0, 1), got {value!r}")
            values["tolerance"] = float(value)
            continue
        if key not in _EXAMINE:
            known = ", ".join(sorted([*_EXAMINE, "approximately_tolerance"]))
            raise UserError(f"metric 'compare_pptx_files': unknown option {key!r}; known options: {known}")
        if not isinstance(value, bool):
            raise UserError(f"metric 'compare_pptx_files': option {key!r} must be true or false, got {value!r}")
        values[_EXAMINE[key]] = value
    return _Checks(**values)


def _close(a: Any, b: Any, tolerance: float) -> bool:
    """Equal within a relative tolerance (of the larger magnitude); None only equals None."""
    if a == b:
        return True
    if a is None or b is None:
        return False
    return abs(a - b) <= tolerance * max(abs(a), abs(b))


def _shape_type(shape: Any) -> Any:
    try:
        return shape.shape_type
    except NotImplementedError:  # python-pptx cannot classify some autoshapes
        return None


_GEOMETRY = ("left", "top", "width", "height")


def _geometry_to_check(shape: Any, checks: _Checks) -> set[str]:
    """The union of what each enabled geometry check requires of this shape."""
    attrs: set[str] = set()
    if checks.shape:
        attrs.update(_GEOMETRY)
    if checks.image_size:  # pictures may move but not resize; everything else stays put
        attrs.update(("width", "height") if isinstance(shape, Picture) else _GEOMETRY)
    if checks.modify_height:  # shapes without text (and freeforms) only need the gold height
        textless = not shape.has_text_frame or _shape_type(shape) == MSO_SHAPE_TYPE.FREEFORM
        attrs.update(("height",) if textless else _GEOMETRY)
    return attrs


def _background(slide: Any) -> Any:
    """The slide's effective background: its own ``p:bg``, else its layout's, else its master's."""
    for owner in (slide, slide.slide_layout, slide.slide_layout.slide_master):
        bg = owner.element.find(f"{qn('p:cSld')}/{qn('p:bg')}")
        if bg is None:
            continue
        props = bg.find(qn("p:bgPr"))
        if props is not None:
            return _fill_key(props)
        ref = bg.find(qn("p:bgRef"))  # a theme background style, tinted with a colour
        return ("ref", ref.get("idx"), _xml_color(ref)) if ref is not None else None
    return None


def _notes(slide: Any) -> str:
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    return frame.text.strip() if frame is not None else ""


def _paragraph_props(paragraph: Any) -> Any:
    return paragraph._p.pPr  # python-pptx has no public read-only access to a:pPr


def _bullet(paragraph: Any) -> str | None:
    """``none``, ``char:•``, ``auto:arabicPeriod``, ``picture``, or None (inherited)."""
    props = _paragraph_props(paragraph)
    if props is None:
        return None
    for child in props:
        kind = etree.QName(child).localname if isinstance(child.tag, str) else ""
        if kind == "buNone":
            return "none"
        if kind == "buChar":
            return f"char:{child.get('char')}"
        if kind == "buAutoNum":
            return f"auto:{child.get('type')}"
        if kind == "buBlip":
            return "picture"
    return None


def _run_format(run: Any) -> dict[str, Any]:
    """The run's own character formatting, keyed by the _Checks field that compares it.

    Absent attributes normalise to the OOXML defaults where those are unambiguous (not bold,
    not italic, no underline, no strike); name, size and colour stay None (inherited).
    """
    props = run._r.rPr  # python-pptx's Font getters would add a:rPr / a:solidFill
    if props is None:
        return {"font_name": None, "font_size": None, "font_bold": False, "font_italic": False,
                "font_underline": "none", "strike_through": "noStrike", "color_rgb": None}
    latin = props.find(qn("a:latin"))
    return {
        "font_name": latin.get("typeface") if latin is not None else None,
        "font_size": props.get("sz"),
        "font_bold": (props.get("b") or "").lower() in _TRUE,
        "font_italic": (props.get("i") or "").lower() in _TRUE,
        "font_underline": props.get("u") or "none",
        "strike_through": props.get("strike") or "noStrike",
        "color_rgb": _fill_key(props),
    }


def _runs(paragraph: Any, checks: _Checks) -> list[tuple[str, dict[str, Any]]]:
    """(text, format) per run; with normalize_runs, adjacent runs formatted alike are merged."""
    runs: list[tuple[str, dict[str, Any]]] = []
    for run in paragraph.runs:
        fmt = _run_format(run)
        if checks.normalize_runs and runs and runs[-1][1] == fmt:
            runs[-1] = (runs[-1][0] + run.text, fmt)
        else:
            runs.append((run.text, fmt))
    return runs


_RUN_CHECKS = ("font_name", "font_size", "font_bold", "font_italic", "color_rgb", "font_underline", "strike_through")


def _diff_paragraph(p1: Any, p2: Any, checks: _Checks, where: str) -> Iterator[str]:
    if checks.alignment:
        a1 = PP_ALIGN.LEFT if p1.alignment is None else p1.alignment  # unset means left
        a2 = PP_ALIGN.LEFT if p2.alignment is None else p2.alignment
        if a1 != a2:
            yield f"{where}: alignment {a1} != {a2}"
    if checks.text and p1.text != p2.text:
        yield f"{where}: text {p1.text!r} != {p2.text!r}"
    if checks.indent and p1.level != p2.level:
        yield f"{where}: level {p1.level} != {p2.level}"
    if checks.bullets and (p1.text.strip() or p2.text.strip()) and _bullet(p1) != _bullet(p2):
        yield f"{where}: bullet {_bullet(p1)} != {_bullet(p2)}"
    runs1, runs2 = _runs(p1, checks), _runs(p2, checks)
    if len(runs1) != len(runs2):
        yield f"{where}: {len(runs1)} runs != {len(runs2)}"
    for k, ((text, fmt1), (_, fmt2)) in enumerate(zip(runs1, runs2), 1):
        for name in _RUN_CHECKS:
            if getattr(checks, name) and fmt1[name] != fmt2[name]:
                yield f"{where} run {k} ({text!r}): {name} {fmt1[name]!r} != {fmt2[name]!r}"


def _diff_text_frame(tf1: Any, tf2: Any, checks: _Checks, where: str) -> Iterator[str]:
    if checks.text and tf1.text.strip() != tf2.text.strip():
        yield f"{where}: text {tf1.text.strip()!r} != {tf2.text.strip()!r}"
    paras1, paras2 = tf1.paragraphs, tf2.paragraphs
    if len(paras1) != len(paras2):
        yield f"{where}: {len(paras1)} paragraphs != {len(paras2)}"
    for k, (p1, p2) in enumerate(zip(paras1, paras2), 1):
        yield from _diff_paragraph(p1, p2, checks, f"{where} paragraph {k}")


def _diff_table(t1: Any, t2: Any, checks: _Checks, where: str) -> Iterator[str]:
    size1, size2 = (len(t1.rows), len(t1.columns)), (len(t2.rows), len(t2.columns))
    if size1 != size2:
        yield f"{where}: table size {size1} != {size2}"
        return
    for r in range(size1[0]):
        for c in range(size1[1]):
            yield from _diff_text_frame(t1.cell(r, c).text_frame, t2.cell(r, c).text_frame, checks, f"{where} cell ({r},{c})")


def _diff_shape(s1: Any, s2: Any, checks: _Checks, where: str) -> Iterator[str]:
    wanted = _geometry_to_check(s1, checks)
    moved = [a for a in _GEOMETRY if a in wanted and not _close(getattr(s1, a), getattr(s2, a), checks.tolerance)]
    if moved:
        yield f"{where}: {', '.join(moved)} differ"
    if isinstance(s1, GroupShape) != isinstance(s2, GroupShape):
        yield f"{where}: only one is a group"
    elif isinstance(s1, GroupShape):
        yield from _diff_shapes(s1.shapes, s2.shapes, checks, f"{where} group")
    has_table1, has_table2 = getattr(s1, "has_table", False), getattr(s2, "has_table", False)
    if has_table1 != has_table2:
        yield f"{where}: only one is a table"
    elif has_table1:
        yield from _diff_table(s1.table, s2.table, checks, where)
    if s1.has_text_frame and s2.has_text_frame:
        yield from _diff_text_frame(s1.text_frame, s2.text_frame, checks, where)
    elif checks.text and (s1.has_text_frame or s2.has_text_frame):
        text = (s1 if s1.has_text_frame else s2).text_frame.text.strip()
        if text:
            yield f"{where}: text {text!r} only on one side"


def _diff_shapes(shapes1: Any, shapes2: Any, checks: _Checks, where: str) -> Iterator[str]:
    shapes1, shapes2 = list(shapes1), list(shapes2)
    if len(shapes1) != len(shapes2):
        yield f"{where}: {len(shapes1)} shapes != {len(shapes2)}"
    for j, (s1, s2) in enumerate(zip(shapes1, shapes2), 1):
        yield from _diff_shape(s1, s2, checks, f"{where} shape {j}")


def _diff_presentations(prs1: Any, prs2: Any, checks: _Checks) -> Iterator[str]:
    """Every difference the enabled checks see, lazily, in document order."""
    slides1, slides2 = list(prs1.slides), list(prs2.slides)
    if checks.number_of_slides and len(slides1) != len(slides2):
        yield f"{len(slides1)} slides != {len(slides2)}"
    for i, (s1, s2) in enumerate(zip(slides1, slides2), 1):
        where = f"slide {i}"
        if checks.background_color and _background(s1) != _background(s2):
            yield f"{where}: background {_background(s1)} != {_background(s2)}"
        if checks.note and _notes(s1) != _notes(s2):
            yield f"{where}: notes differ"
        yield from _diff_shapes(s1.shapes, s2.shapes, checks, where)


@metric("compare_pptx_files")
def compare_pptx_files(result: Any, expected: Any = None, **options: Any) -> float:
    """1 when the result pptx matches the gold pptx slide by slide, shape by shape, run by run.

    result, expected: local pptx paths (agent's file, gold file). Shapes are paired in order (the
    shape count must match), as are paragraphs and runs. Options, all ``examine_*`` true by default:
    ``examine_number_of_slides``, ``examine_shape`` (left/top/width/height within
    ``approximately_tolerance``, relative, default 0.005), ``examine_text``, ``examine_indent``
    (paragraph level), ``examine_alignment`` (unset = left), ``examine_bullets``,
    ``examine_font_name`` / ``_size`` / ``_bold`` / ``_italic`` / ``_underline``,
    ``examine_color_rgb`` (alias ``examine_font_color``), ``examine_strike_through``,
    ``examine_background_color`` (slide, else layout, else master background),
    ``examine_note``. Off by default: ``examine_image_size`` (pictures keep the gold size, may
    move), ``examine_modify_height`` (textless shapes need only the gold height),
    ``normalize_runs`` (merge adjacent runs formatted alike before pairing runs).
    OSWorld's task-specific position toggles (``examine_title_bottom_position`` …) are refused.

    Deliberate differences from the anchor: group children and table cells get the same checks
    as top-level text (the anchor skipped most toggles in tables and text in cells); a colour
    set on one side and inherited on the other is a mismatch (the anchor only compared two
    explicit RGB colours, so "make it red" passed with no colour at all); any underline style
    counts, not only single.
    """
    checks = _parse_checks(options)
    prs1, prs2 = _open_presentation(result), _open_presentation(expected)
    if prs1 is None or prs2 is None:
        return 0.0
    difference = next(_diff_presentations(prs1, prs2, checks), None)
    if difference is not None:
        log.debug("compare_pptx_files: %s", difference)
        return 0.0
    return 1.0


# ---------------------------------------------------------------------------------------------
# single-file checks


def _is_slide_number(shape: Any) -> bool:
    if shape.is_placeholder and shape.placeholder_format.type == PP_PLACEHOLDER.SLIDE_NUMBER:
        return True
    return any(fld.get("type") == "slidenum" for fld in shape.element.iter(qn("a:fld")))


def _own_text_color(shape: Any) -> str | None:
    """The colour a number shape sets itself: on its field/run, its paragraph, or its list style."""
    body = shape.element.find(qn("p:txBody"))
    if body is None:
        return None
    carriers = [f for f in body.iter(qn("a:fld")) if f.get("type") == "slidenum"] or list(body.iter(qn("a:r")))
    if not carriers:
        return None
    carrier = carriers[0]
    color = _fill_key(carrier.find(qn("a:rPr")))
    if color:
        return color
    paragraph_props = carrier.getparent().find(qn("a:pPr"))
    if paragraph_props is not None:
        color = _fill_key(paragraph_props.find(qn("a:defRPr")))
        if color:
            return color
    level = int(paragraph_props.get("lvl") or 0) if paragraph_props is not None else 0
    return _fill_key(body.find(f"{qn('a:lstStyle')}/{qn(f'a:lvl{level + 1}pPr')}/{qn('a:defRPr')}"))


def _inherited_number_color(slide: Any) -> str | None:
    """The slide-number placeholder colour of the slide's layout, else of its master."""
    for owner in (slide.slide_layout, slide.slide_layout.slide_master):
        for placeholder in owner.placeholders:
            if placeholder.placeholder_format.type == PP_PLACEHOLDER.SLIDE_NUMBER:
                color = _own_text_color(placeholder)
                if color:
                    return color
    return None


def _hex_color(value: Any, name: str) -> str:
    text = value.lstrip("#").upper() if isinstance(value, str) else ""
    if len(text) != 6 or any(ch not in "0123456789ABCDEF" for ch in text):
        raise UserError(f"metric {name!r}: color must be a hex RGB string such as 'FF0000', got {value!r}")
    return f"srgb:{text}"


@metric("check_slide_numbers_color")
def check_slide_numbers_color(result: Any, expected: Any = None, color: str = "FF0000") -> float:
    """1 when the slides show slide numbers and every one is drawn in ``color`` (default red FF0000).

    result: local pptx path. A slide number is a slide-number placeholder or a ``slidenum``
    field. Its colour is the one set on the number itself (run, paragraph or list style), else
    the one on the layout's, else the master's slide-number placeholder (the anchor only read
    the master and returned None when no slide showed a number; that scores 0 here).
    """
    target = _hex_color(color, "check_slide_numbers_color")
    prs = _open_presentation(result)
    if prs is None:
        return 0.0
    seen = False
    for slide in prs.slides:
        for shape in slide.shapes:
            if not _is_slide_number(shape) or not (shape.has_text_frame and shape.text_frame.text.strip()):
                continue
            seen = True
            if (_own_text_color(shape) or _inherited_number_color(slide)) != target:
                return 0.0
    return float(seen)


def _index_list(rules: Any, key: str, name: str) -> list[int]:
    value = rule_value(rules, key, name)
    items = [value] if isinstance(value, int) else value
    if not isinstance(items, list) or not items or not all(isinstance(i, int) and not isinstance(i, bool) for i in items):
        raise UserError(f"metric {name!r}: rules {key!r} must be a non-empty list of integer indices, got {value!r}")
    return items


_STRUCK = ("sngStrike", "dblStrike")


def _is_struck(paragraph: Any) -> bool:
    """Every run with visible text is struck through (its own setting, else the paragraph default)."""
    props = _paragraph_props(paragraph)
    default_props = props.find(qn("a:defRPr")) if props is not None else None
    default = default_props.get("strike") if default_props is not None else None
    runs = [run for run in paragraph.runs if run.text.strip()]
    if not runs:
        return False
    for run in runs:
        own = run._r.rPr.get("strike") if run._r.rPr is not None else None
        if (own or default) not in _STRUCK:
            return False
    return True


@metric("check_strikethrough")
def check_strikethrough(result: Any, rules: Any) -> float:
    """1 when the chosen paragraphs are struck through in every run that has text.

    result: local pptx path. rules: ``{slide_index_s: [...], shape_index_s: [...],
    paragraph_index_s: [...]}``, 0-based indices; every combination is checked. An index the
    file does not have scores 0. The anchor only looked at each paragraph's first run and
    accepted ``strike="noStrike"`` as struck.
    """
    name = "check_strikethrough"
    slides = _index_list(rules, "slide_index_s", name)
    shapes = _index_list(rules, "shape_index_s", name)
    paragraphs = _index_list(rules, "paragraph_index_s", name)
    prs = _open_presentation(result)
    if prs is None:
        return 0.0
    try:
        for s in slides:
            slide = prs.slides[s]
            for h in shapes:
                shape = slide.shapes[h]
                if not shape.has_text_frame:
                    return 0.0
                for p in paragraphs:
                    if not _is_struck(shape.text_frame.paragraphs[p]):
                        return 0.0
    except IndexError:
        return 0.0
    return 1.0


@metric("check_transition")
def check_transition(result: Any, rules: Any) -> float:
    """1 when slide ``slide_idx`` (0-based) has a transition of kind ``transition_type`` (e.g. ``dissolve``).

    result: local pptx path. rules: ``{slide_idx: int, transition_type: str}``; the type is the
    transition element's XML name, matched case-insensitively in any namespace, including the
    ``mc:AlternateContent`` copies PowerPoint writes. The slide is taken in presentation order
    (the anchor opened ``slide<N+1>.xml``, which need not be the N+1th slide).
    """
    name = "check_transition"
    index = rule_value(rules, "slide_idx", name)
    kind = rule_value(rules, "transition_type", name)
    if isinstance(index, bool) or not isinstance(index, int):
        raise UserError(f"metric {name!r}: rules 'slide_idx' must be an integer, got {index!r}")
    if not isinstance(kind, str) or not kind:
        raise UserError(f"metric {name!r}: rules 'transition_type' must be a transition name, got {kind!r}")
    prs = _open_presentation(result)
    if prs is None:
        return 0.0
    slides = list(prs.slides)
    if not -len(slides) <= index < len(slides):
        return 0.0
    for element in slides[index].element.iter(qn("p:transition")):
        for child in element:
            if isinstance(child.tag, str) and etree.QName(child).localname.lower() == kind.lower():
                return 1.0
    return 0.0


@metric("check_slide_orientation_Portrait")
def check_slide_orientation_Portrait(result: Any, expected: Any = None) -> float:
    """1 when the presentation's slides are portrait (height greater than width).

    result: local pptx path.
    """
    prs = _open_presentation(result)
    if prs is None or prs.slide_width is None or prs.slide_height is None:
        return 0.0
    return float(prs.slide_width < prs.slide_height)


# ---------------------------------------------------------------------------------------------
# pictures, backgrounds and slide numbers (OSWorld Impress tasks)

EMU_PER_INCH = 914400
STRETCH_TOLERANCE = EMU_PER_INCH // 2


def _picture_blob(shape: Any) -> bytes | None:
    if not isinstance(shape, Picture):
        return None
    try:
        return shape.image.blob
    except (KeyError, ValueError, AttributeError):  # a linked picture has no embedded image
        return None


@metric("check_image_stretch_and_center")
def check_image_stretch_and_center(result: Any, expected: Any) -> float:
    """1 when the first slide's picture now covers the whole slide, centred (within half an inch).

    expected: the original pptx; its first slide's first picture is the one to stretch. The
    result's first slide must hold a picture with the same image bytes whose width and height
    are the slide's and whose offsets centre it, each within 0.5 in. Placeholder pictures count
    (OSWorld saw only free pictures); any copy of the picture may be the stretched one.
    """
    prs, original = _open_presentation(result), _open_presentation(expected)
    if prs is None or original is None or not len(prs.slides) or not len(original.slides):
        return 0.0
    blobs = [b for b in (_picture_blob(s) for s in original.slides[0].shapes) if b is not None]
    if not blobs:
        return 0.0
    width, height = original.slide_width, original.slide_height
    for shape in prs.slides[0].shapes:
        if _picture_blob(shape) != blobs[0]:
            continue
        if (
            abs(shape.width - width) <= STRETCH_TOLERANCE
            and abs(shape.height - height) <= STRETCH_TOLERANCE
            and abs(shape.left - (width - shape.width) / 2) <= STRETCH_TOLERANCE
            and abs(shape.top - (height - shape.height) / 2) <= STRETCH_TOLERANCE
        ):
            return 1.0
    return 0.0


def _rgb_rule(rules: Any, key: str, name: str, default: Any = ...) -> tuple[int, int, int] | None:
    value = rule_value(rules, key, name, default)
    if value is None and default is None:
        return None
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 3
        or not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 255 for c in value)
    ):
        raise UserError(f"metric {name!r}: rules {key!r} must be [r, g, b] with integers 0-255, got {value!r}")
    return (value[0], value[1], value[2])


def _srgb(key: Any) -> tuple[int, int, int] | None:
    """(r, g, b) of an ``srgb:RRGGBB`` fill key, None for anything else (scheme colours, pictures …)."""
    if not isinstance(key, str) or not key.startswith("srgb:") or len(key) != 11:
        return None
    try:
        return (int(key[5:7], 16), int(key[7:9], 16), int(key[9:11], 16))
    except ValueError:
        return None


MAX_RGB_DISTANCE = (3 * 255**2) ** 0.5


@metric("evaluate_presentation_fill_to_rgb_distance")
def evaluate_presentation_fill_to_rgb_distance(result: Any, rules: Any) -> float:
    """1 minus the mean, over slides, of the distance of each slide's background to ``rules["rgb"]``.

    A slide's distance is the Euclidean RGB distance of its solid background colour to the
    target, divided by the largest possible (white to black), so partial credit for a near
    colour. A background that is not a solid RGB colour (picture, gradient, scheme colour,
    none), or that still is ``rules["original_rgb"]`` when given, is as far as can be (1). The
    background is the slide's own, else its layout's, else its master's (OSWorld skipped the
    layout). A presentation without slides scores 0.
    """
    name = "evaluate_presentation_fill_to_rgb_distance"
    target = _rgb_rule(rules, "rgb", name)
    original = _rgb_rule(rules, "original_rgb", name, default=None)
    prs = _open_presentation(result)
    if prs is None or not len(prs.slides):
        return 0.0

    def distance(slide: Any) -> float:
        color = _srgb(_background(slide))
        if color is None or color == original:
            return 1.0
        return sum((a - b) ** 2 for a, b in zip(color, target)) ** 0.5 / MAX_RGB_DISTANCE

    slides = list(prs.slides)
    return 1.0 - sum(distance(slide) for slide in slides) / len(slides)


COLOR_MARGIN = 50  # a channel must exceed the others by this much for the colour to be "red" …
_COLOR_FAMILIES = {
    "red": lambda r, g, b: r > g + COLOR_MARGIN and r > b + COLOR_MARGIN,
    "green": lambda r, g, b: g > r + COLOR_MARGIN and g > b + COLOR_MARGIN,
    "blue": lambda r, g, b: b > r + COLOR_MARGIN and b > g + COLOR_MARGIN,
    "black": lambda r, g, b: max(r, g, b) < COLOR_MARGIN,
}


def _slide_number_colors(prs: Any) -> list[str | None]:
    """The colour of every slide number shown on a slide, else of the masters' number placeholders."""
    shown = [
        _own_text_color(shape) or _inherited_number_color(slide)
        for slide in prs.slides
        for shape in slide.shapes
        if _is_slide_number(shape) and shape.has_text_frame and shape.text_frame.text.strip()
    ]
    if shown:
        return shown
    return [
        _own_text_color(placeholder)
        for master in prs.slide_masters
        for placeholder in master.placeholders
        if placeholder.placeholder_format.type == PP_PLACEHOLDER.SLIDE_NUMBER
    ]


@metric("check_page_number_colors")
def check_page_number_colors(result: Any, rules: Any) -> float:
    """1 when the slide numbers are drawn in the colour family ``rules["color"]`` (red, green, blue, black).

    A colour is red/green/blue when that channel exceeds both others by more than 50, black
    when every channel is below 50. The numbers are those shown on the slides (their own
    colour, else the layout's or master's number placeholder's); when no slide shows one, the
    masters' slide-number placeholders. Every one must be an RGB colour of the family, and
    there must be one. OSWorld took the last non-black RGB run colour anywhere in the first
    master (whatever text it belonged to) and passed any colour name it did not know.
    """
    name = "check_page_number_colors"
    family = rule_value(rules, "color", name)
    if family not in _COLOR_FAMILIES:
        raise UserError(f"metric {name!r}: rules 'color' must be one of {', '.join(_COLOR_FAMILIES)}, got {family!r}")
    prs = _open_presentation(result)
    if prs is None:
        return 0.0
    colors = [_srgb(color) for color in _slide_number_colors(prs)]
    return float(bool(colors) and all(c is not None and _COLOR_FAMILIES[family](*c) for c in colors))
