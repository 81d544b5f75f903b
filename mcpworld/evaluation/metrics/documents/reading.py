"""Reading Writer documents as OSWorld's metrics see them, and what every document metric shares.

A .docx is read through python-docx (``_document``), with the style chain, document defaults and
theme fonts at hand for the one metric that grades effective formatting (``_Docx``,
``_font_name``); an .odt as odfpy presents it (``_OdtParts``). A missing or unreadable file gives
None. ``_zero_on_failure`` scores 0 where OSWorld's metric would fail on the document; the option
checks raise UserError.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docx
from docx.document import Document
from docx.oxml.ns import qn
from lxml import etree
from rapidfuzz import fuzz

from mcpworld.core.errors import UserError

MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
A_NS = {"a": "http://schemas.openxmlformats.org/drawingml/2006/main"}
W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

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
    except Exception:
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
        except Exception:
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
    except Exception:
        return None
