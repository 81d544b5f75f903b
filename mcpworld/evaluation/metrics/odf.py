"""OpenDocument text (.odt) reading for the Writer metrics: paragraph text and highlighting.

An .odt is a zip package: ``content.xml`` holds the body and its automatic styles, ``styles.xml``
the common (named) styles. Both are read with lxml; only what the Writer metrics need is
extracted, so no ODF library (odfpy) is needed.

Highlighting is a character background: ``fo:background-color`` in a style's
``style:text-properties`` (how LibreOffice stores both "Highlighting" and "Character
background"), inherited along ``style:parent-style-name``; ``transparent`` means none.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

from lxml import etree

TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
STYLE = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
FO = "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
DRAW = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"

PARAGRAPHS = (f"{{{TEXT}}}p", f"{{{TEXT}}}h")
STYLE_NAME = f"{{{TEXT}}}style-name"
# Content that is not part of the paragraph's running text: notes and comments have paragraphs
# of their own, frames hold text boxes and images.
NOT_RUNNING_TEXT = {f"{{{TEXT}}}note", f"{{{OFFICE}}}annotation", f"{{{DRAW}}}frame"}
NO_BACKGROUND = (None, "", "transparent")
MAX_PART_BYTES = 64 * 1024 * 1024
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)


class Odt:
    """An opened .odt: its body paragraphs and the styles that decide their character formatting."""

    def __init__(self, content: Any, styles: Any) -> None:
        self.body = content.find(f"{{{OFFICE}}}body")
        self.styles: dict[tuple[str, str], Any] = {}
        for root in (styles, content):  # automatic styles (content.xml) win over common ones
            if root is None:
                continue
            for style in root.iter(f"{{{STYLE}}}style"):
                self.styles[(style.get(f"{{{STYLE}}}family") or "", style.get(f"{{{STYLE}}}name") or "")] = style

    def paragraphs(self) -> list[Any]:
        """Every ``text:p`` and ``text:h`` of the body (tables, frames, notes too), in document order."""
        return [] if self.body is None else [el for el in self.body.iter(*PARAGRAPHS)]

    def texts(self) -> list[str]:
        return [paragraph_text(p) for p in self.paragraphs()]

    def background(self, el: Any) -> str | None:
        """The character background set by ``el``'s own style (or the styles it inherits from)."""
        name = el.get(STYLE_NAME)
        family = "paragraph" if el.tag in PARAGRAPHS else "text"
        seen: set[str] = set()
        while name and name not in seen:
            seen.add(name)
            style = self.styles.get((family, name))
            if style is None:
                return None
            props = style.find(f"{{{STYLE}}}text-properties")
            value = None if props is None else props.get(f"{{{FO}}}background-color")
            if value is not None:
                return value
            name = style.get(f"{{{STYLE}}}parent-style-name")
        return None

    def highlighted_text(self) -> str:
        """All visible highlighted characters of the body, concatenated."""
        out = []
        for p in self.paragraphs():
            for piece, owner in _pieces(p):
                if piece.strip() and self._highlighted(owner, p):
                    out.append(piece)
        return "".join(out)

    def _highlighted(self, el: Any, paragraph: Any) -> bool:
        """The nearest span (or the paragraph) that sets a background decides."""
        while el is not None:
            value = self.background(el) if el.get(STYLE_NAME) else None
            if value is not None:
                return value not in NO_BACKGROUND
            if el is paragraph:
                return False
            el = el.getparent()
        return False


def _pieces(el: Any) -> list[tuple[str, Any]]:
    """(text, element whose formatting applies) for the running text of a paragraph, in order."""
    out: list[tuple[str, Any]] = []

    def visit(node: Any) -> None:
        if node.text:
            out.append((node.text, node))
        for child in node:
            if not isinstance(child.tag, str) or child.tag in NOT_RUNNING_TEXT or child.tag in PARAGRAPHS:
                pass
            elif child.tag == f"{{{TEXT}}}s":
                out.append((" " * int(child.get(f"{{{TEXT}}}c") or 1), node))
            elif child.tag == f"{{{TEXT}}}tab":
                out.append(("\t", node))
            elif child.tag == f"{{{TEXT}}}line-break":
                out.append(("\n", node))
            else:
                visit(child)
            if child.tail:
                out.append((child.tail, node))

    visit(el)
    return out


def paragraph_text(p: Any) -> str:
    """A paragraph's running text: spaces (``text:s``), tabs and line breaks expanded."""
    return "".join(text for text, _ in _pieces(p))


def _part(package: zipfile.ZipFile, name: str) -> Any:
    try:
        info = package.getinfo(name)
    except KeyError:
        return None
    if info.file_size > MAX_PART_BYTES:
        raise ValueError(f"{name} is too large")
    return etree.fromstring(package.read(name), _PARSER)


def open_odt(path: Any) -> Odt | None:
    """The .odt at ``path``, or None when there is no such file or it is not an OpenDocument text."""
    if not path or not isinstance(path, (str, Path)) or not Path(path).is_file():
        return None
    try:
        with zipfile.ZipFile(path) as package:
            content = _part(package, "content.xml")
            if content is None or content.find(f"{{{OFFICE}}}body") is None:
                return None
            return Odt(content, _part(package, "styles.xml"))
    except (zipfile.BadZipFile, etree.XMLSyntaxError, ValueError, OSError):
        return None
