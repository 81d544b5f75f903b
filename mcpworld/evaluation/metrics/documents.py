"""Writer document metrics over .docx (and .odt) files, scoring as OSWorld's docs.py does.

``result`` is a local path to the agent's document (a getter's cached copy); ``expected`` is a
gold document path or a rules object, depending on the metric. A missing file, or one
python-docx cannot open, scores 0, as does a document on which OSWorld's metric would fail
(an empty document where a paragraph is needed, a run without a colour...). A malformed rules
object or option is the task author's mistake and raises UserError.

Formatting is read as OSWorld reads it, through python-docx: direct formatting of the runs and
paragraphs of the top-level body (``Document.paragraphs``, ``Paragraph.runs``), so formatting that
comes only from a style does not count. The one exception is compare_font_names, which grades
the effective font (see its docstring). Where OSWorld crashed on valid input, we score what
the input shows instead; each such case is named in the metric's docstring.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable, Iterator
from io import BytesIO
from pathlib import Path
from typing import Any

import docx
from docx.document import Document
from docx.enum.text import WD_PARAGRAPH_ALIGNMENT, WD_TAB_ALIGNMENT
from docx.oxml.ns import qn
from docx.text.paragraph import Paragraph
from lxml import etree
from PIL import Image
from rapidfuzz import fuzz

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.general import rule_value
from mcpworld.evaluation.registry import metric

MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
A_NS = {"a": "http://schemas.openxmlformats.org/drawingml/2006/main"}
W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
EMU_PER_TWIP = 635
DEFAULT_TEXT_WIDTH_EMU = (12240 - 2 * 1440) * EMU_PER_TWIP  # US Letter with 1-inch margins

ODF_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
ODF_STYLE = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
ODF_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
ODF_FO = "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
ODF_MANIFEST = "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"
_XML_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)


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

    def rpr_chain(self, r: Any) -> list[Any]:
        """``w:rPr`` elements deciding a run's properties, nearest first."""
        rPr = r.find(qn("w:rPr"))
        p = _ancestor(r, qn("w:p"))
        pStyle = _attr(_path(p, "w:pPr"), "w:pStyle") if p is not None else None
        styles = self._style_chain(_attr(rPr, "w:rStyle"), "character") + self._style_chain(pStyle, "paragraph")
        chain = [rPr] + [s.find(qn("w:rPr")) for s in styles]
        return [e for e in [*chain, self.default_rPr] if e is not None]

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


def _document(path: Any) -> Document | None:
    """python-docx's Document for ``path`` (None when missing or unreadable)."""
    d = _open_docx(path)
    return None if d is None else d.doc


def _ends(path: Any, suffix: str) -> bool:
    """OSWorld picks the reader by the file name's (case-sensitive) ending."""
    return isinstance(path, str) and path.endswith(suffix)


def _zero_on_failure(fn: Callable[..., float]) -> Callable[..., float]:
    """A document the metric cannot read as it expects (an empty body where a paragraph is needed,
    a run without a colour...) scores 0, as the same failure does in OSWorld; UserError passes."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> float:
        try:
            return fn(*args, **kwargs)
        except UserError:
            raise
        except Exception:  # noqa: BLE001 - see the docstring
            return 0.0

    return wrapper


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


def _collapse(texts: list[str]) -> str:
    """Paragraphs joined by newlines, every whitespace run made one space, ends trimmed."""
    return re.sub(r"\s+", " ", "\n".join(texts)).strip()


# ---------------------------------------------------------------------------------------------
# OpenDocument text, read as odfpy presents it to OSWorld


class _OdtParts:
    """content.xml and styles.xml of an .odt (each only when the manifest lists it, as odfpy loads)."""

    def __init__(self, path: str) -> None:
        with zipfile.ZipFile(path) as package:
            manifest = etree.fromstring(package.read("META-INF/manifest.xml"), _XML_PARSER)
            listed = {e.get(f"{{{ODF_MANIFEST}}}full-path") for e in manifest.iter(f"{{{ODF_MANIFEST}}}file-entry")}
            self.roots = [
                etree.fromstring(package.read(name), _XML_PARSER) for name in ("content.xml", "styles.xml") if name in listed
            ]

    def elements(self, ns: str, local: str) -> list[Any]:
        """Every element of that name, content.xml first, each part in document order."""
        return [el for root in self.roots for el in root.iter(f"{{{ns}}}{local}")]

    def paragraph_texts(self) -> list[str]:
        """Text of every ``text:p`` (not ``text:h``): its own text nodes and those directly inside
        its ``text:span`` children; spaces, tabs and nested spans are not seen (odfpy's view)."""
        span = f"{{{ODF_TEXT}}}span"
        texts = []
        for p in self.elements(ODF_TEXT, "p"):
            parts = [p.text or ""]
            for child in p:
                if child.tag == span:
                    parts.append(child.text or "")
                    parts.extend(grandchild.tail or "" for grandchild in child)
                parts.append(child.tail or "")
            texts.append("".join(parts))
        return texts

    def automatic_styles(self) -> list[Any]:
        return [child for auto in self.elements(ODF_OFFICE, "automatic-styles") for child in auto]


def _open_odt(path: Any) -> _OdtParts | None:
    try:
        return _OdtParts(str(path))
    except Exception:  # noqa: BLE001 - not a readable OpenDocument package
        return None


# ---------------------------------------------------------------------------------------------
# Document-vs-gold comparisons


def _paragraph_texts(result: Any, expected: Any) -> tuple[list[str], list[str]] | None:
    """Both documents' paragraph texts: two .docx (top-level body) or two .odt; None otherwise."""
    if _ends(result, ".docx") and _ends(expected, ".docx"):
        docs = _document(result), _document(expected)
        if docs[0] is None or docs[1] is None:
            return None
        return [p.text for p in docs[0].paragraphs], [p.text for p in docs[1].paragraphs]
    if _ends(result, ".odt") and _ends(expected, ".odt"):
        odts = _open_odt(result), _open_odt(expected)
        if odts[0] is None or odts[1] is None:
            return None
        return odts[0].paragraph_texts(), odts[1].paragraph_texts()
    return None


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
    """Paragraph text of the result equals the gold's (two .docx, or two .odt), as OSWorld compares.

    .docx: top-level body paragraphs (tables: compare_docx_tables); .odt: every ``text:p`` as
    odfpy shows it (headings are not included). The file names must end in .docx/.odt.

    - ``ignore_order``: the raw paragraphs are sorted first; ``delete_empty_lines`` then drops
      whitespace-only paragraphs.
    - ``content_only``: partial credit, the rapidfuzz similarity of the whole texts with
      whitespace collapsed (lower-cased with ``ignore_case``); with our ``threshold`` option
      (not OSWorld's), 1 when it reaches the threshold, else 0.
    - ``ignore_blanks`` (default on): the whole texts with whitespace collapsed must be equal
      (``fuzzy_match``: their similarity is the score).
    - otherwise the paragraph counts must be equal and the paragraphs equal one by one
      (``fuzzy_match``: the mean similarity of paired paragraphs).
    """
    if threshold is not None:
        threshold = _check_threshold(threshold, "threshold", "compare_docx_files")
    texts = _paragraph_texts(result, expected)
    if texts is None:
        return 0.0
    return _compare_texts(*texts, ignore_blanks, ignore_case, ignore_order, content_only, fuzzy_match,
                          delete_empty_lines, threshold)


def _compare_texts(
    got: list[str],
    want: list[str],
    ignore_blanks: bool = True,
    ignore_case: bool = False,
    ignore_order: bool = False,
    content_only: bool = False,
    fuzzy_match: bool = False,
    delete_empty_lines: bool = False,
    threshold: float | None = None,
) -> float:
    """compare_docx_files on two lists of paragraph texts."""
    if ignore_order:
        got, want = sorted(got), sorted(want)
    if delete_empty_lines:
        got, want = [t for t in got if t.strip()], [t for t in want if t.strip()]
    fold = (lambda t: t.lower()) if ignore_case else (lambda t: t)
    if content_only or ignore_blanks:
        a, b = fold(_collapse(got)), fold(_collapse(want))
        if content_only:
            similarity = _ratio(a, b)
            return similarity if threshold is None else float(similarity >= threshold)
        return _ratio(a, b) if fuzzy_match else float(a == b)
    if len(got) != len(want):
        return 0.0
    if fuzzy_match:
        if not got:
            return 1.0
        return sum(_ratio(fold(a), fold(b)) for a, b in zip(got, want)) / len(got)
    return float(all(fold(a) == fold(b) for a, b in zip(got, want)))


def _same_text(result: Any, expected: Any) -> bool:
    """compare_docx_files with its defaults gives 1 (the check OSWorld's formatting metrics start with)."""
    return compare_docx_files(result, expected) == 1.0


@metric("compare_docx_files_and_ignore_new_lines")
def compare_docx_files_and_ignore_new_lines(result: Any, expected: Any, ignore_blanks: bool = True) -> float:
    """compare_docx_files on two .docx with empty paragraphs (no text at all) dropped first.

    ``ignore_blanks`` (default on) compares the whole texts with whitespace collapsed; off, the
    remaining paragraphs must be equal one by one (a whitespace-only paragraph still counts).
    """
    if not (_ends(result, ".docx") and _ends(expected, ".docx")):
        return 0.0
    texts = _paragraph_texts(result, expected)
    if texts is None:
        return 0.0
    got, want = ([t for t in side if t != ""] for side in texts)
    return _compare_texts(got, want, ignore_blanks=bool(ignore_blanks))


def _table_cells(document: Document) -> list[list[list[str]]] | None:
    """Each top-level table as rows of stripped cell texts, read over the table's column grid.

    None when the tables differ in count is decided by the caller; a row shorter than the grid
    (valid OOXML, ``w:gridBefore``/``w:gridAfter``) made OSWorld's ``table.cell`` fail: such a
    table is read as its rows' own cells instead.
    """
    tables = []
    for table in document.tables:
        try:
            rows = [[table.cell(i, j).text.strip() for j in range(len(table.columns))] for i in range(len(table.rows))]
        except IndexError:
            rows = [[cell.text.strip() for cell in row.cells] for row in table.rows]
        tables.append(rows)
    return tables


@metric("compare_docx_tables")
@_zero_on_failure
def compare_docx_tables(result: Any, expected: Any) -> float:
    """Same number of top-level tables as the gold .docx, same rows and columns, same stripped cell text."""
    docs = _document(result), _document(expected)
    if docs[0] is None or docs[1] is None:
        return 0.0
    mine, gold = docs
    if len(mine.tables) != len(gold.tables):
        return 0.0
    for t1, t2 in zip(mine.tables, gold.tables):
        if len(t1.rows) != len(t2.rows) or len(t1.columns) != len(t2.columns):
            return 0.0
    return float(_table_cells(mine) == _table_cells(gold))


def _images(document: Document) -> list[Any]:
    """Images of the main part's relationships (their order), decoded to pixels where Pillow can.

    OSWorld failed on an image Pillow cannot decode (EMF, WMF, SVG: valid in a .docx) and on a
    linked image; an undecodable image is compared by its bytes here, a linked one skipped.
    """
    images: list[Any] = []
    for rel in document.part.rels.values():
        if "image" not in rel.reltype or rel.is_external:
            continue
        blob = rel.target_part.blob
        try:
            with Image.open(BytesIO(blob)) as img:
                images.append(img.tobytes())
        except Exception:  # noqa: BLE001 - a format Pillow cannot decode
            images.append(("undecoded", blob))
    return images


@metric("compare_docx_images")
@_zero_on_failure
def compare_docx_images(result: Any, expected: Any) -> float:
    """The result's images equal the gold's, pairwise in relationship order, by decoded pixel bytes.

    The image counts must be equal (images still related but no longer shown count, as in
    OSWorld); two documents without images match.
    """
    docs = _document(result), _document(expected)
    if docs[0] is None or docs[1] is None:
        return 0.0
    got, want = _images(docs[0]), _images(docs[1])
    return float(len(got) == len(want) and all(a == b for a, b in zip(got, want)))


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
    return float(all(
        p1.paragraph_format.line_spacing == p2.paragraph_format.line_spacing
        for p1, p2 in zip(mine.paragraphs, gold.paragraphs)
    ))


def _text_width(document: Document) -> float:
    """Page width minus side margins of the first section, in EMU.

    OSWorld failed when the section sets no page size or margins (valid: Word's defaults apply);
    US Letter with 1-inch margins is used then.
    """
    section = document.sections[0]
    if None in (section.page_width, section.left_margin, section.right_margin):
        return float(DEFAULT_TEXT_WIDTH_EMU)
    return float(section.page_width - section.left_margin - section.right_margin)


def _direct_tab_stops(paragraph: Paragraph) -> list[Any]:
    """The paragraph's own tab stops, without clear stops and a left stop at 0."""
    return [
        t for t in paragraph.paragraph_format.tab_stops
        if not (t.alignment == WD_TAB_ALIGNMENT.CLEAR or (t.alignment == WD_TAB_ALIGNMENT.LEFT and t.position == 0))
    ]


@metric("check_tabstops")
@_zero_on_failure
def check_tabstops(
    result: Any, expected: Any, word_number_split_by_tabstop: int | None = None, index: int = 0
) -> float:
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
    for p1, p2 in zip(got, want):
        tabs1, tabs2 = _direct_tab_stops(p1), _direct_tab_stops(p2)
        if len(tabs1) != len(tabs2) or any(t1.alignment != t2.alignment for t1, t2 in zip(tabs1, tabs2)):
            return 0.0
        penalty += sum(abs(t1.position - t2.position) for t1, t2 in zip(tabs1, tabs2)) / width
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


# ---------------------------------------------------------------------------------------------
# Single-document checks


@metric("has_page_numbers_in_footers")
@_zero_on_failure
def has_page_numbers_in_footers(result: Any, field_only: bool = False) -> float:
    """Every section's footer has a digit in its first paragraph (a page-number field shows one).

    The footer is python-docx's ``section.footer`` (linked footers resolve to the previous
    section's). ``field_only`` (our option, off by default as in OSWorld): the first paragraph
    must hold a PAGE field instead, so a typed number does not pass.
    """
    document = _document(result)
    if document is None:
        return 0.0
    for section in document.sections:
        paragraphs = section.footer.paragraphs
        if not paragraphs:
            return 0.0
        if field_only:
            if not any(PAGE_FIELD.match(i) for i in _field_instructions(paragraphs[0]._p)):
                return 0.0
        elif not any(ch.isdigit() for ch in paragraphs[0].text):
            return 0.0
    return 1.0


PAGE_FIELD = re.compile(r"\s*PAGE\b", re.IGNORECASE)


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


@metric("is_first_line_centered")
@_zero_on_failure
def is_first_line_centered(result: Any) -> float:
    """The document's first paragraph (even an empty one) has direct centre alignment."""
    document = _document(result)
    if document is None:
        return 0.0
    return float(document.paragraphs[0].paragraph_format.alignment == WD_PARAGRAPH_ALIGNMENT.CENTER)


@metric("contains_page_break")
@_zero_on_failure
def contains_page_break(result: Any, rules: Any = None) -> float:
    """The .docx has a manual page break; with ``rules["page_break_count"]``, exactly that many.

    Counted: ``<w:br w:type="page"/>`` in the runs of top-level body paragraphs (how LibreOffice
    saves Insert ▸ Page Break). Breaks in tables and "page break before" paragraph settings are
    not counted, as in OSWorld. ``rules`` may be omitted.
    """
    rules = _optional_rules(rules, "contains_page_break")
    count = rules.get("page_break_count")
    if count is not None:
        _check_int(count, "page_break_count", "contains_page_break")
    document = _document(result)
    if document is None:
        return 0.0
    found = sum(
        1
        for p in document.paragraphs
        for r in p.runs
        for br in r._r.iter(qn("w:br"))
        if br.get(qn("w:type")) == "page"
    )
    if count is not None and found != count:
        return 0.0
    return float(found > 0)


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


@metric("evaluate_alignment")
@_zero_on_failure
def evaluate_alignment(result: Any, expected: Any = None, words: int = 3) -> float:
    """In every '.'-separated sentence of more than ``words`` words (default 3), the first ``words``
    words and the rest each appear single-space-joined, in that order.

    This is OSWorld's test: it passes when the gap between the two parts is anything (a tab,
    spaces) and fails when the words inside a part are separated by more than one space.
    ``expected`` is unused.
    """
    words = _check_int(words, "words", "evaluate_alignment", minimum=1)
    document = _document(result)
    if document is None:
        return 0.0
    for paragraph in document.paragraphs:
        for sentence in paragraph.text.split("."):
            tokens = sentence.strip().split()
            if len(tokens) < words:
                continue
            first, second = " ".join(tokens[:words]), " ".join(tokens[words:])
            if not (first in sentence and second in sentence and sentence.find(first) < sentence.find(second)):
                return 0.0
    return 1.0


def _train_ids(document: Document, separator: str, field_count: int, key_index: int) -> list[str]:
    """The key field of each top-level paragraph that splits into ``field_count`` fields."""
    ids = []
    for p in document.paragraphs:
        fields = p.text.split(separator)
        if len(fields) == field_count:
            ids.append(fields[key_index].strip())
    return ids


@metric("check_no_duplicates")
@_zero_on_failure
def check_no_duplicates(
    result: Any, expected: Any = None, separator: str = ",", field_count: int = 4, key_index: int = 1
) -> float:
    """OSWorld's check with its argument order: ``result`` is read as the original timetable and
    ``expected`` as the deduplicated one.

    A record is a paragraph that splits on ``separator`` into ``field_count`` fields
    (``time, train_id, station, platform``), keyed by field ``key_index`` (the options are ours,
    their defaults OSWorld's). ``expected`` must have no repeated key, the same set of keys as
    ``result``, and one record per distinct key of ``result``. Either file missing scores 0.
    """
    if not isinstance(separator, str) or not separator:
        raise UserError(f"metric 'check_no_duplicates': separator must be a non-empty string, got {separator!r}")
    _check_int(field_count, "field_count", "check_no_duplicates", minimum=1)
    _check_int(key_index, "key_index", "check_no_duplicates")
    if key_index >= field_count:
        raise UserError(f"metric 'check_no_duplicates': key_index {key_index} must be below field_count {field_count}")
    original, processed = _document(result), _document(expected)
    if original is None or processed is None:
        return 0.0
    keys_original = set(_train_ids(original, separator, field_count, key_index))
    keys = _train_ids(processed, separator, field_count, key_index)
    return float(len(keys) == len(set(keys)) and set(keys) == keys_original and len(keys) == len(keys_original))


def _subscript_pairs(mine: Document, gold: Document) -> Iterator[bool]:
    for p1, p2 in zip(mine.paragraphs, gold.paragraphs):
        for r1, r2 in zip(p1.runs, p2.runs):
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
            if style.get(f"{{{ODF_STYLE}}}name") == name:
                if any(prop.get(f"{{{ODF_FO}}}background-color") == "#ffff00" for prop in style):
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


@metric("compare_unique_train_records")
def compare_unique_train_records(result: Any, expected: Any) -> float:
    """1 when the result keeps one record per train id, as the gold does, using only original lines.

    expected: ``[gold, original, ...]`` .docx paths (anything else scores 0). A record is a
    non-empty line of four comma-separated fields (``time, train_id, station, platform``). The
    result's non-empty lines must all be lines of the original, its train ids unique and the same
    set as the gold's, and it must have as many non-empty lines as the gold.
    """
    if not result or not isinstance(expected, list) or len(expected) < 2 or not expected[0] or not expected[1]:
        return 0.0
    documents = [_document(path) for path in (result, expected[0], expected[1])]
    if any(d is None for d in documents):
        return 0.0

    def lines(d: Document) -> list[str]:
        return [p.text.strip() for p in d.paragraphs if p.text.strip()]

    def ids(d: Document) -> list[str]:
        return [line.split(",")[1].strip() for line in lines(d) if len(line.split(",")) == 4]

    mine, gold, original = documents
    mine_ids = ids(mine)
    return float(
        set(lines(mine)) <= set(lines(original))
        and len(mine_ids) == len(set(mine_ids))
        and set(mine_ids) == set(ids(gold))
        and len(lines(mine)) == len(lines(gold))
    )


REFERENCE_EPSILON = 0.01


@metric("compare_references")
def compare_references(
    result: Any,
    expected: Any,
    reference_indicator: str = "References",
    reference_base_result: float = 0.5,
    content_only: bool = False,
) -> float:
    """Similarity of the reference list after the ``reference_indicator`` paragraph, rescaled above a base.

    Two .docx files; the list is every non-empty top-level paragraph after the first paragraph
    whose text is exactly the indicator. Neither document with that paragraph scores 1, one
    without it 0, different reference counts 0. Otherwise the mean rapidfuzz ratio of paired
    references ``s`` scores ``(s - base) / (1 - base)`` when ``s >= base + 0.01``, else 0, with
    base ``reference_base_result`` (default 0.5). ``content_only`` is accepted and ignored, as
    OSWorld does (its task passes it).
    """
    name = "compare_references"
    if not isinstance(reference_indicator, str) or not reference_indicator:
        raise UserError(f"metric {name!r}: reference_indicator must be a heading text, got {reference_indicator!r}")
    base = _check_threshold(reference_base_result, "reference_base_result", name)
    if base >= 1:
        raise UserError(f"metric {name!r}: reference_base_result must be below 1, got {reference_base_result!r}")
    if not (_ends(result, ".docx") and _ends(expected, ".docx")):
        return 0.0
    texts = _paragraph_texts(result, expected)
    if texts is None:
        return 0.0

    def references(paragraphs: list[str]) -> list[str] | None:
        if reference_indicator not in paragraphs:
            return None
        return [t for t in paragraphs[paragraphs.index(reference_indicator) + 1:] if t.strip()]

    got, want = (references(side) for side in texts)
    if got is None and want is None:
        return 1.0
    if got is None or want is None or len(got) != len(want) or not got:
        return 0.0
    similarity = sum(_ratio(a, b) for a, b in zip(got, want)) / len(got)
    return (similarity - base) / (1 - base) if similarity >= base + REFERENCE_EPSILON else 0.0


@metric("fuzzy_place_math")
@_zero_on_failure
def fuzzy_place_math(result: Any, rules: Any) -> float:
    """Mean, over the words of the result .docx, of each word's best rapidfuzz ratio to an accepted answer.

    rules: ``{expected: [answers…], count?: n}``. Words are the whitespace-separated tokens of
    the top-level paragraphs (an address written without spaces, as Chinese ones are, is one
    word). The document must have exactly ``count`` words, 3 unless the rules say otherwise, as
    OSWorld requires (its only task, 7ff48d5b, asks for 5 addresses: a task overlay can pass
    ``count: 5``).
    """
    name = "fuzzy_place_math"
    answers = rule_value(rules, "expected", name)
    count = _check_int(rule_value(rules, "count", name, default=3), "count", name, minimum=1)
    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
        raise UserError(f"metric {name!r}: rules 'expected' must be a non-empty list of strings, got {answers!r}")
    document = _document(result)
    if document is None:
        return 0.0
    words = [word for p in document.paragraphs for word in p.text.split()]
    if len(words) != count:
        return 0.0
    return sum(max(_ratio(word, answer) for answer in answers) for word in words) / count


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


