"""Writer document metrics over .docx files (python-docx).

``result`` is a local path to the agent's document (a getter's cached copy); ``expected`` is a
gold document path or a rules object, depending on the metric. Every metric scores 0 when the
result (or a needed gold file) is None, missing, or not a .docx python-docx can open. That
includes .odt and other formats (only check_highlighted_words also reads .odt, through
``metrics.odf``), so tasks must have the document saved (or converted by a postconfig step) as
.docx. A malformed
rules object or option is the task author's mistake and raises UserError.

Formatting is read as Word resolves it, not only as direct formatting (OSWorld compares direct
formatting only, so a paragraph whose spacing/alignment/font comes from its style looks
"unset"): paragraph properties follow direct → paragraph style → its base styles → document
defaults; run properties follow direct → character style chain → paragraph style chain →
document defaults, and theme fonts resolve through the theme part. Table styles are not applied.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from io import BytesIO
from pathlib import Path
from typing import Any

import docx
from docx.document import Document
from docx.oxml.ns import qn
from docx.text.paragraph import Paragraph
from lxml import etree
from PIL import Image
from rapidfuzz import fuzz

from mcpworld.errors import UserError
from mcpworld.evaluation.metrics.general import rule_value
from mcpworld.evaluation.metrics.odf import open_odt
from mcpworld.evaluation.registry import metric

MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
A_BLIP = "{http://schemas.openxmlformats.org/drawingml/2006/main}blip"
V_IMAGEDATA = "{urn:schemas-microsoft-com:vml}imagedata"
R_EMBED = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed"
R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
A_NS = {"a": "http://schemas.openxmlformats.org/drawingml/2006/main"}

TWIPS_PER_LINE = 240  # w:spacing/@w:line for single spacing under lineRule="auto"
EMU_PER_TWIP = 635
DEFAULT_TEXT_WIDTH_TWIPS = 12240 - 2 * 1440  # US Letter with 1-inch margins
SPACING_TOLERANCE = 0.01
# w:jc values that mean the same thing (strict OOXML spells left/right as start/end).
JC_ALIASES = {"start": "left", "end": "right"}
NO_SHADING = {None, "", "auto", "FFFFFF", "ffffff"}
PAGE_FIELD = re.compile(r"\s*PAGE\b", re.IGNORECASE)


# ---------------------------------------------------------------------------------------------
# Loading and resolving formatting


class _Docx:
    """An opened .docx with its style table, document defaults and theme fonts at hand."""

    def __init__(self, document: Document) -> None:
        self.doc = document
        styles = document.styles.element
        self.styles = {s.get(qn("w:styleId")): s for s in styles.findall(qn("w:style"))}
        self.default_style = {}
        for s in styles.findall(qn("w:style")):
            if s.get(qn("w:default")) in ("1", "true", "on"):
                self.default_style[s.get(qn("w:type"))] = s  # the last default of a type wins
        defaults = styles.find(qn("w:docDefaults"))
        self.default_pPr = _path(defaults, "w:pPrDefault", "w:pPr")
        self.default_rPr = _path(defaults, "w:rPrDefault", "w:rPr")
        self.theme_fonts = _theme_fonts(document)

    def _style_chain(self, style_id: str | None, kind: str) -> list[Any]:
        """The style named by ``style_id`` (or the default of ``kind``) and its base styles."""
        style = self.styles.get(style_id) if style_id else self.default_style.get(kind)
        chain: list[Any] = []
        while style is not None and all(style is not s for s in chain):
            chain.append(style)
            style = self.styles.get(_attr(style, "w:basedOn"))
        return chain

    def ppr_chain(self, p: Any) -> list[Any]:
        """``w:pPr`` elements deciding a paragraph's properties, nearest first."""
        pPr = p.find(qn("w:pPr"))
        chain = [pPr] + [s.find(qn("w:pPr")) for s in self._style_chain(_attr(pPr, "w:pStyle"), "paragraph")]
        return [e for e in [*chain, self.default_pPr] if e is not None]

    def rpr_chain(self, r: Any) -> list[Any]:
        """``w:rPr`` elements deciding a run's properties, nearest first."""
        rPr = r.find(qn("w:rPr"))
        p = _ancestor(r, qn("w:p"))
        pStyle = _attr(_path(p, "w:pPr"), "w:pStyle") if p is not None else None
        styles = self._style_chain(_attr(rPr, "w:rStyle"), "character") + self._style_chain(pStyle, "paragraph")
        chain = [rPr] + [s.find(qn("w:rPr")) for s in styles]
        return [e for e in [*chain, self.default_rPr] if e is not None]

    def paragraph(self, p: Any) -> Paragraph:
        return Paragraph(p, self.doc)

    def all_paragraphs(self) -> Iterator[Any]:
        """Every ``w:p`` of the body, in tables and text boxes too, in document order."""
        return _visible(self.doc.element.body.iter(qn("w:p")))

    def all_runs(self) -> Iterator[Any]:
        return _visible(self.doc.element.body.iter(qn("w:r")))


def _open_docx(path: Any) -> _Docx | None:
    """The document at ``path``, or None when there is no such file or python-docx cannot read it."""
    if not path or not isinstance(path, (str, Path)) or not Path(path).is_file():
        return None
    try:
        return _Docx(docx.Document(str(path)))
    except Exception:  # noqa: BLE001 - any parse failure (zip, XML, content type) means "not a docx"
        return None


def _path(el: Any, *steps: str) -> Any:
    for step in steps:
        if el is None:
            return None
        el = el.find(qn(step))
    return el


def _attr(el: Any, child: str, name: str = "w:val") -> str | None:
    """``child/@name`` of ``el`` (None when either is missing)."""
    found = _path(el, child)
    return None if found is None else found.get(qn(name))


def _ancestor(el: Any, tag: str) -> Any:
    el = el.getparent()
    while el is not None and el.tag != tag:
        el = el.getparent()
    return el


def _visible(elements: Iterator[Any]) -> Iterator[Any]:
    """Skip content inside ``mc:Fallback`` (a second copy of the ``mc:Choice`` content)."""
    for el in elements:
        if not any(a.tag == MC_FALLBACK for a in el.iterancestors()):
            yield el


def _first(chain: list[Any], read: Callable[[Any], Any]) -> Any:
    """The first non-None ``read(element)`` along a formatting chain."""
    for el in chain:
        value = read(el)
        if value is not None:
            return value
    return None


def _theme_fonts(document: Document) -> dict[str, str]:
    """{"major": typeface, "minor": typeface} from the theme part (empty if there is none)."""
    for rel in document.part.rels.values():
        if rel.reltype.endswith("/theme") and not rel.is_external:
            try:
                root = etree.fromstring(rel.target_part.blob)
            except (etree.XMLSyntaxError, ValueError):
                return {}
            fonts = {}
            for kind in ("major", "minor"):
                latin = root.find(f".//a:fontScheme/a:{kind}Font/a:latin", A_NS)
                if latin is not None and latin.get("typeface"):
                    fonts[kind] = latin.get("typeface")
            return fonts
    return {}


def _line_spacing(d: _Docx, p: Any) -> tuple[str, float]:
    """Effective line spacing: ("multiple", lines) or ("exact"/"atLeast", twips); single by default."""

    def read(pPr: Any) -> tuple[str, float] | None:
        spacing = pPr.find(qn("w:spacing"))
        line = None if spacing is None else spacing.get(qn("w:line"))
        if line is None:
            return None
        try:
            value = float(line)
        except ValueError:
            return None
        rule = spacing.get(qn("w:lineRule")) or "auto"
        if rule == "auto":
            return ("multiple", round(value / TWIPS_PER_LINE, 3))
        return (rule, value)

    return _first(d.ppr_chain(p), read) or ("multiple", 1.0)


def _alignment(d: _Docx, p: Any) -> str:
    """Effective ``w:jc`` value ("left" when nothing sets it)."""
    jc = _first(d.ppr_chain(p), lambda pPr: _attr(pPr, "w:jc"))
    return JC_ALIASES.get(jc, jc) if jc else "left"


def _font_name(d: _Docx, r: Any) -> str | None:
    """Effective Latin font of a run (``w:rFonts``: the theme attribute wins over ``w:ascii``)."""

    def read(rPr: Any) -> str | None:
        fonts = rPr.find(qn("w:rFonts"))
        if fonts is None:
            return None
        theme = fonts.get(qn("w:asciiTheme")) or fonts.get(qn("w:hAnsiTheme"))
        if theme:
            resolved = d.theme_fonts.get("major" if theme.startswith("major") else "minor")
            if resolved:
                return resolved
        return fonts.get(qn("w:ascii")) or fonts.get(qn("w:hAnsi"))

    return _first(d.rpr_chain(r), read)


def _is_highlighted(d: _Docx, r: Any) -> bool:
    """A run is highlighted by ``w:highlight`` (Word) or character shading ``w:shd`` (LibreOffice)."""
    chain = d.rpr_chain(r)
    highlight = _first(chain, lambda rPr: _attr(rPr, "w:highlight"))
    shading = _first(chain, lambda rPr: _attr(rPr, "w:shd", "w:fill"))
    return highlight not in (None, "none") or shading not in NO_SHADING


def _tab_stops(d: _Docx, p: Any) -> list[tuple[int, str]]:
    """Effective tab stops (position in twips, alignment), style stops merged with direct ones.

    ``clear`` stops remove an inherited stop; a left stop at position 0 is ignored.
    """
    stops: dict[int, str] = {}
    for pPr in reversed(d.ppr_chain(p)):  # farthest first, so nearer levels override
        tabs = _path(pPr, "w:tabs")
        for tab in tabs if tabs is not None else []:
            try:
                pos = int(float(tab.get(qn("w:pos"), "")))
            except (ValueError, OverflowError):
                continue
            align = tab.get(qn("w:val")) or "left"
            align = JC_ALIASES.get(align, align)
            if align == "clear":
                stops.pop(pos, None)
            else:
                stops[pos] = align
    return sorted((pos, align) for pos, align in stops.items() if not (pos == 0 and align == "left"))


def _texts(d: _Docx) -> list[str]:
    """Text of the top-level body paragraphs (tables are left to compare_docx_tables)."""
    return [p.text for p in d.doc.paragraphs]


def _nonempty(d: _Docx) -> list[Any]:
    """Top-level body paragraphs (``w:p``) that contain visible text."""
    return [p._p for p in d.doc.paragraphs if p.text.strip()]


def _open_pair(result: Any, expected: Any) -> tuple[_Docx, _Docx] | None:
    a, b = _open_docx(result), _open_docx(expected)
    return None if a is None or b is None else (a, b)


def _same(result: Any, expected: Any, extract: Any) -> float:
    """1.0 when ``extract`` gives the same value for the result .docx as for the gold one."""
    docs = _open_pair(result, expected)
    if docs is None:
        return 0.0
    got, want = (extract(d) for d in docs)
    return float(got == want)


def _ratio(a: str, b: str) -> float:
    return fuzz.ratio(a, b) / 100.0


def _check_threshold(value: Any, name: str, metric_name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise UserError(f"metric {metric_name!r}: {name} must be a number in [0, 1], got {value!r}")
    return float(value)


def _check_int(value: Any, name: str, metric_name: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UserError(f"metric {metric_name!r}: {name} must be an integer >= {minimum}, got {value!r}")
    return value


def _optional_rules(rules: Any, metric_name: str) -> dict[str, Any]:
    if rules is None:
        return {}
    if not isinstance(rules, dict):
        raise UserError(f"metric {metric_name!r}: rules must be a mapping, got {rules!r}")
    return rules


# ---------------------------------------------------------------------------------------------
# Document-vs-gold comparisons


@metric("compare_docx_files")
def compare_docx_files(
    result: Any,
    expected: Any,
    ignore_blanks: bool = True,
    ignore_case: bool = False,
    ignore_order: bool = False,
    content_only: bool = False,
    fuzzy_match: bool = False,
    delete_empty_lines: bool = False,
    threshold: float | None = None,
) -> float:
    """Paragraph text of the result .docx equals the gold .docx (options relax the comparison).

    result / expected: .docx paths; top-level body paragraphs only (tables: compare_docx_tables).

    - ``ignore_blanks`` (default on): whitespace runs, empty paragraphs and paragraph boundaries
      collapse to one space, so the two whole texts are compared.
    - ``ignore_case``: compare lower-cased. ``delete_empty_lines``: drop blank paragraphs.
    - ``ignore_order``: compare the paragraphs as a sorted multiset (sorted after the other
      normalisations, so case/whitespace does not change the order; OSWorld sorted first).
    - ``content_only``: partial credit, the rapidfuzz similarity of the whitespace-collapsed
      texts, as in OSWorld; with our ``threshold`` option, 1 when it reaches the threshold, else 0.
    - ``fuzzy_match``: partial credit, the similarity itself: of the whole texts with
      ``ignore_blanks``, else the mean per-paragraph similarity over the longer document (a
      missing paragraph counts 0; OSWorld gave 0 for any paragraph-count difference).
    """
    if threshold is not None:
        threshold = _check_threshold(threshold, "threshold", "compare_docx_files")
    docs = _open_pair(result, expected)
    if docs is None:
        return 0.0
    return _compare_texts(
        docs, ignore_blanks, ignore_case, ignore_order, content_only, fuzzy_match, delete_empty_lines, threshold
    )


def _compare_texts(
    docs: tuple[_Docx, _Docx],
    ignore_blanks: bool = True,
    ignore_case: bool = False,
    ignore_order: bool = False,
    content_only: bool = False,
    fuzzy_match: bool = False,
    delete_empty_lines: bool = False,
    threshold: float | None = None,
) -> float:
    """compare_docx_files on two opened documents."""
    collapse = ignore_blanks or content_only

    def normalise(texts: list[str]) -> list[str]:
        out = [t.lower() if ignore_case else t for t in texts]
        if collapse:
            out = [re.sub(r"\s+", " ", t).strip() for t in out]
        if delete_empty_lines or collapse:
            out = [t for t in out if t.strip()]
        return sorted(out) if ignore_order else out

    got, want = (normalise(_texts(d)) for d in docs)
    if collapse:
        got_text, want_text = " ".join(got), " ".join(want)
        if content_only:
            similarity = _ratio(got_text, want_text)
            return similarity if threshold is None else float(similarity >= threshold)
        if fuzzy_match:
            return _ratio(got_text, want_text)
        return float(got_text == want_text)
    if fuzzy_match:
        n = max(len(got), len(want))
        if n == 0:
            return 1.0
        pad = [""] * n
        return sum(_ratio(a, b) for a, b in zip((got + pad)[:n], (want + pad)[:n])) / n
    return float(got == want)


def _table_cells(d: _Docx) -> list[list[list[str]]]:
    """Each top-level table as rows of stripped cell texts (a merged cell repeats its text)."""
    return [[[cell.text.strip() for cell in row.cells] for row in table.rows] for table in d.doc.tables]


@metric("compare_docx_tables")
def compare_docx_tables(result: Any, expected: Any) -> float:
    """Same number of top-level tables as the gold .docx, same shape, same (stripped) cell text."""
    return _same(result, expected, _table_cells)


def _images(d: _Docx) -> list[bytes | tuple[str, tuple[int, int], bytes]]:
    """The body's embedded images in document order, decoded to RGBA pixels where Pillow can.

    Images Pillow cannot decode (EMF, SVG, …) are kept as raw bytes. Linked (not embedded)
    images are skipped.
    """
    body = d.doc.element.body
    refs = []
    for el in _visible(body.iter(A_BLIP, V_IMAGEDATA)):
        refs.append(el.get(R_EMBED) if el.tag == A_BLIP else el.get(R_ID))
    images: list[bytes | tuple[str, tuple[int, int], bytes]] = []
    for rid in refs:
        part = d.doc.part.related_parts.get(rid) if rid else None
        blob = getattr(part, "blob", None)
        if blob is None:
            continue
        try:
            with Image.open(BytesIO(blob)) as img:
                rgba = img.convert("RGBA")
                images.append(("RGBA", rgba.size, rgba.tobytes()))
        except Exception:  # noqa: BLE001 - a format Pillow cannot decode: compare the bytes
            images.append(blob)
    return images


@metric("compare_docx_images")
def compare_docx_images(result: Any, expected: Any) -> float:
    """The result's embedded images equal the gold's, one by one in document order.

    Images are compared by decoded pixels (RGBA, same size), so a lossless re-encode still
    matches; undecodable formats are compared byte for byte. OSWorld walked the relationship
    table instead, which is not document order and includes images no longer shown. Two
    documents without images match.
    """
    return _same(result, expected, _images)


@metric("compare_line_spacing")
def compare_line_spacing(result: Any, expected: Any) -> float:
    """Same text as the gold .docx and the gold's line spacing in every non-empty paragraph.

    The text check is compare_docx_files with its defaults. Spacing is the effective value (direct, style chain, document defaults): a multiple of
    lines, or an exact/at-least height; paragraphs are paired in order.
    """
    docs = _open_pair(result, expected)
    if docs is None or _compare_texts(docs) != 1.0:
        return 0.0
    got, want = ([_line_spacing(d, p) for p in _nonempty(d)] for d in docs)
    return float(got == want)


@metric("check_tabstops")
def check_tabstops(
    result: Any, expected: Any, word_number_split_by_tabstop: int | None = None, index: int = 0
) -> float:
    """Tab stops of the result's non-empty paragraphs match the gold's (partial credit by distance).

    The non-empty paragraph counts must match, and paired paragraphs must have the same number
    of effective tab stops with the same alignments; the score is 1 minus the mean, over
    paragraphs, of the summed position differences divided by the gold's text width (clamped at
    0). Option ``word_number_split_by_tabstop`` (with ``index``, default 0): every result
    paragraph's ``index``-th tab-separated part must have exactly that many words; a paragraph
    without that part fails (OSWorld crashed there).
    """
    if word_number_split_by_tabstop is not None:
        _check_int(word_number_split_by_tabstop, "word_number_split_by_tabstop", "check_tabstops")
    _check_int(index, "index", "check_tabstops")
    docs = _open_pair(result, expected)
    if docs is None:
        return 0.0
    mine, gold = docs
    got, want = _nonempty(mine), _nonempty(gold)
    if len(got) != len(want) or not got:
        return 0.0
    if word_number_split_by_tabstop is not None:
        for p in got:
            parts = mine.paragraph(p).text.split("\t")
            if index >= len(parts) or len(parts[index].split()) != word_number_split_by_tabstop:
                return 0.0
    width = _text_width_twips(gold)
    penalty = 0.0
    for p1, p2 in zip(got, want):
        tabs1, tabs2 = _tab_stops(mine, p1), _tab_stops(gold, p2)
        if len(tabs1) != len(tabs2) or any(a1 != a2 for (_, a1), (_, a2) in zip(tabs1, tabs2)):
            return 0.0
        penalty += sum(abs(x1 - x2) for (x1, _), (x2, _) in zip(tabs1, tabs2)) / width
    return max(0.0, 1.0 - penalty / len(got))


def _text_width_twips(d: _Docx) -> float:
    """Page width minus side margins of the first section (Letter, 1-inch margins if unset)."""
    section = d.doc.sections[0] if len(d.doc.sections) else None
    if section is None or None in (section.page_width, section.left_margin, section.right_margin):
        return float(DEFAULT_TEXT_WIDTH_TWIPS)
    width = (section.page_width - section.left_margin - section.right_margin) / EMU_PER_TWIP
    return width if width > 0 else float(DEFAULT_TEXT_WIDTH_TWIPS)


def _highlighted_segments(d: _Docx) -> list[str]:
    """Highlighted text in document order; adjacent highlighted runs in a paragraph form one segment."""
    segments: list[str] = []
    current: list[str] = []
    current_p = None
    for r in d.all_runs():
        text = r.text
        if not text:
            continue  # field characters, bookmarks…: neither extend nor break a segment
        p = _ancestor(r, qn("w:p"))
        highlighted = _is_highlighted(d, r)
        if not highlighted or p is not current_p:
            segments.append("".join(current))
            current = []
        if highlighted:
            current.append(text)
            current_p = p
        else:
            current_p = None
    segments.append("".join(current))
    return [s.strip() for s in segments if s.strip()]


@metric("compare_highlighted_text")
def compare_highlighted_text(result: Any, expected: Any) -> float:
    """The highlighted text of the result .docx equals the gold's, segment by segment in order.

    Highlighting is ``w:highlight`` (any colour but none) or character shading ``w:shd`` with a
    fill (how LibreOffice exports highlighting; OSWorld saw only ``w:highlight`` and so never
    matched LibreOffice files). Colours are not compared. OSWorld compared sets of the first
    text element of each run, which ignored duplicates, order and split runs.
    """
    return _same(result, expected, _highlighted_segments)


# ---------------------------------------------------------------------------------------------
# Single-document checks


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


def _field_instructions(root: Any) -> list[str]:
    """Instruction text of every field (simple and complex, nested too) under ``root``."""
    instructions: list[str] = []
    stack: list[list[str]] = []
    for el in root.iter():
        if el.tag == qn("w:fldSimple"):
            instructions.append(el.get(qn("w:instr")) or "")
        elif el.tag == qn("w:fldChar"):
            kind = el.get(qn("w:fldCharType"))
            if kind == "begin":
                stack.append([])
            elif kind == "end" and stack:
                instructions.append("".join(stack.pop()))
        elif el.tag == qn("w:instrText") and stack:
            stack[-1].append(el.text or "")
    return instructions + ["".join(parts) for parts in stack]


@metric("has_page_numbers_in_footers")
def has_page_numbers_in_footers(result: Any) -> float:
    """Every section of the .docx has a footer containing a PAGE field (a live page number).

    A section's default footer counts, and so do its first-page footer (when the section has a
    distinct first page) and even-page footer (when the document has distinct odd/even pages);
    a footer linked to the previous section uses that section's. OSWorld accepted any digit in
    the first footer paragraph, so a typed "2024" passed and a field number in a later paragraph
    failed.
    """
    d = _open_docx(result)
    if d is None:
        return 0.0
    if not len(d.doc.sections):
        return 0.0
    even_pages = d.doc.settings.odd_and_even_pages_header_footer
    for section in d.doc.sections:
        footers = [section.footer]
        if section.different_first_page_header_footer:
            footers.append(section.first_page_footer)
        if even_pages:
            footers.append(section.even_page_footer)
        if not any(PAGE_FIELD.match(instr) for f in footers for instr in _field_instructions(f.part.element)):
            return 0.0
    return 1.0


@metric("is_first_line_centered")
def is_first_line_centered(result: Any) -> float:
    """The first body paragraph with visible text is centred (effective alignment).

    OSWorld took paragraph 0 even when empty, and crashed on an empty document.
    """
    d = _open_docx(result)
    if d is None:
        return 0.0
    paragraphs = _nonempty(d)
    return float(bool(paragraphs) and _alignment(d, paragraphs[0]) == "center")


def _is_on(el: Any) -> bool:
    return el is not None and el.get(qn("w:val")) not in ("0", "false", "off")


@metric("contains_page_break")
def contains_page_break(result: Any, rules: Any = None) -> float:
    """The .docx has a manual page break; with ``rules["page_break_count"]``, exactly that many.

    Counted: ``<w:br w:type="page"/>`` anywhere in the body (tables too) and paragraphs with
    direct "page break before" (LibreOffice's way to store a break inserted before a paragraph),
    except on the very first paragraph where it breaks nothing. Rendered-layout markers
    (``w:lastRenderedPageBreak``) and section breaks are not counted. ``rules`` may be omitted.
    """
    rules = _optional_rules(rules, "contains_page_break")
    count = rules.get("page_break_count")
    if count is not None:
        _check_int(count, "page_break_count", "contains_page_break")
    d = _open_docx(result)
    if d is None:
        return 0.0
    found = sum(1 for br in _visible(d.doc.element.body.iter(qn("w:br"))) if br.get(qn("w:type")) == "page")
    breaks_before = (_is_on(_path(p, "w:pPr", "w:pageBreakBefore")) for p in d.all_paragraphs())
    found += sum(1 for i, on in enumerate(breaks_before) if i > 0 and on)
    return float(found == count) if count is not None else float(found > 0)


def _spacing_is(value: tuple[str, float], lines: float) -> bool:
    return value[0] == "multiple" and abs(value[1] - lines) <= SPACING_TOLERANCE


@metric("evaluate_spacing")
def evaluate_spacing(result: Any, rules: Any = None) -> float:
    """Introduction single-spaced, body double-spaced, conclusion 1.5-spaced.

    The introduction is the first non-empty body paragraph, the conclusion the last, and every
    paragraph between them is body; at least three are needed. The line spacings (effective,
    as multiples of a line) default to 1.0 / 2.0 / 1.5 and can be changed with
    ``rules{"introduction", "body", "conclusion"}``. OSWorld indexed paragraphs 0-2 (empty ones
    included, crashing on shorter documents) and compared direct formatting only.
    """
    rules = _optional_rules(rules, "evaluate_spacing")
    wanted = {"introduction": 1.0, "body": 2.0, "conclusion": 1.5}
    for key, default in list(wanted.items()):
        value = rules.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise UserError(f"metric 'evaluate_spacing': {key} must be a positive number of lines, got {value!r}")
        wanted[key] = float(value)
    d = _open_docx(result)
    if d is None:
        return 0.0
    paragraphs = _nonempty(d)
    if len(paragraphs) < 3:
        return 0.0
    spacings = [_line_spacing(d, p) for p in paragraphs]
    return float(
        _spacing_is(spacings[0], wanted["introduction"])
        and all(_spacing_is(s, wanted["body"]) for s in spacings[1:-1])
        and _spacing_is(spacings[-1], wanted["conclusion"])
    )


@metric("evaluate_alignment")
def evaluate_alignment(result: Any, expected: Any = None, words: int = 3) -> float:
    """Each sentence's first ``words`` words (default 3) are set off from the rest by a tab or wide gap.

    Only sentences longer than ``words`` words are checked. Sentences are the '.'-separated pieces of each body paragraph; the gap between word
    ``words`` and the next must contain a tab or at least two spaces. At least one sentence must
    be long enough to be checked. This is what OSWorld's checker describes ("first part + large
    space/tab + second part"); its code only checked that the words kept their order, which
    almost any document passed. ``expected`` is unused.
    """
    words = _check_int(words, "words", "evaluate_alignment", minimum=1)
    d = _open_docx(result)
    if d is None:
        return 0.0
    gap = re.compile(rf"\s*(?:\S+\s+){{{words - 1}}}\S+(\s+)\S")
    checked = 0
    for paragraph in d.doc.paragraphs:
        for sentence in paragraph.text.split("."):
            if len(sentence.split()) <= words:
                continue
            checked += 1
            match = gap.match(sentence)
            if match is None or ("\t" not in match.group(1) and "  " not in match.group(1)):
                return 0.0
    return float(checked > 0)


def _records(d: _Docx, separator: str, field_count: int) -> list[tuple[str, ...]]:
    """Paragraphs that split into exactly ``field_count`` fields, as tuples of stripped fields."""
    out = []
    for p in d.doc.paragraphs:
        fields = p.text.split(separator)
        if len(fields) == field_count:
            out.append(tuple(f.strip() for f in fields))
    return out


@metric("check_no_duplicates")
def check_no_duplicates(
    result: Any, expected: Any = None, separator: str = ",", field_count: int = 4, key_index: int = 1
) -> float:
    """No two records of the result .docx share a key (with ``expected``: one per original key).

    A record is a body paragraph that splits on ``separator`` into ``field_count`` fields (OSWorld's
    train timetable: ``time, train_id, station, platform``); its key is field ``key_index``.
    Other paragraphs (headings) are ignored; at least one record is needed. ``expected`` is the
    original (pre-deduplication) .docx: the result's keys must equal its keys and every result
    record must be one of its records (nothing invented or edited). OSWorld took the initial
    file as the first argument and did not check that records came from it.
    """
    if not isinstance(separator, str) or not separator:
        raise UserError(f"metric 'check_no_duplicates': separator must be a non-empty string, got {separator!r}")
    _check_int(field_count, "field_count", "check_no_duplicates", minimum=1)
    _check_int(key_index, "key_index", "check_no_duplicates")
    if key_index >= field_count:
        raise UserError(f"metric 'check_no_duplicates': key_index {key_index} must be below field_count {field_count}")
    d = _open_docx(result)
    if d is None:
        return 0.0
    records = _records(d, separator, field_count)
    keys = [r[key_index] for r in records]
    if not records or len(keys) != len(set(keys)):
        return 0.0
    if expected is None:
        return 1.0
    original = _open_docx(expected)
    if original is None:
        return 0.0
    before = _records(original, separator, field_count)
    return float(set(keys) == {r[key_index] for r in before} and set(records) <= set(before))


# ---------------------------------------------------------------------------------------------
# Formatting tasks graded against a gold document: the text must equal the gold's
# (compare_docx_files with its defaults), then the formatting the task asked for is checked.


def _rpr_value(d: _Docx, r: Any, child: str) -> str | None:
    """Effective ``w:rPr/child/@w:val`` of a run (direct, character style, paragraph style, defaults)."""
    return _first(d.rpr_chain(r), lambda rPr: _attr(rPr, child))


def _rpr_on(d: _Docx, r: Any, child: str) -> bool:
    """A toggle property (``w:i``, ``w:strike`` …) is in effect for the run."""
    return _is_on(_first(d.rpr_chain(r), lambda rPr: rPr.find(qn(child))))


def _own_runs(p: Any) -> list[Any]:
    """The runs of paragraph ``p`` in order (in hyperlinks and fields too, not in nested text boxes)."""
    return [r for r in _visible(p.iter(qn("w:r"))) if _ancestor(r, qn("w:p")) is p]


def _same_text(docs: tuple[_Docx, _Docx]) -> bool:
    return _compare_texts(docs) == 1.0


def _subscript_offsets(d: _Docx, p: Any) -> set[int]:
    """Character offsets of subscript text in paragraph ``p``."""
    offsets: set[int] = set()
    position = 0
    for r in _own_runs(p):
        length = len(r.text)
        if length and _rpr_value(d, r, "w:vertAlign") == "subscript":
            offsets.update(range(position, position + length))
        position += length
    return offsets


@metric("compare_subscript_contains")
def compare_subscript_contains(result: Any, expected: Any) -> float:
    """1 when some paragraph of the result has subscript text where the gold's paired paragraph has it.

    Paragraphs are paired in order (top-level body paragraphs) and subscript is the effective
    ``w:vertAlign``. OSWorld paired runs by index, so the same subscript "2" in "H2O" was missed
    when one file split the paragraph into runs differently; character offsets are compared here.
    """
    docs = _open_pair(result, expected)
    if docs is None:
        return 0.0
    mine, gold = docs
    for p1, p2 in zip(mine.doc.paragraphs, gold.doc.paragraphs):
        if _subscript_offsets(mine, p1._p) & _subscript_offsets(gold, p2._p):
            return 1.0
    return 0.0


def _collapsed(texts: list[str]) -> str:
    return " ".join(" ".join(texts).split())


@metric("check_highlighted_words")
def check_highlighted_words(result: Any, expected: Any) -> float:
    """1 when the result has the gold's text and no highlighted text at all (.odt, or .docx).

    .odt (the OSWorld task's format) is read with ``metrics.odf``: paragraph and heading text,
    whitespace collapsed as compare_docx_files does; a character counts as highlighted when the
    nearest span or paragraph style that sets a character background sets a colour. OSWorld
    only saw automatic span styles with exactly ``#ffff00``, so recolouring the highlight, or a
    highlight in a named style, passed. For .docx, highlighting is ``w:highlight`` or character
    shading, as in compare_highlighted_text.
    """
    docs = _open_pair(result, expected)
    if docs is not None:
        mine = docs[0]
        return float(_same_text(docs) and not any(r.text.strip() and _is_highlighted(mine, r) for r in mine.all_runs()))
    mine_odt, gold_odt = open_odt(result), open_odt(expected)
    if mine_odt is None or gold_odt is None:
        return 0.0
    if _collapsed(mine_odt.texts()) != _collapsed(gold_odt.texts()):
        return 0.0
    return float(not mine_odt.highlighted_text().strip())


@metric("evaluate_strike_through_last_paragraph")
def evaluate_strike_through_last_paragraph(result: Any, expected: Any) -> float:
    """1 when the result has the gold's text and every word of its last paragraph is struck through.

    The last paragraph is the last top-level one with visible text; single or double strike
    (effective formatting) counts. OSWorld took the very last paragraph, so a trailing empty
    paragraph (no runs) passed without any strike-through.
    """
    docs = _open_pair(result, expected)
    if docs is None or not _same_text(docs):
        return 0.0
    mine = docs[0]
    paragraphs = _nonempty(mine)
    runs = [r for r in _own_runs(paragraphs[-1]) if r.text.strip()] if paragraphs else []
    return float(bool(runs) and all(_rpr_on(mine, r, "w:strike") or _rpr_on(mine, r, "w:dstrike") for r in runs))


VOWELS = "aeiou"
RED = (255, 0, 0)
BLUE = (0, 0, 255)
DEFAULT_DELTA_E = 3.5  # CIEDE2000; about the smallest difference people notice side by side


def _hex_rgb(value: str | None) -> tuple[int, int, int] | None:
    if not value or len(value) != 6:
        return None
    try:
        return (int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16))
    except ValueError:
        return None


def _delta_e(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """CIEDE2000 difference of two sRGB colours."""
    import numpy as np
    from skimage.color import deltaE_ciede2000, rgb2lab  # slow import: only when needed

    lab = rgb2lab(np.array([[a, b]], dtype=float) / 255.0)
    return float(deltaE_ciede2000(lab[0, 0], lab[0, 1]))


def _table_words(d: _Docx) -> Iterator[list[tuple[str, str | None]]]:
    """Each word in a table cell as (character, effective ``w:color`` value) pairs."""
    for p in d.all_paragraphs():
        if _ancestor(p, qn("w:tc")) is None:
            continue
        word: list[tuple[str, str | None]] = []
        for r in _own_runs(p):
            color = _rpr_value(d, r, "w:color")
            for ch in r.text:
                if ch.isspace():
                    if word:
                        yield word
                    word = []
                else:
                    word.append((ch, color))
        if word:
            yield word


@metric("evaluate_colored_words_in_tables")
def evaluate_colored_words_in_tables(result: Any, expected: Any, threshold: float = DEFAULT_DELTA_E) -> float:
    """1 when the result has the gold's text and, in its tables, words starting with a vowel are red
    and all other words blue.

    A colour matches when its CIEDE2000 difference from pure red/blue is at most ``threshold``
    (default 3.5). Words are whitespace-separated and every character of a word must match
    (OSWorld judged each run by its first letter, so a word split over runs was misjudged and
    a run holding several words was judged by the first word only); a run without an explicit
    colour (automatic) never matches (OSWorld crashed on it). The tables' text must equal the
    gold's too (OSWorld compared body paragraphs only, so deleted table words went unnoticed).
    A result without table words scores 0.
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or threshold < 0:
        raise UserError(f"metric 'evaluate_colored_words_in_tables': threshold must be a number >= 0, got {threshold!r}")
    docs = _open_pair(result, expected)
    if docs is None or not _same_text(docs) or _table_cells(docs[0]) != _table_cells(docs[1]):
        return 0.0
    matches: dict[tuple[str | None, tuple[int, int, int]], bool] = {}

    def close(color: str | None, target: tuple[int, int, int]) -> bool:
        if (color, target) not in matches:
            rgb = _hex_rgb(color)
            matches[(color, target)] = rgb is not None and _delta_e(rgb, target) <= threshold
        return matches[(color, target)]

    checked = False
    for word in _table_words(docs[0]):
        target = RED if word[0][0].lower() in VOWELS else BLUE
        if not all(close(color, target) for _, color in word):
            return 0.0
        checked = True
    return float(checked)


def _size_pt(d: _Docx, r: Any) -> float | None:
    """Effective font size of a run in points (``w:sz`` is in half-points), None when unset."""
    value = _rpr_value(d, r, "w:sz")
    try:
        return float(value) / 2 if value is not None else None
    except ValueError:
        return None


@metric("check_italic_font_size_14")
def check_italic_font_size_14(result: Any, expected: Any) -> float:
    """1 when the result has the gold's text and every italic run of the body is 14 pt.

    Italic and size are the effective formatting (direct, styles, defaults), in top-level body
    paragraphs as OSWorld reads them; at least one italic run with text is needed (OSWorld
    passed a document whose italics had been removed).
    """
    docs = _open_pair(result, expected)
    if docs is None or not _same_text(docs):
        return 0.0
    mine = docs[0]
    italic = [r for p in _nonempty(mine) for r in _own_runs(p) if r.text.strip() and _rpr_on(mine, r, "w:i")]
    return float(bool(italic) and all(_size_pt(mine, r) == 14 for r in italic))


@metric("compare_unique_train_records")
def compare_unique_train_records(result: Any, expected: Any) -> float:
    """1 when the result keeps one record per train id, as the gold does, using only original lines.

    expected: ``[gold, original]`` .docx paths. A record is a paragraph of four comma-separated
    fields (``time, train_id, station, platform``). The result's non-empty lines must all be
    lines of the original, its train ids unique and the same set as the gold's, and it must
    have as many non-empty lines as the gold.
    """
    name = "compare_unique_train_records"
    if not isinstance(expected, (list, tuple)) or len(expected) != 2:
        raise UserError(f"metric {name!r}: expected must be [gold, original] .docx paths, got {expected!r}")
    docs = [_open_docx(path) for path in (result, *expected)]
    if any(d is None for d in docs):
        return 0.0
    mine, gold, original = docs

    def lines(d: _Docx) -> list[str]:
        return [p.text.strip() for p in d.doc.paragraphs if p.text.strip()]

    ids = [record[1] for record in _records(mine, ",", 4)]
    gold_ids = {record[1] for record in _records(gold, ",", 4)}
    return float(
        set(lines(mine)) <= set(lines(original))
        and len(ids) == len(set(ids))
        and set(ids) == gold_ids
        and len(lines(mine)) == len(lines(gold))
    )


@metric("compare_docx_files_and_ignore_new_lines")
def compare_docx_files_and_ignore_new_lines(result: Any, expected: Any, ignore_blanks: bool = True) -> float:
    """compare_docx_files with blank paragraphs dropped first: empty lines between paragraphs do not count.

    ``ignore_blanks`` (default on) compares the whole texts with whitespace collapsed; off, the
    remaining paragraphs must be equal one by one. Whitespace-only paragraphs are blank too
    (OSWorld dropped only paragraphs with no text at all).
    """
    docs = _open_pair(result, expected)
    if docs is None:
        return 0.0
    return _compare_texts(docs, ignore_blanks=bool(ignore_blanks), delete_empty_lines=True)


REFERENCE_EPSILON = 0.01


@metric("compare_references")
def compare_references(
    result: Any,
    expected: Any,
    reference_indicator: str = "References",
    reference_base_result: float = 0.5,
    content_only: bool = False,
) -> float:
    """Similarity of the reference list after the ``reference_indicator`` heading, rescaled above a base.

    The reference list is every non-empty top-level paragraph after the first paragraph whose
    (stripped) text is the indicator. Both documents without the heading score 1, one without
    it 0, different reference counts 0. Otherwise the mean rapidfuzz ratio of paired references
    ``s`` scores ``(s - base) / (1 - base)`` when ``s >= base + 0.01``, else 0, with base
    ``reference_base_result`` (default 0.5). ``content_only`` is accepted and ignored, as OSWorld
    does (its task passes it).
    """
    name = "compare_references"
    if not isinstance(reference_indicator, str) or not reference_indicator.strip():
        raise UserError(f"metric {name!r}: reference_indicator must be a heading text, got {reference_indicator!r}")
    base = _check_threshold(reference_base_result, "reference_base_result", name)
    if base >= 1:
        raise UserError(f"metric {name!r}: reference_base_result must be below 1, got {reference_base_result!r}")
    docs = _open_pair(result, expected)
    if docs is None:
        return 0.0

    def references(d: _Docx) -> list[str] | None:
        texts = [p.text for p in d.doc.paragraphs]
        for i, text in enumerate(texts):
            if text.strip() == reference_indicator.strip():
                return [t for t in texts[i + 1:] if t.strip()]
        return None

    got, want = (references(d) for d in docs)
    if got is None and want is None:
        return 1.0
    if got is None or want is None or len(got) != len(want) or not got:
        return 0.0
    similarity = sum(_ratio(a, b) for a, b in zip(got, want)) / len(got)
    return (similarity - base) / (1 - base) if similarity >= base + REFERENCE_EPSILON else 0.0


@metric("fuzzy_place_math")
def fuzzy_place_math(result: Any, rules: Any) -> float:
    """Mean, over the words of the result .docx, of each word's best rapidfuzz ratio to an accepted answer.

    rules: ``{expected: [answers…], count?: n}``. Words are the whitespace-separated tokens of
    the top-level paragraphs (an address written without spaces, as Chinese ones are, is one
    word). With ``count`` the document must have exactly that many words. OSWorld always
    required exactly 3 while its only task (7ff48d5b) asks for 5 addresses, so a correct answer
    scored 0 there; no count is enforced unless the rules give one. No words scores 0.
    """
    name = "fuzzy_place_math"
    answers = rule_value(rules, "expected", name)
    count = rule_value(rules, "count", name, default=None)
    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
        raise UserError(f"metric {name!r}: rules 'expected' must be a non-empty list of strings, got {answers!r}")
    if count is not None:
        _check_int(count, "count", name, minimum=1)
    d = _open_docx(result)
    if d is None:
        return 0.0
    words = [word for p in d.doc.paragraphs for word in p.text.split()]
    if not words or (count is not None and len(words) != count):
        return 0.0
    return sum(max(_ratio(word, answer) for answer in answers) for word in words) / len(words)
