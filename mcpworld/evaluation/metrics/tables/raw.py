"""Raw xlsx reading for ``compare_table``, the way OSWorld's table metric reads cells and sparklines.

OSWorld does not read cell values for ``check_cell``, ``sheet_fuzzy`` and conditional formats
through openpyxl: it opens the zip, finds the sheet by its ``sheetId`` (``xl/worksheets/sheet<id>.xml``,
not the relationship target), and reads the cell's ``<v>`` element itself. The quirks that follow
matter for scores and are kept on purpose:

- a number (no ``t`` or ``t="n"``) is a float (``3`` reads as ``3.0``); a cell without ``<v>`` is None;
- a shared string is the concatenation of all ``<t>`` under its ``<si>`` (phonetic runs included);
- ``t="str"`` (a formula's text result) and ``t="e"`` (an error such as ``#DIV/0!``) are the text;
- a boolean (``t="b"``) or ISO date (``t="d"``) cell reads as None;
- element text is stripped of outer whitespace (``"  pad "`` in a ``t="str"`` cell reads ``"pad"``);
- an inline string whose ``<t>`` has attributes (openpyxl writes ``xml:space="preserve"`` for text
  with outer spaces) reads as a dict of them plus ``#text``, which ``str()`` then prints;
- a missing file, sheet or cell reads as None.

Where OSWorld's reader raises (an empty ``<v/>`` in a number cell, a shared-string index out of
range) this raises ``CellReadError`` and the callers decide as OSWorld's callers do.
"""

from __future__ import annotations

import os
import zipfile
from typing import Any
from xml.etree import ElementTree

_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_X14 = "{http://schemas.microsoft.com/office/spreadsheetml/2009/9/main}"
_XM = "{http://schemas.microsoft.com/office/excel/2006/main}"


class CellReadError(Exception):
    """OSWorld's cell reader would have raised here."""


def _sheet_ids(z: zipfile.ZipFile) -> dict[str | None, str | None]:
    root = ElementTree.fromstring(z.read("xl/workbook.xml"))
    ids: dict[str | None, str | None] = {}
    for sheets in root.iter(f"{_MAIN}sheets"):
        for sheet in sheets.findall(f"{_MAIN}sheet"):
            ids[sheet.get("name")] = sheet.get("sheetId")
    return ids


def _shared_strings(z: zipfile.ZipFile) -> list[str]:
    """The shared strings; an empty list when the part is missing or a ``<t>`` has no text (as OSWorld)."""
    try:
        root = ElementTree.fromstring(z.read("xl/sharedStrings.xml"))
        if root.tag != f"{_MAIN}sst":
            return []
        # a <t> without text (None) fails the join: no shared strings, as in OSWorld
        return ["".join(t.text for t in si.iter(f"{_MAIN}t")) for si in root.findall(f"{_MAIN}si")]  # type: ignore[misc]
    except Exception:
        return []


def _stripped(text: str | None) -> str | None:
    """Element text as OSWorld's XML-to-dict step gives it: outer whitespace stripped, None if empty."""
    text = (text or "").strip()
    return text or None


def _attribute_name(key: str) -> str:
    """``{uri}local`` as the XML-to-dict step names a namespaced attribute: ``uri:local``."""
    if key.startswith("{"):
        uri, local = key[1:].split("}", 1)
        return f"{uri}:{local}"
    return key


# coordinate -> its first <c>; a <c> without ``r`` is kept under None, as OSWorld's reader keeps it
_Cells = dict[str | None, ElementTree.Element]


class RawBook:
    """One xlsx read lazily: shared strings and, per sheet name, the first ``<c>`` of each coordinate."""

    def __init__(self, path: Any) -> None:
        self.path = path
        self._strings: list[str] | None = None
        self._cells: dict[str, _Cells | None] = {}
        self._sparklines: dict[str, Any] = {}

    def _zip(self) -> zipfile.ZipFile | None:
        if not os.path.exists(self.path):  # a non-path (None) raises TypeError, as in OSWorld
            return None
        return zipfile.ZipFile(self.path, "r")

    def _sheet_cells(self, sheet_name: str) -> _Cells | None:
        if sheet_name not in self._cells:
            self._cells[sheet_name] = self._read_cells(sheet_name)
        return self._cells[sheet_name]

    def _read_cells(self, sheet_name: str) -> _Cells | None:
        try:
            z = self._zip()
            if z is None:
                return None
            with z:
                self._strings = _shared_strings(z)
                sheet_id = _sheet_ids(z)[sheet_name]
                root = ElementTree.fromstring(z.read(f"xl/worksheets/sheet{sheet_id}.xml"))
        except TypeError:
            raise
        except Exception:
            return None
        cells: _Cells = {}
        for row in root.iter(f"{_MAIN}row"):
            for c in row.findall(f"{_MAIN}c"):
                cells.setdefault(c.get("r"), c)
        return cells

    def value(self, sheet_name: str, coordinate: str) -> Any:
        """The cell's value as OSWorld's ``read_cell_value`` returns it (see the module docstring)."""
        cells = self._sheet_cells(sheet_name)
        if cells is None:
            return None
        c = cells.get(coordinate)
        if c is None:
            return None
        kind = c.get("t")
        v = c.find(f"{_MAIN}v")
        missing = v is None  # no <v> at all, unlike an empty one (text None)
        text = None if v is None else _stripped(v.text)
        if kind is None or kind == "n":
            if missing:
                return None
            if text is None:
                raise CellReadError(f"{coordinate}: empty <v> in a number cell")
            try:
                return float(text)
            except ValueError:
                return None
        if kind == "s":
            if missing:
                return None
            if text is None:
                raise CellReadError(f"{coordinate}: empty <v> in a shared-string cell")
            try:
                index = int(text)
            except ValueError:
                return None
            assert self._strings is not None  # read with the cells
            try:
                return self._strings[index]
            except IndexError:
                raise CellReadError(f"{coordinate}: shared string {index} out of range") from None
        if kind in ("str", "e"):
            return None if missing else text
        if kind == "inlineStr":
            inline = c.find(f"{_MAIN}is")
            t = inline.find(f"{_MAIN}t") if inline is not None else None
            if t is None:
                return None
            text = _stripped(t.text)
            if not t.attrib:
                return text
            # OSWorld's XML-to-dict step turns an element with attributes (xml:space="preserve",
            # which openpyxl writes) into a dict, and that dict is the value.
            node = {"@" + _attribute_name(key): value for key, value in t.attrib.items()}
            if text is not None:
                node["#text"] = text
            return node
        return None

    def sparklines(self, sheet_name: str) -> dict[Any, Any]:
        """``{sqref: formula}`` of the sheet's x14 sparklines; {} for a file that is not a zip.

        A sheet name the workbook lacks, or a missing sheet part, raises (OSWorld's reader does)."""
        if sheet_name not in self._sparklines:
            try:
                z = zipfile.ZipFile(self.path, "r")
            except zipfile.BadZipFile:
                return {}
            with z:
                sheet_id = _sheet_ids(z)[sheet_name]
                root = ElementTree.fromstring(z.read(f"xl/worksheets/sheet{sheet_id}.xml"))
            found = {}
            for sparkline in root.iter(f"{_X14}sparkline"):
                f, sqref = sparkline.find(f"{_XM}f"), sparkline.find(f"{_XM}sqref")
                if f is None or sqref is None:
                    raise CellReadError("a sparkline without xm:f or xm:sqref")
                found[sqref.text] = f.text
            self._sparklines[sheet_name] = found
        return self._sparklines[sheet_name]


def sheet_csv_lines(path: str, sheet_name: str) -> list[str] | None:
    """The printed sheet as OSWorld's ``sheet_print`` reads it: ``<stem>-<sheet>.csv`` next to the
    xlsx (the postconfig exports it), lines stripped, trailing empty lines dropped, in reverse order
    (both sides are reversed alike). None when the file is missing. UTF-8, else Latin-1."""
    csv_path = f"{os.path.splitext(path)[0]}-{sheet_name}.csv"
    try:
        with open(csv_path, "rb") as file:
            data = file.read()
    except OSError:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.strip() for line in reversed(text.splitlines())]
    while lines and not lines[0]:
        lines.pop(0)
    return lines
