"""Markup document metrics: HTML pages and EPUB books compared with a gold file (lxml).

``result`` and ``expected`` are local paths (a getter's cached copies). A ``None``, missing or
unreadable result or gold scores 0.
"""

from __future__ import annotations

import difflib
import zipfile
from pathlib import Path
from typing import Any

import lxml.html
from lxml import etree

from mcpworld.evaluation.registry import metric

MAX_PART_BYTES = 64 * 1024 * 1024


def _is_file(path: Any) -> bool:
    return isinstance(path, (str, Path)) and bool(str(path)) and Path(path).is_file()


# ---------------------------------------------------------------------------------------------
# HTML


# How BeautifulSoup (lxml builder) shapes a page, which OSWorld's compare_htmls walked:
LIST_ATTRIBUTES = {  # attributes whose value is a whitespace-separated list of tokens
    "*": {"class", "accesskey", "dropzone"},
    "a": {"rel", "rev"},
    "link": {"rel", "rev"},
    "td": {"headers"},
    "th": {"headers"},
    "form": {"accept-charset"},
    "object": {"archive"},
    "area": {"rel"},
    "icon": {"sizes"},
    "iframe": {"sandbox"},
    "output": {"for"},
}
STRING_CONTAINERS = {"rt", "rp", "style", "script", "template"}  # their strings are kept out of their ancestors' text
PRESERVE_WHITESPACE = {"pre", "textarea"}
ASCII_SPACES = "\x20\x0a\x09\x0c\x0d"


class _Node:
    """A tag (``name`` set, ``attrs``, ``children``) or a string (``name`` None, ``value``, ``kind``:
    the string container it belongs to, ``""`` for plain text, or ``"comment"`` and the like)."""

    __slots__ = ("attrs", "children", "kind", "name", "value")

    def __init__(self, name: str | None = None, attrs: dict[str, Any] | None = None, value: str = "", kind: str = ""):
        self.name, self.value, self.kind = name, value, kind
        self.attrs: dict[str, Any] = attrs or {}  # a string has none
        self.children: list[_Node] = []

    def descendants(self) -> Any:
        for child in self.children:
            yield child
            if child.name is not None:
                yield from child.descendants()

    def text(self) -> str:
        """The tag's text as BeautifulSoup gives it: its plain strings, or, for a script, style …,
        its own strings; never comments."""
        wanted = self.name if self.name in STRING_CONTAINERS else ""
        return "".join(n.value for n in self.descendants() if n.name is None and n.kind == wanted)


class _SoupBuilder:
    """An lxml parser target building the tree BeautifulSoup would: runs of text between tags
    joined, a run of ASCII whitespace outside pre/textarea reduced to one newline or space."""

    def __init__(self) -> None:
        self.root = _Node("[document]", {})
        self.stack = [self.root]
        self.pending: list[str] = []

    def _flush(self, kind: str | None = None) -> None:
        if not self.pending:
            return
        value = "".join(self.pending)
        self.pending = []
        if not any(n.name in PRESERVE_WHITESPACE for n in self.stack) and not value.strip(ASCII_SPACES):
            value = "\n" if "\n" in value else " "
        if kind is None:
            kind = next((n.name for n in reversed(self.stack) if n.name in STRING_CONTAINERS), "")
        self.stack[-1].children.append(_Node(value=value, kind=kind))

    def start(self, tag: str, attrib: Any, nsmap: Any = None) -> None:
        self._flush()
        lists = LIST_ATTRIBUTES["*"] | LIST_ATTRIBUTES.get(tag, set())
        attrs = {k: (v.split() if k in lists else v) for k, v in dict(attrib).items()}
        node = _Node(tag, attrs)
        self.stack[-1].children.append(node)
        self.stack.append(node)

    def end(self, tag: str) -> None:
        self._flush()
        if len(self.stack) > 1:
            self.stack.pop()

    def data(self, data: str) -> None:
        self.pending.append(data)

    def _special(self, value: str, kind: str) -> None:
        self._flush()
        self.pending.append(value)
        self._flush(kind)

    def comment(self, text: str) -> None:
        self._special(text, "comment")

    def pi(self, target: str, data: str | None = None) -> None:
        self._special(f"{target} {data or ''}", "pi")

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        value = name or ""
        if pubid is not None:
            value += f' PUBLIC "{pubid}"'
            if system is not None:
                value += f' "{system}"'
        elif system is not None:
            value += f' SYSTEM "{system}"'
        self._special(value, "doctype")

    def close(self) -> _Node:
        self._flush()
        return self.root


def _html_nodes(path: Any) -> list[_Node] | None:
    """The page's tags and strings in document order, as BeautifulSoup(…, "lxml") gives them;
    None when the file is missing or not UTF-8."""
    if not _is_file(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return None
    text = text.removeprefix("\ufeff")
    parser = etree.HTMLParser(target=_SoupBuilder(), recover=True, strip_cdata=False)
    try:
        parser.feed(text)
        root = parser.close()
    except (etree.ParserError, ValueError):
        return None
    return list(root.descendants())


def _same_node(a: _Node, b: _Node, ignore_sdnum: bool) -> bool:
    if a.name is None or b.name is None:
        return a.name is None and b.name is None and a.value == b.value
    if a.name != b.name or a.text().strip() != b.text().strip():
        return False
    if a.attrs != b.attrs and ignore_sdnum:
        return {k: v for k, v in a.attrs.items() if k != "sdnum"} == {k: v for k, v in b.attrs.items() if k != "sdnum"}
    return a.attrs == b.attrs


@metric("compare_htmls")
def compare_htmls(result: Any, expected: Any, ignore_sdnum: bool = False) -> float:
    """1 when two HTML pages match node by node, as OSWorld's check walked them (BeautifulSoup
    with lxml, in document order, up to the end of the shorter page).

    Tags must have the same name, the same attributes (``class`` and the like as token lists)
    and the same text, stripped, under them (so a difference in text anywhere fails at the
    root); strings and comments must be equal, a run of whitespace between tags counting as one
    newline or space. ``ignore_sdnum`` leaves LibreOffice's ``sdnum`` number-format attribute
    out (its value depends on the machine's locale). A missing or non-UTF-8 page scores 0, and
    so does an empty one (OSWorld compared nothing with it and gave 1).
    """
    got, want = _html_nodes(result), _html_nodes(expected)
    if not got or not want:
        return 0.0
    return float(all(_same_node(a, b, bool(ignore_sdnum)) for a, b in zip(got, want, strict=False)))


# ---------------------------------------------------------------------------------------------
# EPUB


def _lines_without(data: bytes, marker: str) -> list[str]:
    return [line for line in data.decode("utf-8").splitlines() if marker not in line]


def _pretty_html_lines(data: bytes) -> list[str]:
    """An HTML part re-serialised one element per line, so that the producer's line breaks do not count."""
    text = data.decode("utf-8").replace("\n", "").replace("\r", "")
    root = lxml.html.fromstring(text.encode("utf-8"))
    return lxml.html.tostring(root, pretty_print=True, encoding="unicode").splitlines()


def _epub_parts(path: Any) -> list[list[str]] | None:
    """The book's comparable parts, as lists of lines, in the order of their names; None when the
    file is missing, [] when it is not a zip.

    As OSWorld took them: ``toc.ncx`` at the archive's root without its ``navPoint`` lines,
    ``content.opf`` at the root without its ``dc:identifier`` lines (both carry ids each
    conversion makes anew), and every ``.html`` file pretty-printed. A part that is not UTF-8,
    or an empty HTML file, makes the book unreadable (None), as it made OSWorld fail.
    """
    if not _is_file(path):
        return None
    try:
        with zipfile.ZipFile(path) as book:
            parts: dict[str, list[str]] = {}
            names = book.namelist()
            for name in names:
                compared = name in ("toc.ncx", "content.opf") or name.endswith(".html")
                if compared and book.getinfo(name).file_size > MAX_PART_BYTES:
                    return None
            if "toc.ncx" in names:
                parts["toc.ncx"] = _lines_without(book.read("toc.ncx"), "navPoint")
            if "content.opf" in names:
                parts["content.opf"] = _lines_without(book.read("content.opf"), "dc:identifier")
            for name in names:
                if name.endswith(".html"):
                    parts[name] = _pretty_html_lines(book.read(name))
            return [parts[name] for name in sorted(parts)]
    except zipfile.BadZipFile:
        return []
    except (OSError, RuntimeError, UnicodeDecodeError, etree.ParserError, ValueError):
        return None  # RuntimeError: an encrypted member; ParserError: an empty HTML file


@metric("compare_epub")
def compare_epub(result: Any, expected: Any) -> float:
    """Mean line similarity of the two books' parts (partial credit), as OSWorld scored it.

    The parts (see ``_epub_parts``) of each book are sorted by name and paired in that order;
    each pair scores difflib's ratio over their lines, and the sum is divided by the result's
    number of parts (a gold part beyond them is not counted). A result that is not a zip, or has
    no such parts, scores 0. OSWorld failed on an ``.html`` file inside a folder (it wrote the
    copy to a folder it had not made); here such files are compared like the others.
    """
    got, want = _epub_parts(result), _epub_parts(expected)
    if not got or want is None:
        return 0.0
    total = sum(difflib.SequenceMatcher(a=a, b=b).ratio() for a, b in zip(got, want, strict=False))
    return total / len(got)
