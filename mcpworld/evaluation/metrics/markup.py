"""Markup document metrics: HTML pages and EPUB books compared with a gold file (lxml).

``result`` and ``expected`` are local paths (a getter's cached copies). A ``None``, missing or
unreadable result or gold scores 0.
"""

from __future__ import annotations

import difflib
import posixpath
import zipfile
from pathlib import Path
from typing import Any

import lxml.html
from lxml import etree

from mcpworld.evaluation.registry import metric

MAX_PART_BYTES = 64 * 1024 * 1024
HTML_SUFFIXES = (".html", ".htm", ".xhtml")


def _is_file(path: Any) -> bool:
    return isinstance(path, (str, Path)) and bool(str(path)) and Path(path).is_file()


# ---------------------------------------------------------------------------------------------
# HTML


def _html_nodes(path: Any, ignore_sdnum: bool) -> list[tuple[Any, ...]] | None:
    """The page as a flat list of nodes in document order, or None when it cannot be parsed.

    Elements are (tag, attributes); text and tail strings are kept verbatim (whitespace too);
    comments and processing instructions by their text.
    """
    if not _is_file(path):
        return None
    try:
        root = lxml.html.document_fromstring(Path(path).read_bytes())
    except (etree.ParserError, ValueError):
        return None
    nodes: list[tuple[Any, ...]] = []

    def visit(el: Any) -> None:
        if isinstance(el.tag, str):
            attrs = {k: v for k, v in el.attrib.items() if not (ignore_sdnum and k == "sdnum")}
            nodes.append(("element", el.tag, attrs))
            if el.text:
                nodes.append(("text", el.text))
            for child in el:
                visit(child)
        else:
            nodes.append(("comment", el.text or ""))
        if el.tail:
            nodes.append(("text", el.tail))

    try:
        visit(root)
    except RecursionError:  # nested deeper than any real page
        return None
    return nodes


@metric("compare_htmls")
def compare_htmls(result: Any, expected: Any, ignore_sdnum: bool = False) -> float:
    """1 when two HTML files have the same elements, attributes and text, node by node.

    Both are parsed with lxml's HTML parser and walked in document order: element names and
    attributes must be equal, text (whitespace included) and comments too. ``ignore_sdnum``
    drops LibreOffice's ``sdnum`` number-format attribute from the comparison (its value
    depends on the machine's locale). OSWorld stopped at the end of the shorter page, so a
    result holding only the first rows of the gold's table passed; here the pages must have
    the same number of nodes.
    """
    got, want = _html_nodes(result, ignore_sdnum), _html_nodes(expected, ignore_sdnum)
    return float(got is not None and want is not None and got == want)


# ---------------------------------------------------------------------------------------------
# EPUB


def _lines_without(data: bytes, marker: str) -> list[str]:
    return [line for line in data.decode("utf-8", errors="replace").splitlines() if marker not in line]


def _pretty_html_lines(data: bytes) -> list[str]:
    """An HTML part re-serialised one element per line, so that the producer's line breaks do not count."""
    text = data.decode("utf-8", errors="replace").replace("\n", "").replace("\r", "")
    try:
        root = lxml.html.fromstring(text.encode("utf-8"))
    except (etree.ParserError, ValueError):
        return []
    return lxml.html.tostring(root, pretty_print=True, encoding="unicode").splitlines()


def _epub_parts(path: Any) -> dict[str, list[str]] | None:
    """The book's comparable parts, {name in the archive: lines}; None when unreadable.

    The navigation file (``toc.ncx``) without its ``navPoint`` lines and the package document
    (``*.opf``) without ``dc:identifier`` lines (both carry ids each conversion makes anew), and
    every (X)HTML content file pretty-printed.
    """
    if not _is_file(path):
        return None
    try:
        with zipfile.ZipFile(path) as book:
            parts: dict[str, list[str]] = {}
            for info in book.infolist():
                name = info.filename.lower()
                if info.is_dir() or info.file_size > MAX_PART_BYTES:
                    continue
                if posixpath.basename(name) == "toc.ncx":
                    parts[info.filename] = _lines_without(book.read(info), "navPoint")
                elif name.endswith(".opf"):
                    parts[info.filename] = _lines_without(book.read(info), "dc:identifier")
                elif name.endswith(HTML_SUFFIXES):
                    parts[info.filename] = _pretty_html_lines(book.read(info))
            return parts
    except (zipfile.BadZipFile, OSError, RuntimeError):  # RuntimeError: an encrypted member
        return None


@metric("compare_epub")
def compare_epub(result: Any, expected: Any) -> float:
    """Mean line similarity of the two books' parts (partial credit).

    Parts (see ``_epub_parts``) with the same name in both books are paired; the others are
    paired in name order, as OSWorld paired all of them (so two tools naming their chapter
    files differently can still be compared). Each pair scores difflib's ratio over their
    lines; the mean is over the larger number of parts, so a part only one book has counts 0.
    OSWorld divided by the result's count, ignoring gold parts the result lacked, read toc.ncx
    and content.opf only at the archive root and content only from ``.html`` files (most EPUB 3
    tools write ``.xhtml``, whose text it then never compared).
    """
    got, want = _epub_parts(result), _epub_parts(expected)
    if not got or want is None:
        return 0.0
    pairs = [(got[name], want[name]) for name in sorted(got.keys() & want.keys())]
    pairs += zip([got[n] for n in sorted(got.keys() - want.keys())], [want[n] for n in sorted(want.keys() - got.keys())])
    total = sum(difflib.SequenceMatcher(a=a, b=b).ratio() for a, b in pairs)
    return total / max(len(got), len(want))
