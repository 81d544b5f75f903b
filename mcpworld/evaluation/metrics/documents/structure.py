"""Writer metrics over a document's parts other than its running text: tables, images, page
numbers in the footers, and manual page breaks.
"""

from __future__ import annotations

import re
from io import BytesIO
from typing import Any

from docx.document import Document
from docx.oxml.ns import qn
from PIL import Image

from mcpworld.evaluation.metrics.documents.reading import _check_int, _document, _optional_rules, _zero_on_failure
from mcpworld.evaluation.registry import metric


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
    mine, gold = _document(result), _document(expected)
    if mine is None or gold is None:
        return 0.0
    if len(mine.tables) != len(gold.tables):
        return 0.0
    for t1, t2 in zip(mine.tables, gold.tables, strict=True):
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
        except Exception:
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
    return float(len(got) == len(want) and all(a == b for a, b in zip(got, want, strict=True)))


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
    found = sum(1 for p in document.paragraphs for r in p.runs for br in r._r.iter(qn("w:br")) if br.get(qn("w:type")) == "page")
    if count is not None and found != count:
        return 0.0
    return float(found > 0)
