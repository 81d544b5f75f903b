"""Writer metrics over direct formatting: line spacing, tab stops, alignment, highlighting,
subscript, strike-through, italics, colours and fonts, most of them after checking that the text
is the gold's (``text._same_text``).
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from typing import Any

from docx.document import Document
from docx.enum.text import WD_PARAGRAPH_ALIGNMENT, WD_TAB_ALIGNMENT
from docx.text.paragraph import Paragraph
from lxml import etree

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.documents.reading import (
    _XML_PARSER,
    ODF_FO,
    ODF_STYLE,
    ODF_TEXT,
    W_NS,
    _check_int,
    _document,
    _font_name,
    _open_docx,
    _open_odt,
    _optional_rules,
    _zero_on_failure,
)
from mcpworld.evaluation.metrics.documents.text import _same_text
from mcpworld.evaluation.metrics.general import rule_value
from mcpworld.evaluation.registry import metric

EMU_PER_TWIP = 635
DEFAULT_TEXT_WIDTH_EMU = (12240 - 2 * 1440) * EMU_PER_TWIP  # US Letter with 1-inch margins


@metric("compare_line_spacing")
@_zero_on_failure
def compare_line_spacing(result: Any, expected: Any) -> float:
    """Same text as the gold .docx (compare_docx_files defaults), the same number of paragraphs, and
    the same direct line spacing (python-docx's ``line_spacing``) paragraph by paragraph."""
    if not _same_text(result, expected):
        return 0.0
    mine, gold = _document(result), _document(expected)
    if mine is None or gold is None or len(mine.paragraphs) != len(gold.paragraphs):
        return 0.0
    return float(
        all(
            p1.paragraph_format.line_spacing == p2.paragraph_format.line_spacing
            for p1, p2 in zip(mine.paragraphs, gold.paragraphs, strict=True)
        )
    )


def _text_width(document: Document) -> float:
    """Page width minus side margins of the first section, in EMU.

    OSWorld failed when the section sets no page size or margins (valid: Word's defaults apply);
    US Letter with 1-inch margins is used then.
    """
    section = document.sections[0]
    width, left, right = section.page_width, section.left_margin, section.right_margin
    if width is None or left is None or right is None:
        return float(DEFAULT_TEXT_WIDTH_EMU)
    return float(width - left - right)


def _direct_tab_stops(paragraph: Paragraph) -> list[Any]:
    """The paragraph's own tab stops, without clear stops and a left stop at 0."""
    return [
        t
        for t in paragraph.paragraph_format.tab_stops
        if not (t.alignment == WD_TAB_ALIGNMENT.CLEAR or (t.alignment == WD_TAB_ALIGNMENT.LEFT and t.position == 0))
    ]


@metric("check_tabstops")
@_zero_on_failure
def check_tabstops(result: Any, expected: Any, word_number_split_by_tabstop: int | None = None, index: int = 0) -> float:
    """Direct tab stops of the result's non-empty paragraphs match the gold's (partial credit by distance).

    The non-empty paragraph counts must match, and paired paragraphs must have as many tab stops
    with the same alignments; the score is 1 minus the mean, over paragraphs, of the summed
    position differences divided by the gold's text width (not below 0). Option
    ``word_number_split_by_tabstop`` (with ``index``, default 0): every result paragraph's
    ``index``-th tab-separated part must have exactly that many words.
    """
    if word_number_split_by_tabstop is not None:
        _check_int(word_number_split_by_tabstop, "word_number_split_by_tabstop", "check_tabstops")
    _check_int(index, "index", "check_tabstops")
    mine, gold = _document(result), _document(expected)
    if mine is None or gold is None:
        return 0.0
    got = [p for p in mine.paragraphs if p.text.strip()]
    want = [p for p in gold.paragraphs if p.text.strip()]
    if len(got) != len(want) or not got:
        return 0.0
    if word_number_split_by_tabstop is not None:
        for p in got:
            parts = p.text.split("\t")
            if index >= len(parts) or len(parts[index].split()) != word_number_split_by_tabstop:
                return 0.0
    width = _text_width(gold)
    penalty = 0.0
    for p1, p2 in zip(got, want, strict=True):
        tabs1, tabs2 = _direct_tab_stops(p1), _direct_tab_stops(p2)
        if len(tabs1) != len(tabs2) or any(t1.alignment != t2.alignment for t1, t2 in zip(tabs1, tabs2, strict=True)):
            return 0.0
        penalty += sum(abs(t1.position - t2.position) for t1, t2 in zip(tabs1, tabs2, strict=True)) / width
    return max(0.0, 1.0 - penalty / len(got))


def _highlighted_run_texts(path: Any) -> set[str | None]:
    """For each ``w:r`` of word/document.xml with a ``w:highlight`` other than "none": its first ``w:t``'s text."""
    with zipfile.ZipFile(str(path)) as package:
        root = etree.fromstring(package.read("word/document.xml"), _XML_PARSER)
    texts: set[str | None] = set()
    for run in root.iter(f"{{{W_NS}}}r"):
        highlight = next(run.iter(f"{{{W_NS}}}highlight"), None)
        if highlight is None or highlight.get(f"{{{W_NS}}}val") == "none":
            continue
        t = next(run.iter(f"{{{W_NS}}}t"), None)
        if t is not None:
            texts.add(t.text)
    return texts


@metric("compare_highlighted_text")
@_zero_on_failure
def compare_highlighted_text(result: Any, expected: Any) -> float:
    """The set of highlighted run texts of the result .docx equals the gold's.

    A run counts when it has ``w:highlight`` (any colour but "none"); its text is its first
    ``w:t``. Sets, as in OSWorld: order and repeats do not count, nor does character shading.
    """
    if not result or not expected:
        return 0.0
    return float(_highlighted_run_texts(result) == _highlighted_run_texts(expected))


@metric("is_first_line_centered")
@_zero_on_failure
def is_first_line_centered(result: Any) -> float:
    """The document's first paragraph (even an empty one) has direct centre alignment."""
    document = _document(result)
    if document is None:
        return 0.0
    return float(document.paragraphs[0].paragraph_format.alignment == WD_PARAGRAPH_ALIGNMENT.CENTER)


@metric("evaluate_spacing")
@_zero_on_failure
def evaluate_spacing(result: Any, rules: Any = None) -> float:
    """Paragraphs 0, 1 and 2 have direct line spacing 1.0, 2.0 and 1.5 lines (introduction, body,
    conclusion); ``rules{"introduction", "body", "conclusion"}`` (ours) change the three values.

    A document with fewer than three paragraphs scores 0.
    """
    rules = _optional_rules(rules, "evaluate_spacing")
    wanted = []
    for key, default in (("introduction", 1.0), ("body", 2.0), ("conclusion", 1.5)):
        value = rules.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise UserError(f"metric 'evaluate_spacing': {key} must be a positive number of lines, got {value!r}")
        wanted.append(value)
    document = _document(result)
    if document is None:
        return 0.0
    spacings = [document.paragraphs[i].paragraph_format.line_spacing for i in range(3)]
    return float(spacings == wanted)


def _subscript_pairs(mine: Document, gold: Document) -> Iterator[bool]:
    for p1, p2 in zip(mine.paragraphs, gold.paragraphs, strict=False):
        for r1, r2 in zip(p1.runs, p2.runs, strict=False):
            yield bool(r1.font.subscript and r2.font.subscript)


@metric("compare_subscript_contains")
@_zero_on_failure
def compare_subscript_contains(result: Any, expected: Any) -> float:
    """1 when some run of the result and the gold's run at the same paragraph and run index are
    both (directly) subscript."""
    mine, gold = _document(result), _document(expected)
    if mine is None or gold is None:
        return 0.0
    return float(any(_subscript_pairs(mine, gold)))


@metric("check_highlighted_words")
@_zero_on_failure
def check_highlighted_words(result: Any, expected: Any) -> float:
    """1 when the result .odt has the gold's text (compare_docx_files) and no yellow-highlighted span.

    Highlighted: a ``text:span`` whose automatic style (content.xml or styles.xml) has a
    properties element with ``fo:background-color`` exactly ``#ffff00``, as OSWorld checks. Other
    colours, named styles and paragraph backgrounds are not seen. A .docx scores 0 (OSWorld
    could not open one as OpenDocument).
    """
    if not result or not expected or not _same_text(result, expected):
        return 0.0
    odt = _open_odt(result)
    if odt is None:
        return 0.0
    styles = odt.automatic_styles()
    for span in odt.elements(ODF_TEXT, "span"):
        name = span.get(f"{{{ODF_TEXT}}}style-name")
        if not name:
            continue
        for style in styles:
            if style.get(f"{{{ODF_STYLE}}}name") == name and any(
                prop.get(f"{{{ODF_FO}}}background-color") == "#ffff00" for prop in style
            ):
                return 0.0
    return 1.0


@metric("evaluate_strike_through_last_paragraph")
@_zero_on_failure
def evaluate_strike_through_last_paragraph(result: Any, expected: Any) -> float:
    """1 when the result has the gold's text and every run of its last paragraph is directly struck through.

    The last paragraph is the very last top-level one (an empty one passes, as in OSWorld);
    double strike-through does not count.
    """
    if not result or not expected or not _same_text(result, expected):
        return 0.0
    document = _document(result)
    if document is None:
        return 0.0
    return float(all(run.font.strike for run in document.paragraphs[-1].runs))


def _delta_e_to(rgb: Any, target: tuple[int, int, int]) -> float:
    """CIEDE2000 difference of two sRGB colours (skimage, as OSWorld computes it)."""
    import numpy as np
    from skimage.color import deltaE_ciede2000, rgb2lab  # slow import: only when needed

    a = rgb2lab(np.array([rgb[0], rgb[1], rgb[2]], dtype=float) / 255.0)
    b = rgb2lab(np.array(target, dtype=float) / 255.0)
    return float(deltaE_ciede2000(a, b))


@metric("evaluate_colored_words_in_tables")
@_zero_on_failure
def evaluate_colored_words_in_tables(result: Any, expected: Any, threshold: float = 3.5) -> float:
    """1 when the result has the gold's text and, in its tables, each run starting with a vowel is red
    and every other run blue (CIEDE2000 difference at most ``threshold``, default 3.5).

    Runs are judged by their first character, as in OSWorld; a run without a direct RGB colour
    scores 0. A document without tables passes.
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or threshold < 0:
        raise UserError(f"metric 'evaluate_colored_words_in_tables': threshold must be a number >= 0, got {threshold!r}")
    if not result or not expected or not _same_text(result, expected):
        return 0.0
    document = _document(result)
    if document is None:
        return 0.0
    for table in document.tables:
        for row in table.rows:
            for cell in row.cells:
                for paragraph in cell.paragraphs:
                    for run in paragraph.runs:
                        if not run.text:
                            continue
                        target = (255, 0, 0) if run.text[0].lower() in "aeiou" else (0, 0, 255)
                        rgb = run.font.color.rgb
                        if rgb is None or _delta_e_to(rgb, target) > threshold:
                            return 0.0
    return 1.0


@metric("check_italic_font_size_14")
@_zero_on_failure
def check_italic_font_size_14(result: Any, expected: Any) -> float:
    """1 when the result has the gold's text and every directly italic run of the top-level body is 14 pt
    (direct size). No italic run passes, as in OSWorld."""
    if not result or not expected or not _same_text(result, expected):
        return 0.0
    document = _document(result)
    if document is None:
        return 0.0
    for paragraph in document.paragraphs:
        for run in paragraph.runs:
            if run.italic and (run.font.size is None or run.font.size.pt != 14):
                return 0.0
    return 1.0


@metric("compare_font_names")
def compare_font_names(result: Any, rules: Any) -> float:
    """Every run with visible text (body, tables, text boxes) uses the font ``rules["font_name"]``.

    The font is the effective one (direct, character/paragraph style chain, document defaults,
    theme). OSWorld read only a run's direct font over body paragraphs (whitespace runs too), so
    text that shows the font through its style scored 0 there; we grade what the reader sees.
    A document without visible text scores 0 (OSWorld passed it vacuously).
    """
    expected = rule_value(rules, "font_name", "compare_font_names")
    d = _open_docx(result)
    if d is None:
        return 0.0
    runs = [r for r in d.all_runs() if r.text.strip()]
    return float(bool(runs) and all(_font_name(d, r) == expected for r in runs))
