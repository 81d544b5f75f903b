"""Spreadsheet metrics: ``compare_table`` (a list of checks over xlsx workbooks), ``compare_csv``, and
``compare_conference_city_in_order`` (one column of place names, OSWorld's conference-city task).

Workbooks are read with openpyxl in two views. The *formula view* (``load_workbook(path)``) has
styles, formulas, merged cells, charts, pivot tables, validation, filters and sheet views. The
*value view* (``data_only=True``) has the values the spreadsheet application cached when it saved
the file. A formula that was never calculated has no cached value and reads as ``None`` in the
value view: files written by openpyxl or other libraries that do not compute formulas, for
example. LibreOffice and Excel always cache values, so agent-saved files are fine. No formula is
ever evaluated here.

A result that is ``None``, missing or not a readable workbook scores 0. A malformed rule list, an
unknown rule type or property, a rule that needs the expected workbook when there is none, and an
expected workbook (a gold file) that is missing or unreadable raise UserError.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import openpyxl
from openpyxl.cell.cell import MergedCell
from openpyxl.styles.colors import COLOR_INDEX
from openpyxl.utils.cell import (
    column_index_from_string,
    coordinate_to_tuple,
    get_column_letter,
    range_boundaries,
)
from openpyxl.workbook.workbook import Workbook
from openpyxl.worksheet.cell_range import CellRange, MultiCellRange
from openpyxl.worksheet.dimensions import ColumnDimension, RowDimension
from openpyxl.worksheet.worksheet import Worksheet
from rapidfuzz import fuzz

from mcpworld.errors import UserError
from mcpworld.evaluation.matchers import match_value
from mcpworld.evaluation.registry import metric

NAME = "compare_table"


def _bad(message: str) -> UserError:
    return UserError(f"metric {NAME!r}: {message}")


class _Unreadable(Exception):
    """The result workbook could not be read (in a second view): the metric scores 0."""


# ---------------------------------------------------------------------------------------------
# Workbooks and sheet selectors


def _load(path: str | None, data_only: bool) -> Workbook | None:
    if not path or not Path(path).is_file():
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # openpyxl warns about every extension it drops
            return openpyxl.load_workbook(path, data_only=data_only)
    except Exception:  # noqa: BLE001 - any parse failure means "not a readable workbook"
        return None


class _Book:
    """One workbook: the formula view, and the value view loaded on first use."""

    def __init__(self, path: str, formulas: Workbook, *, expected: bool = False) -> None:
        self.path = path
        self.formulas = formulas
        self.expected = expected
        self._values: Workbook | None = None

    @property
    def values(self) -> Workbook:
        if self._values is None:
            self._values = _load(self.path, data_only=True)
            if self._values is None and self.expected:
                raise _bad(f"the expected workbook {self.path!r} cannot be read with data_only=True")
            if self._values is None:
                raise _Unreadable(self.path)
        return self._values


@dataclass(frozen=True)
class _Sheet:
    """A resolved sheet: its book and its name (the views are read through the book)."""

    book: _Book
    name: str

    @property
    def ws(self) -> Worksheet:
        return self.book.formulas[self.name]

    @property
    def vs(self) -> Worksheet:
        return self.book.values[self.name]


_SELECTOR = re.compile(r"(?P<book>[RE])(?:I(?P<index>\d+)|N(?P<name>.+))", re.DOTALL)


def _parse_selector(value: Any, where: str) -> tuple[str, int | str]:
    """``0`` (result, by index), ``"RI0"``/``"EI0"`` (by index), ``"RNSheet1"``/``"ENSheet1"`` (by name)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return "R", value
    match = _SELECTOR.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise _bad(f"{where}: a sheet selector is an index or RI<n>/EI<n>/RN<name>/EN<name>, got {value!r}")
    if match["index"] is not None:
        return match["book"], int(match["index"])
    return match["book"], match["name"]


class _Workbooks:
    """The result book (already loaded) and the expected book (loaded when a rule needs it)."""

    def __init__(self, result: _Book, expected_path: str | None) -> None:
        self.result = result
        self.expected_path = expected_path
        self._expected: _Book | None = None

    @property
    def expected(self) -> _Book:
        if self._expected is None:
            if self.expected_path is None:
                raise _bad("a rule refers to the expected workbook (EI…/EN…, or a comparison) but there is none")
            formulas = _load(self.expected_path, data_only=False)
            if formulas is None:
                raise _bad(f"the expected workbook {self.expected_path!r} is missing or not a readable xlsx")
            self._expected = _Book(self.expected_path, formulas, expected=True)
        return self._expected

    def sheet(self, selector: Any, *, worksheet: bool = True) -> _Sheet | None:
        """The selected sheet; None when the result lacks it (the rule fails).

        A sheet missing from the expected workbook is the task author's mistake: UserError. With
        ``worksheet`` a chartsheet counts as missing (it has no cells).
        """
        which, key = _parse_selector(selector, "sheet")
        book = self.result if which == "R" else self.expected
        names = book.formulas.sheetnames
        if isinstance(key, int):
            name = names[key] if 0 <= key < len(names) else None
        else:
            name = key if key in names else None
        if name is None:
            if which == "E":
                raise _bad(f"the expected workbook has no sheet {selector!r} (sheets: {names})")
            return None
        if worksheet and not isinstance(book.formulas[name], Worksheet):
            return None
        return _Sheet(book, name)

    def pair(self, rule: dict[str, Any], *, worksheet: bool = True) -> tuple[_Sheet, _Sheet] | None:
        first = self.sheet(rule["sheet_idx0"], worksheet=worksheet)
        second = self.sheet(rule["sheet_idx1"], worksheet=worksheet)
        return None if first is None or second is None else (first, second)


# ---------------------------------------------------------------------------------------------
# Matching ({method, ref}) with the spreadsheet-only method


def _match(value: Any, rule: Any) -> bool:
    """``matchers.match_value`` plus ``spreadsheet_range``: ``ref = [inner, outer]`` cell ranges,
    the value's ranges must cover ``inner`` and lie within ``outer``. Cell ranges are matched as
    their string form (``"A1:A10 C1"``) by every other method."""
    if isinstance(rule, dict) and rule.get("method") == "spreadsheet_range":
        ref = rule.get("ref")
        try:
            inner, outer = (MultiCellRange(r) if isinstance(r, str) else None for r in ref)
        except (TypeError, ValueError):
            inner = outer = None
        if inner is None or outer is None:
            raise _bad(f"method 'spreadsheet_range' needs ref = [inner ranges, outer ranges] as strings, got {ref!r}")
        try:
            ranges = value if isinstance(value, MultiCellRange) else MultiCellRange(str(value))
        except (TypeError, ValueError):
            return False
        return _ranges_within(inner, ranges) and _ranges_within(ranges, outer)
    if isinstance(value, (MultiCellRange, CellRange)):
        value = str(value)
    return match_value(value, rule)


def _ranges_within(inner: MultiCellRange, outer: MultiCellRange) -> bool:
    """Every cell of ``inner`` is in ``outer`` (range by range; a range split across two outer ranges counts)."""
    for rng in inner.ranges:
        if any(rng.issubset(o) for o in outer.ranges):
            continue
        if rng.size["rows"] * rng.size["columns"] > 100_000:
            return False
        if not all(f"{get_column_letter(c)}{r}" in outer for r, c in rng.cells):
            return False
    return True


def _check_match_rule(rule: Any, where: str) -> None:
    """Fail early on a malformed {method, ref} (matching None exercises the method's validation)."""
    if not isinstance(rule, dict):
        raise _bad(f"{where} must be a {{method, ref}} object, got {rule!r}")
    try:
        _match(None, rule)
    except UserError as exc:
        raise _bad(f"{where}: {exc}") from None


# ---------------------------------------------------------------------------------------------
# Cell values, colours and styles


def _color(color: Any) -> str | None:
    """A comparable colour: ARGB hex ``FFRRGGBB`` (indexed colours converted), ``theme:<n>[±tint]``, ``auto``."""
    if color is None:
        return None
    kind = getattr(color, "type", None)
    if kind == "rgb" and isinstance(color.rgb, str):
        return color.rgb.upper()
    if kind == "indexed":
        index = color.indexed
        if isinstance(index, int) and 0 <= index < len(COLOR_INDEX):
            return ("FF" + COLOR_INDEX[index][2:]).upper()
        return f"indexed:{index}"
    if kind == "theme":
        tint = getattr(color, "tint", 0) or 0
        return f"theme:{color.theme}" + (f"{tint:+.3f}" if tint else "")
    if kind == "auto":
        return "auto"
    return None


_DEFAULT_COLOR = "00000000"  # openpyxl's value for a colour that was never set


def _fill_color(fill: Any, differential: bool) -> str | None:
    """The visible fill colour: fgColor of a solid/pattern cell fill. Excel and LibreOffice keep a
    differential (conditional format) fill's colour in bgColor; openpyxl-written ones in fgColor.
    None when there is no fill."""
    if fill is None or getattr(fill, "tagname", "") != "patternFill":
        return None
    if differential:
        background = _color(fill.bgColor)
        return background if background not in (None, _DEFAULT_COLOR) else _color(fill.fgColor)
    if fill.patternType is None:
        return None
    return _color(fill.fgColor)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, datetime, date, time, timedelta)) and not isinstance(value, bool)


def _hyperlink(cell: Any) -> str:
    link = getattr(cell, "hyperlink", None)
    if link is None:
        return ""
    return link.target or (f"#{link.location}" if link.location else "")


# Font properties: rule name → openpyxl Font attribute. Shown only for cells with content.
_FONT_PROPS = {
    "font_name": "name",
    "font_family": "family",
    "font_bold": "bold",
    "font_italic": "italic",
    "font_underline": "underline",
    "font_size": "size",
    "font_strike": "strike",
}
_ALIGN_PROPS = {"horizontal_alignment": "horizontal", "vertical_alignment": "vertical", "wrap_text": "wrap_text"}
STYLE_PROPS = (
    *_FONT_PROPS,
    "font_color",
    "number_format",
    "fill_type",
    "bgcolor",
    "fgcolor",
    "hyperlink",
    "merge",
    *_ALIGN_PROPS,
)


def _cell_style(prop: str, ws: Worksheet, cell: Any, value: Any) -> Any:
    """One style property of a cell (``value`` is its cached value from the value view).

    Font, colour and number-format properties read None for a cell without content (invisible);
    ``number_format`` is also None for text cells. ``merge`` is True for every cell of a merged
    range, its top-left cell included. ``hyperlink`` is the link target ("" for none).
    """
    has_content = cell.value is not None
    if prop in _FONT_PROPS:
        return getattr(cell.font, _FONT_PROPS[prop]) if has_content else None
    if prop == "font_color":
        return _color(cell.font.color) if has_content else None
    if prop == "number_format":
        # A formula without a cached value has an unknown type: keep its format.
        numeric = _is_number(value) or (value is None and cell.data_type == "f")
        return cell.number_format if has_content and numeric else None
    if prop == "fill_type":
        return getattr(cell.fill, "tagname", None)
    if prop in ("bgcolor", "fgcolor"):
        return _fill_color(cell.fill, differential=False)
    if prop == "hyperlink":
        return _hyperlink(cell) if has_content else ""
    if prop == "merge":
        return isinstance(cell, MergedCell) or cell.coordinate in ws.merged_cells
    if prop in _ALIGN_PROPS:
        return getattr(cell.alignment, _ALIGN_PROPS[prop])
    raise _bad(f"unknown cell property {prop!r}; known: value, formula, {', '.join(STYLE_PROPS)}")


_UNSET = object()


def _dxf_style(prop: str, dxf: Any) -> Any:
    """A property as a conditional format's differential style sets it; _UNSET where it sets nothing."""
    if dxf is None:
        return _UNSET
    if prop in _FONT_PROPS or prop == "font_color":
        if dxf.font is None:
            return _UNSET
        value = _color(dxf.font.color) if prop == "font_color" else getattr(dxf.font, _FONT_PROPS[prop])
        return _UNSET if value is None else value
    if prop == "number_format":
        return dxf.numFmt.formatCode if dxf.numFmt is not None else _UNSET
    if prop == "fill_type":
        return getattr(dxf.fill, "tagname", _UNSET) if dxf.fill is not None else _UNSET
    if prop in ("bgcolor", "fgcolor"):
        value = _fill_color(dxf.fill, differential=True)
        return _UNSET if value is None else value
    if prop in _ALIGN_PROPS and dxf.alignment is not None:
        value = getattr(dxf.alignment, _ALIGN_PROPS[prop])
        return _UNSET if value is None else value
    return _UNSET


def _check_props(props: Any, known: tuple[str, ...], where: str) -> list[str]:
    if not isinstance(props, list) or not all(isinstance(p, str) for p in props):
        raise _bad(f"{where} must be a list of property names, got {props!r}")
    unknown = [p for p in props if p not in known]
    if unknown:
        raise _bad(f"{where}: unknown properties {unknown}; known: {', '.join(known)}")
    return props


# ---------------------------------------------------------------------------------------------
# Printed values (number formats)

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_EPOCH = datetime(1899, 12, 30)
_ELAPSED = re.compile(r"h+|m+|s+", re.IGNORECASE)
_COLOUR = re.compile(r"[a-z]+\d*", re.IGNORECASE)


def _general(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.10g}".upper()


def _sections(fmt: str) -> list[str]:
    """Split a number format at ``;`` outside quotes, brackets and escapes."""
    sections, current, quoted, bracket, i = [], "", False, False, 0
    while i < len(fmt):
        ch = fmt[i]
        if ch == "\\" and not quoted:
            current += fmt[i:i + 2]
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch == "[" and not quoted:
            bracket = True
        elif ch == "]" and not quoted:
            bracket = False
        elif ch == ";" and not quoted and not bracket:
            sections.append(current)
            current, i = "", i + 1
            continue
        current += ch
        i += 1
    return [*sections, current]


def _tokens(section: str) -> list[tuple[str, str]] | None:
    """Tokens ``(kind, text)``: ``lit`` (shown as is), ``code`` (one format character), ``ampm``,
    ``elapsed`` (``[h]``…). None for what is not rendered here: conditions such as ``[>100]``."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(section):
        ch = section[i]
        if ch == '"':
            end = section.find('"', i + 1)
            end = len(section) if end < 0 else end
            out.append(("lit", section[i + 1:end]))
            i = end + 1
        elif ch == "\\":
            out.append(("lit", section[i + 1:i + 2]))
            i += 2
        elif ch == "_":  # a space as wide as the next character
            out.append(("lit", " "))
            i += 2
        elif ch == "*":  # fill with the next character: nothing in printed text
            i += 2
        elif ch == "[":
            end = section.find("]", i)
            if end < 0:
                return None
            inner = section[i + 1:end]
            if inner.startswith("$"):  # currency/locale: [$€-407] shows €
                out.append(("lit", inner[1:].split("-")[0]))
            elif _ELAPSED.fullmatch(inner):
                out.append(("elapsed", inner.lower()))
            elif not _COLOUR.fullmatch(inner):  # colours are not printed; conditions are not handled
                return None
            i = end + 1
        elif section[i:i + 5].upper() == "AM/PM":
            out.append(("ampm", "AM/PM"))
            i += 5
        elif section[i:i + 3].upper() == "A/P":
            out.append(("ampm", "A/P"))
            i += 3
        else:
            out.append(("code", ch))
            i += 1
    return out


def _literal(tokens: list[tuple[str, str]]) -> str:
    return "".join(text for kind, text in tokens if kind in ("lit", "code"))


def _render_number(value: float, sections: list[str]) -> str:
    section = sections[0]
    sign = "-" if value < 0 else ""
    if value < 0 and len(sections) > 1:
        section, sign = sections[1], ""
    elif value == 0 and len(sections) > 2:
        section = sections[2]
    value = abs(value)
    if section.strip().lower() == "general":
        return sign + _general(value)
    tokens = _tokens(section)
    if tokens is None or "general" in section.lower():
        return sign + _general(value)
    places = [i for i, (kind, ch) in enumerate(tokens) if kind == "code" and ch in "0#?"]
    if not places:
        return _literal(tokens)  # e.g. the accounting zero section "-"
    first, last = places[0], places[-1]
    body = tokens[first:last + 1]
    if any(kind != "code" or ch not in "0#?.," for kind, ch in body):
        return sign + _general(value)  # fractions, scientific notation, literals between digits
    end = last + 1
    while end < len(tokens) and tokens[end] == ("code", ","):  # trailing commas scale by 1000
        value /= 1000
        end += 1
    value *= 100 ** sum(1 for kind, ch in tokens if kind == "code" and ch == "%")
    pattern = "".join(ch for _, ch in body)
    int_pattern, dot, frac_pattern = pattern.partition(".")
    most = sum(ch in "0#?" for ch in frac_pattern)
    # Spreadsheets round halves away from zero (Python's format rounds them to even).
    text = f"{Decimal(repr(value)).quantize(Decimal(1).scaleb(-most), ROUND_HALF_UP):f}"
    int_text, _, frac_text = text.partition(".")
    if float(text) == 0:
        sign = ""
    # "0" shows a digit even when it is zero; "?" shows a space instead; "#" shows nothing.
    zeros, width = int_pattern.count("0"), int_pattern.count("0") + int_pattern.count("?")
    if int_text == "0" and zeros == 0:
        int_text = ""
    elif "," in int_pattern:
        int_text = f"{int(int_text):,}"
    int_text = int_text.zfill(zeros).rjust(width)
    frac_zeros = frac_pattern.count("0")
    frac_text = frac_text[:frac_zeros] + frac_text[frac_zeros:].rstrip("0")
    frac_text = frac_text.ljust(frac_zeros + frac_pattern.count("?"))
    number = int_text + (dot + frac_text if dot else "")
    return sign + _literal(tokens[:first]) + number + _literal(tokens[end:])


def _moment(value: datetime | date | time | timedelta) -> tuple[datetime, timedelta]:
    """A point in time and the elapsed time since the spreadsheet epoch (for ``[h]`` formats)."""
    if isinstance(value, timedelta):
        return _EPOCH + value, value
    if isinstance(value, datetime):
        return value, value - _EPOCH
    if isinstance(value, date):
        moment = datetime.combine(value, time())
        return moment, moment - _EPOCH
    moment = datetime.combine(_EPOCH.date(), value)
    return moment, moment - _EPOCH


def _render_datetime(value: datetime | date | time | timedelta, section: str) -> str:
    tokens = _tokens(section)
    if tokens is None or section.strip().lower() == "general":
        return value.isoformat() if not isinstance(value, timedelta) else str(value)
    moment, elapsed = _moment(value)
    runs: list[list[str]] = []  # consecutive equal date letters form one run: "yyyy", "mm"
    for kind, text in tokens:
        if kind == "code" and text.lower() in "ymdhs0" and runs and runs[-1][0] == "code" \
                and runs[-1][1][0].lower() == text.lower():
            runs[-1][1] += text
        else:
            runs.append([kind, text])
    twelve = any(kind == "ampm" for kind, _ in runs)
    letters = [(i, text.lower()[0]) for i, (kind, text) in enumerate(runs)
               if (kind == "code" and text.lower()[0] in "ymdhs") or kind == "elapsed"]
    out: list[str] = []
    skip = -1
    for i, (kind, text) in enumerate(runs):
        if i == skip:
            continue
        lower = text.lower()
        if kind == "lit":
            out.append(text)
        elif kind == "ampm":
            morning = moment.hour < 12
            out.append(("AM" if morning else "PM") if text == "AM/PM" else ("A" if morning else "P"))
        elif kind == "elapsed":
            seconds = int(elapsed.total_seconds())
            amount = {"h": seconds // 3600, "m": seconds // 60, "s": seconds}[lower[0]]
            out.append(str(amount).zfill(len(lower)))
        elif lower[0] == "y":
            out.append(f"{moment.year % 100:02d}" if len(lower) <= 2 else f"{moment.year:04d}")
        elif lower[0] == "m" and _is_minute(letters, i):
            out.append(str(moment.minute).zfill(min(len(lower), 2)))
        elif lower[0] == "m":
            names = {3: _MONTHS[moment.month - 1][:3], 4: _MONTHS[moment.month - 1], 5: _MONTHS[moment.month - 1][0]}
            out.append(names.get(len(lower), str(moment.month).zfill(min(len(lower), 2))))
        elif lower[0] == "d":
            names = {3: _DAYS[moment.weekday()][:3]}
            out.append(names.get(len(lower), _DAYS[moment.weekday()] if len(lower) > 3 else str(moment.day).zfill(len(lower))))
        elif lower[0] == "h":
            hour = (moment.hour % 12 or 12) if twelve else moment.hour
            out.append(str(hour).zfill(min(len(lower), 2)))
        elif lower[0] == "s":
            out.append(str(moment.second).zfill(min(len(lower), 2)))
        elif text == "." and i + 1 < len(runs) and runs[i + 1][1].startswith("0") and runs[i + 1][0] == "code":
            width = len(runs[i + 1][1])
            out.append(f"{moment.microsecond / 1e6:.{width}f}"[1:])
            skip = i + 1
        else:
            out.append(text)
    return "".join(out)


def _is_minute(letters: list[tuple[int, str]], index: int) -> bool:
    """An ``m`` run means minutes right after an hour or right before a second (else: month)."""
    position = next(p for p, (i, _) in enumerate(letters) if i == index)
    before = letters[position - 1][1] if position > 0 else ""
    after = letters[position + 1][1] if position + 1 < len(letters) else ""
    return before == "h" or after == "s"


def _printed(value: Any, fmt: str | None) -> str:
    """A cell as a spreadsheet shows it: its cached value rendered with its number format.

    Handled: General, digit patterns (``0``, ``#``, ``?``, decimals, thousands separators, trailing
    scaling commas, ``%``), literal text and currency (``"kg"``, ``\\$``, ``[$€-407]``), positive /
    negative / zero / text sections, colours (ignored: not printed), date and time codes (``y m d h
    s``, ``AM/PM``, ``[h]``, fractional seconds; English month and day names). Conditions
    (``[>100]``), fractions and scientific notation fall back to the General rendering.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    sections = _sections(fmt or "General")
    if isinstance(value, str):
        text_section = sections[3] if len(sections) > 3 else next((s for s in sections if "@" in s), None)
        tokens = _tokens(text_section) if text_section else None
        if not tokens:
            return value
        return "".join(value if (kind, text) == ("code", "@") else text for kind, text in tokens if kind != "elapsed")
    if isinstance(value, (datetime, date, time, timedelta)):
        return _render_datetime(value, sections[0])
    if isinstance(value, (int, float)):
        return _render_number(value, sections)
    return str(value)


# ---------------------------------------------------------------------------------------------
# Sheet grids


def _grid(ws: Worksheet, cell_text: Callable[[Any], Any]) -> list[list[Any]]:
    """The sheet from A1 to its last used cell, through ``cell_text``, without trailing empties."""
    rows = [[cell_text(cell) for cell in row]
            for row in ws.iter_rows(min_row=1, min_col=1, max_row=ws.max_row, max_col=ws.max_column)]
    for row in rows:
        while row and row[-1] in (None, ""):
            row.pop()
    while rows and not rows[-1]:
        rows.pop()
    return rows


def _text(value: Any) -> str:
    """A cell value as text for fuzzy checks: "" for empty, ``3`` rather than ``3.0``."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# ---------------------------------------------------------------------------------------------
# Frames as OSWorld's sheet_data sees them: pandas.read_excel(header=0) of the cached values


# Text that pandas.read_excel reads as a missing value (its default na_values).
_NA_TEXT = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                      "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})
_NA = object()  # a missing value in a column
_TRUE_TEXT, _FALSE_TEXT = frozenset({"True", "TRUE", "true"}), frozenset({"False", "FALSE", "false"})
_NUMBER_TEXT = re.compile(r"\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity)\s*", re.IGNORECASE)


def _pandas_cell(cell: Any) -> Any:
    """A cached cell value as pandas' openpyxl reader converts it: "" for empty, NaN-like for an
    error, integral numbers as int."""
    value = cell.value
    if value is None:
        return ""
    if cell.data_type == "e":
        return _NA
    if cell.data_type == "n" and not isinstance(value, bool):
        return int(value) if int(value) == value else float(value)
    return value


def _sheet_rows(vs: Worksheet) -> list[list[Any]]:
    """Rows from row 1, each without trailing empty cells, without trailing empty rows, padded to one width."""
    rows = []
    for row in vs.iter_rows(min_row=1, min_col=1, max_row=vs.max_row, max_col=vs.max_column):
        values = [_pandas_cell(cell) for cell in row]
        while values and isinstance(values[-1], str) and values[-1] == "":
            values.pop()
        rows.append(values)
    while rows and not rows[-1]:
        rows.pop()
    width = max((len(r) for r in rows), default=0)
    return [r + [""] * (width - len(r)) for r in rows]


def _number_text(value: str) -> int | float | None:
    if not _NUMBER_TEXT.fullmatch(value):
        return None
    number = float(value)
    return int(number) if re.fullmatch(r"\s*[+-]?\d+\s*", value) else number


def _column(values: list[Any], precision: int) -> tuple[str, list[Any]]:
    """A column's pandas dtype kind and values (missing ones as _NA), floats rounded as DataFrame.round."""
    values = [_NA if v is _NA or (isinstance(v, str) and v in _NA_TEXT) else v for v in values]
    present = [v for v in values if v is not _NA]
    missing = len(present) < len(values)
    if not values:
        return "object", []
    if not present:
        return "float", [_NA] * len(values)
    numbers = []
    for v in present:
        if isinstance(v, (bool, int, float)):
            numbers.append(v)
        elif isinstance(v, str) and (n := _number_text(v)) is not None:
            numbers.append(n)
        else:
            numbers = None
            break
    if numbers is not None:
        if all(isinstance(n, bool) for n in numbers) and not missing:
            return "bool", values
        if not missing and all(isinstance(n, int) for n in numbers):
            return "int", [int(n) for n in numbers]
        it = iter(numbers)
        floats = [_NA if v is _NA else float(next(it)) for v in values]
        return "float", [v if v is _NA else _round_half_even(v, precision) for v in floats]
    if all(isinstance(v, bool) or (isinstance(v, str) and v in _TRUE_TEXT | _FALSE_TEXT) for v in present):
        converted = [v if v is _NA or isinstance(v, bool) else v in _TRUE_TEXT for v in values]
        return ("object" if missing else "bool"), converted
    if all(isinstance(v, str) for v in present):
        return "str", values
    if all(isinstance(v, datetime) for v in present):
        return "datetime", values
    return "object", values


def _round_half_even(value: float, precision: int) -> float:
    """numpy's round (DataFrame.round): scale, round half to even, unscale."""
    if value != value or value in (float("inf"), float("-inf")):
        return value
    scale = 10.0 ** precision
    return round(value * scale) / scale if abs(value * scale) < 2 ** 52 else value


def _frame(vs: Worksheet, precision: int) -> tuple[list[Any], list[tuple[str, list[Any]]]]:
    """(column labels, columns) of ``pandas.read_excel(header=0)`` of the sheet: the first row names
    the columns ("Unnamed: i" for an empty one, ".1" suffixes for repeats)."""
    rows = _sheet_rows(vs)
    if not rows:
        return [], []
    labels: list[Any] = []
    counts: dict[Any, int] = {}
    for i, label in enumerate(rows[0]):
        if isinstance(label, str) and label == "":
            label = f"Unnamed: {i}"
        count = counts.get(label, 0)
        while count > 0:  # pandas' renaming of repeated labels: "x", "x.1", "x.2"
            counts[label] = count + 1
            label = f"{label}.{count}"
            count = counts.get(label, 0)
        counts[label] = count + 1
        labels.append(label)
    columns = [_column([row[i] for row in rows[1:]], precision) for i in range(len(labels))]
    return labels, columns


def _same_value(a: Any, b: Any) -> bool:
    if a is _NA or b is _NA or (isinstance(a, float) and a != a) or (isinstance(b, float) and b != b):
        return (a is _NA or a != a) and (b is _NA or b != b)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - incomparable values are different
        return False


def _same_frame(first: tuple[list[Any], list[Any]], second: tuple[list[Any], list[Any]]) -> bool:
    """DataFrame.equals: same labels, and column by column the same dtype and equal values (missing equals missing)."""
    (labels1, columns1), (labels2, columns2) = first, second
    if len(labels1) != len(labels2) or not all(_same_value(a, b) for a, b in zip(labels1, labels2)):
        return False
    for (kind1, values1), (kind2, values2) in zip(columns1, columns2):
        if kind1 != kind2 or len(values1) != len(values2):
            return False
        if not all(_same_value(a, b) for a, b in zip(values1, values2)):
            return False
    return True


# ---------------------------------------------------------------------------------------------
# Rule checks: each returns whether the rule holds


def _rule_sheet_name(books: _Workbooks, rule: dict[str, Any]) -> bool:
    return books.result.formulas.sheetnames == books.expected.formulas.sheetnames


def _rule_sheet_data(books: _Workbooks, rule: dict[str, Any]) -> bool:
    """OSWorld reads both sheets with pandas.read_excel and compares ``DataFrame.round(precision).equals``;
    the same frames are built here from the cached values (``ignore_case`` is not an option of this
    rule in OSWorld and is ignored)."""
    pair = books.pair(rule)
    if pair is None:
        return False
    precision = rule.get("precision", 4)
    return _same_frame(*(_frame(s.vs, precision) for s in pair))


def _rule_sheet_print(books: _Workbooks, rule: dict[str, Any]) -> bool:
    pair = books.pair(rule)
    if pair is None:
        return False
    fold = str.lower if rule.get("ignore_case", False) else str
    first, second = (_grid(s.vs, lambda c: fold(_printed(c.value, c.number_format))) for s in pair)
    return first == second


_FUZZY_TYPES = ("includes", "included_by", "fuzzy_match", "exact_match")


def _normalise(text: str, check: dict[str, Any]) -> str:
    for old, new in check.get("normalization", []):
        text = text.replace(old, new)
    leading = check.get("trim_leadings", check.get("trim_leading"))
    trailing = check.get("trim_trailings", check.get("trim_trailing"))
    if leading is not None:
        text = text.lstrip(leading)
    if trailing is not None:
        text = text.rstrip(trailing)
    if "ignore_chars" in check:
        text = "".join(ch for ch in text if ch not in check["ignore_chars"])
    return text.lower() if check.get("ignore_case", False) else text


def _fuzzy_holds(first: str, second: str, check: dict[str, Any]) -> bool:
    kind = check["type"]
    if kind == "includes":
        return second in first
    if kind == "included_by":
        return first in second
    if kind == "fuzzy_match":
        return fuzz.ratio(first, second) >= check.get("threshold", 85)
    return first == second


def _rule_sheet_fuzzy(books: _Workbooks, rule: dict[str, Any]) -> bool:
    pair = books.pair(rule)
    if pair is None:
        return False
    first, second = pair
    for check in rule["rules"]:
        for rng in _ranges(check["range"]).ranges:
            for row, col in rng.cells:
                a = _normalise(_text(first.vs.cell(row, col).value), check)
                b = _normalise(_text(second.vs.cell(row, col).value), check)
                if not _fuzzy_holds(a, b, check):
                    return False
    return True


def _ranges(value: str | list[str]) -> MultiCellRange:
    return MultiCellRange(" ".join(value) if isinstance(value, list) else value)


def _rule_check_cell(books: _Workbooks, rule: dict[str, Any]) -> bool:
    sheet = books.sheet(rule["sheet_idx"])
    if sheet is None:
        return False
    coordinate = rule["coordinate"]
    cell, value = sheet.ws[coordinate], sheet.vs[coordinate].value
    for prop, match_rule in rule["props"].items():
        if prop == "value":
            got = value
        elif prop == "formula":
            got = cell.value
        else:
            got = _cell_style(prop, sheet.ws, cell, value)
        if not _match(got, match_rule):
            return False
    return True


# Conditional formatting rules whose condition is checked cell by cell here (others are compared
# as definitions: formula conditions need a formula engine openpyxl does not have).
_CELL_IS = {
    "equal": lambda v, a: v == a[0],
    "notEqual": lambda v, a: v != a[0],
    "greaterThan": lambda v, a: v > a[0],
    "greaterThanOrEqual": lambda v, a: v >= a[0],
    "lessThan": lambda v, a: v < a[0],
    "lessThanOrEqual": lambda v, a: v <= a[0],
    "between": lambda v, a: min(a[:2]) <= v <= max(a[:2]),
    "notBetween": lambda v, a: not (min(a[:2]) <= v <= max(a[:2])),
}
_TEXT_TESTS = {
    "containsText": lambda v, t: t in v,
    "notContainsText": lambda v, t: t not in v,
    "beginsWith": lambda v, t: v.startswith(t),
    "endsWith": lambda v, t: v.endswith(t),
}
_ABSOLUTE_CELL = re.compile(r"\$([A-Za-z]{1,3})\$(\d+)")


def _cf_operand(formula: str, vs: Worksheet) -> Any:
    """A cellIs operand: a number, a quoted string or an absolute cell reference; _UNSET otherwise."""
    formula = formula.strip()
    try:
        return float(formula)
    except ValueError:
        pass
    if len(formula) >= 2 and formula[0] == formula[-1] == '"':
        return formula[1:-1].replace('""', '"')
    match = _ABSOLUTE_CELL.fullmatch(formula)
    if match:
        return vs[f"{match[1]}{match[2]}"].value
    return _UNSET


def _comparable(value: Any) -> Any:
    if isinstance(value, str):
        return value.lower()  # spreadsheet comparisons ignore case
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


def _cf_condition(cf_rule: Any, vs: Worksheet) -> Callable[[Any], bool] | None:
    """A test on a cell's cached value for the rule, or None when it cannot be checked here."""
    if cf_rule.type == "cellIs" and cf_rule.operator in _CELL_IS:
        operands = [_cf_operand(f, vs) for f in cf_rule.formula]
        if not operands or any(o is _UNSET for o in operands):
            return None
        test, args = _CELL_IS[cf_rule.operator], [_comparable(o) for o in operands]

        def cell_is(value: Any) -> bool:
            if value is None:
                return False
            try:
                return bool(test(_comparable(value), args))
            except (TypeError, IndexError):
                return cf_rule.operator in ("notEqual", "notBetween")

        return cell_is
    if cf_rule.type in _TEXT_TESTS and cf_rule.text is not None:
        test, needle = _TEXT_TESTS[cf_rule.type], cf_rule.text.lower()
        return lambda value: value is not None and test(_text(value).lower(), needle)
    if cf_rule.type in ("containsBlanks", "notContainsBlanks"):
        blank = cf_rule.type == "containsBlanks"
        return lambda value: (value is None or (isinstance(value, str) and not value.strip())) == blank
    return None


def _cf_definition(sqref: str, cf_rule: Any, props: list[str]) -> tuple[Any, ...]:
    """A conditional format that is compared as written (range, condition, parameters, style)."""
    scale = []
    for part in (cf_rule.colorScale, cf_rule.dataBar, cf_rule.iconSet):
        if part is not None:
            scale.append(tuple((o.type, o.val) for o in part.cfvo or ()))
            colours = getattr(part, "color", None)
            colours = colours if isinstance(colours, list) else [colours]
            scale.append(tuple(_color(c) for c in colours))
            scale.append(getattr(part, "iconSet", None) if hasattr(part, "iconSet") else None)
    style = tuple(None if (v := _dxf_style(p, cf_rule.dxf)) is _UNSET else v for p in props)
    return (sqref, cf_rule.type, cf_rule.operator, tuple(cf_rule.formula), cf_rule.text, cf_rule.rank,
            cf_rule.percent, cf_rule.bottom, cf_rule.aboveAverage, cf_rule.timePeriod, repr(scale), repr(style))


def _sheet_styles(sheet: _Sheet, props: list[str], rows: int, cols: int) -> tuple[dict[str, tuple], list]:
    """Per-cell effective styles (conditional formats applied where checkable) and the other conditional formats."""
    ws, vs = sheet.ws, sheet.vs
    values = {(r, c): vs.cell(r, c).value for r in range(1, rows + 1) for c in range(1, cols + 1)}
    overrides: dict[tuple[int, int], dict[str, Any]] = {}
    definitions = []
    rules = [(cf_rule.priority, str(cf.sqref), cf, cf_rule) for cf in ws.conditional_formatting for cf_rule in cf.rules]
    for _, sqref, cf, cf_rule in sorted(rules, key=lambda item: (item[0], item[1])):
        condition = _cf_condition(cf_rule, vs)
        if condition is None:
            definitions.append(_cf_definition(sqref, cf_rule, props))
            continue
        for rng in cf.sqref.ranges:
            for r, c in rng.cells:
                if r <= rows and c <= cols and condition(values[(r, c)]):
                    cell_overrides = overrides.setdefault((r, c), {})
                    for prop in props:  # the higher-priority rule (seen first) wins
                        value = _dxf_style(prop, cf_rule.dxf)
                        if value is not _UNSET:
                            cell_overrides.setdefault(prop, value)
    styles = {}
    for (r, c), value in values.items():
        cell, extra = ws.cell(r, c), overrides.get((r, c), {})
        styles[f"{get_column_letter(c)}{r}"] = tuple(
            extra[p] if p in extra else _cell_style(p, ws, cell, value) for p in props
        )
    return styles, sorted(definitions, key=repr)


def _rule_style(books: _Workbooks, rule: dict[str, Any]) -> bool:
    pair = books.pair(rule)
    if pair is None:
        return False
    rows = max(s.ws.max_row for s in pair)
    cols = max(s.ws.max_column for s in pair)
    first, second = (_sheet_styles(s, rule["props"], rows, cols) for s in pair)
    return first == second


def _freeze_key(ws: Worksheet) -> tuple[Any, ...]:
    """Frozen columns and rows (the pane's xSplit/ySplit), not the scroll-dependent top-left cell."""
    pane = ws.sheet_view.pane
    if pane is None or pane.state not in ("frozen", "frozenSplit"):
        return ("none",)
    return ("frozen", int(pane.xSplit or 0), int(pane.ySplit or 0))


def _rule_freeze(books: _Workbooks, rule: dict[str, Any]) -> bool:
    pair = books.pair(rule)
    return pair is not None and _freeze_key(pair[0].ws) == _freeze_key(pair[1].ws)


def _rule_zoom(books: _Workbooks, rule: dict[str, Any]) -> bool:
    sheet = books.sheet(rule["sheet_idx"])
    if sheet is None:
        return False
    return _match(sheet.ws.sheet_view.zoomScale or 100, rule)


def _validation_matches(dv: Any, wanted: dict[str, Any]) -> bool:
    return all(_match(getattr(dv, attribute), match_rule) for attribute, match_rule in wanted.items())


def _assign(candidates: list[list[int]]) -> bool:
    """Whether each item can take a distinct candidate (bipartite matching by augmenting paths)."""
    owner: dict[int, int] = {}

    def place(item: int, seen: set[int]) -> bool:
        for choice in candidates[item]:
            if choice not in seen:
                seen.add(choice)
                if choice not in owner or place(owner[choice], seen):
                    owner[choice] = item
                    return True
        return False

    return all(place(item, set()) for item in range(len(candidates)))


def _rule_data_validation(books: _Workbooks, rule: dict[str, Any]) -> bool:
    sheet = books.sheet(rule["sheet_idx"])
    if sheet is None:
        return False
    validations = sheet.ws.data_validations.dataValidation
    candidates = [[i for i, dv in enumerate(validations) if _validation_matches(dv, wanted)]
                  for wanted in rule["dv_props"]]
    return _assign(candidates)


ROW_PROPS = ("height", "hidden", "outline_level", "collapsed", "customHeight")
COL_PROPS = ("width", "hidden", "outline_level", "collapsed", "auto_size", "customWidth")


def _dimension_value(dimension: Any, prop: str) -> Any:
    value = getattr(dimension, prop)
    return round(value, 4) if isinstance(value, float) else value


def _row_dimensions(ws: Worksheet) -> dict[Any, Any]:
    return dict(ws.row_dimensions.items())


def _column_dimensions(ws: Worksheet) -> dict[Any, Any]:
    """Column letter → dimension, a dimension spanning min..max counted for each of its columns."""
    columns = {}
    for letter, dimension in ws.column_dimensions.items():
        low = dimension.min or column_index_from_string(letter)
        high = dimension.max or low
        for index in range(low, high + 1):
            columns[get_column_letter(index)] = dimension
    return columns


def _dimensions_rule(kind: str) -> Callable[[_Workbooks, dict[str, Any]], bool]:
    def check(books: _Workbooks, rule: dict[str, Any]) -> bool:
        pair = books.pair(rule)
        if pair is None:
            return False
        read = _row_dimensions if kind == "row" else _column_dimensions
        first, second = read(pair[0].ws), read(pair[1].ws)
        for key in set(first) | set(second):
            # A row/column without an entry has the default dimension.
            a = first.get(key) or (RowDimension(pair[0].ws, index=key) if kind == "row" else ColumnDimension(pair[0].ws, index=key))
            b = second.get(key) or (RowDimension(pair[1].ws, index=key) if kind == "row" else ColumnDimension(pair[1].ws, index=key))
            if any(_dimension_value(a, p) != _dimension_value(b, p) for p in rule["props"]):
                return False
        return True

    return check


def _filter_key(ws: Worksheet) -> dict[str, Any]:
    """The autofilter: range, per-column criteria and sort conditions."""
    auto = ws.auto_filter
    columns = []
    for column in auto.filterColumn:
        entry: dict[str, Any] = {"col_id": column.colId, "hidden_button": column.hiddenButton,
                                 "show_button": column.showButton}
        if column.filters is not None:
            entry["filters"] = sorted(column.filters.filter)
            entry["blank"] = column.filters.blank
        if column.customFilters is not None:
            entry["custom_and"] = column.customFilters._and
            entry["custom"] = sorted((f.operator, f.val) for f in column.customFilters.customFilter)
        if column.top10 is not None:
            entry["top10"] = (column.top10.top, column.top10.percent, column.top10.val)
        if column.dynamicFilter is not None:
            entry["dynamic"] = column.dynamicFilter.type
        columns.append(entry)
    sort = None
    if auto.sortState is not None:
        sort = [str(auto.sortState.ref),
                [(str(c.ref), c.descending, c.sortBy, c.customList) for c in auto.sortState.sortCondition or ()]]
    return {"ref": str(auto.ref) if auto.ref else None,
            "columns": sorted(columns, key=lambda e: e["col_id"]), "sort": sort}


def _rule_filter(books: _Workbooks, rule: dict[str, Any]) -> bool:
    pair = books.pair(rule)
    return pair is not None and _filter_key(pair[0].ws) == _filter_key(pair[1].ws)


CHART_PROPS = ("type", "title", "legend", "anchor", "width", "height", "direction", "xtitle", "ytitle", "ztitle")
_EMU_PER_CM = 360_000


def _title_text(title: Any) -> str | None:
    tx = getattr(title, "tx", None)
    if tx is None:
        return None
    if tx.rich is not None:
        return "\n".join("".join(run.t or "" for run in (p.r or ())) for p in tx.rich.p)
    if tx.strRef is not None:
        return tx.strRef.f
    return None


def _ref(data: Any) -> str:
    """The formula behind a series' values or categories (``Sheet1!$B$2:$B$5``), "" if literal."""
    for attr in ("numRef", "strRef", "multiLvlStrRef"):
        ref = getattr(data, attr, None)
        if ref is not None and getattr(ref, "f", None):
            return ref.f
    return ""


def _chart_series(chart: Any) -> tuple[tuple[str, str], ...]:
    series = []
    for plot in getattr(chart, "_charts", [chart]):
        for ser in plot.series:
            values = ser.val if ser.val is not None else ser.yVal
            categories = ser.cat if ser.cat is not None else ser.xVal
            series.append((_ref(values), _ref(categories)))
    return tuple(series)


def _anchor(chart: Any) -> list[Any]:
    anchor = chart.anchor
    kind = type(anchor).__name__
    if kind == "TwoCellAnchor":
        return ["twoCell", anchor.editAs, anchor._from.col, anchor._from.row, anchor.to.col, anchor.to.row]
    if kind == "OneCellAnchor":
        return ["oneCell", anchor._from.col, anchor._from.row]
    if kind == "AbsoluteAnchor":
        return ["absolute", anchor.pos.x, anchor.pos.y]
    return [str(anchor)]


def _extent(chart: Any, attr: str) -> float | None:
    ext = getattr(chart.anchor, "ext", None)
    return round(getattr(ext, attr) / _EMU_PER_CM, 2) if ext is not None else None


def _chart_prop(chart: Any, prop: str) -> Any:
    if prop == "type":
        return "+".join(plot.tagname for plot in getattr(chart, "_charts", [chart]))
    if prop == "title":
        return _title_text(chart.title)
    if prop == "legend":
        return chart.legend.position if chart.legend is not None else None
    if prop == "anchor":
        return _anchor(chart)
    if prop in ("width", "height"):
        return _extent(chart, "width" if prop == "width" else "height")
    if prop == "direction":
        return getattr(chart, "barDir", None)
    axis = getattr(chart, f"{prop[0]}_axis", None)  # xtitle, ytitle, ztitle
    return _title_text(axis.title) if axis is not None and axis.title is not None else None


def _charts(sheet: _Sheet, props: list[str]) -> list[tuple[Any, ...]]:
    return sorted(((_chart_series(ch), tuple(_chart_prop(ch, p) for p in props)) for ch in sheet.ws._charts), key=repr)


def _rule_chart(books: _Workbooks, rule: dict[str, Any]) -> bool:
    pair = books.pair(rule, worksheet=False)
    if pair is None:
        return False
    props = rule.get("chart_props", [])
    return _charts(pair[0], props) == _charts(pair[1], props)


PIVOT_PROPS = ("name", "show_total", "show_empty_row", "show_empty_col", "show_headers", "location",
               "selection", "ordered", "filter", "col_fields", "row_fields", "data_fields",
               "data_fields_name", "ignore_special_fields")
_VALUES_FIELD = -2  # the "Values" pseudo-field in row/column fields


def _pivot_item_values(cache_field: Any) -> list[Any]:
    shared = cache_field.sharedItems
    return [getattr(item, "v", None) for item in (shared._fields if shared is not None else ())]


def _pivot_source(pivot: Any, used: set[int]) -> tuple[Any, ...]:
    """The data source, its column range narrowed to the used fields (extra unused columns do not matter)."""
    source = pivot.cache.cacheSource
    ws_source = source.worksheetSource
    if ws_source is None:
        return (source.type,)
    if ws_source.ref is None:
        return (source.type, ws_source.sheet, ws_source.name)
    min_col, min_row, max_col, max_row = range_boundaries(ws_source.ref)
    if used:
        min_col, max_col = min_col + min(used), min_col + max(used)
    return (source.type, ws_source.sheet, min_col, min_row, max_col, max_row)


def _pivot_info(pivot: Any, props: list[str]) -> tuple[Any, ...]:
    fields = pivot.cache.cacheFields
    names = [f.name for f in fields]

    def field_name(index: int) -> Any:
        if index == _VALUES_FIELD:
            return "__values__"
        return names[index] if 0 <= index < len(names) else index

    def axis(rc_fields: Any) -> list[Any]:
        indexes = [f.x for f in rc_fields]
        if "ignore_special_fields" in props:
            indexes = [x for x in indexes if x >= 0]
        return [field_name(x) for x in indexes]

    used = {f.x for f in pivot.rowFields} | {f.x for f in pivot.colFields}
    used |= {f.fld for f in pivot.pageFields} | {f.fld for f in pivot.dataFields}
    info: dict[str, Any] = {"source": _pivot_source(pivot, {x for x in used if x >= 0})}
    simple = {"name": lambda: pivot.name, "show_total": lambda: (pivot.rowGrandTotals, pivot.colGrandTotals),
              "show_empty_row": lambda: pivot.showEmptyRow, "show_empty_col": lambda: pivot.showEmptyCol,
              "show_headers": lambda: pivot.showHeaders, "location": lambda: pivot.location.ref,
              "col_fields": lambda: axis(pivot.colFields), "row_fields": lambda: axis(pivot.rowFields)}
    for prop, read in simple.items():
        if prop in props:
            info[prop] = read()
    if "selection" in props or "filter" in props:
        selection = {}
        for index, pfield in enumerate(pivot.pivotFields):
            values = _pivot_item_values(fields[index]) if index < len(fields) else []
            items = [(values[item.x] if item.x < len(values) else item.x, bool(item.h))
                     for item in pfield.items if item.x is not None]
            if "ordered" in props:
                selection[field_name(index)] = items
            elif any(hidden for _, hidden in items):
                selection[field_name(index)] = sorted(repr(v) for v, hidden in items if hidden)
        info["selection"] = selection
    if "filter" in props:
        info["filter"] = sorted((repr(field_name(f.fld)), repr(f.item)) for f in pivot.pageFields)
    if "data_fields" in props:
        info["data_fields"] = [(field_name(f.fld), f.subtotal, f.showDataAs,
                                f.name if "data_fields_name" in props else None) for f in pivot.dataFields]
    return tuple(sorted(info.items()))


def _pivots(sheet: _Sheet, props: list[str]) -> list[tuple[Any, ...]] | None:
    """The sheet's pivot tables; None when one has no pivot cache openpyxl could read (the fields
    cannot be named without it). For the expected workbook that is a UserError."""
    for pivot in sheet.ws._pivots:
        if pivot.cache is None or pivot.cache.cacheSource is None:
            if not sheet.book.expected:
                return None
            raise _bad(f"pivot table {pivot.name!r} in {sheet.book.path!r} has no pivot cache openpyxl can read; "
                       "compare_table needs it to name the pivot fields")
    return sorted((_pivot_info(p, props) for p in sheet.ws._pivots), key=repr)


def _rule_pivot_table(books: _Workbooks, rule: dict[str, Any]) -> bool:
    pair = books.pair(rule)
    if pair is None:
        return False
    props = rule.get("pivot_props", [])
    first, second = (_pivots(s, props) for s in pair)
    return first is not None and first == second


# ---------------------------------------------------------------------------------------------
# Rule table and validation


def _need_list_of_dicts(rule: dict[str, Any], key: str, where: str) -> list[dict[str, Any]]:
    value = rule[key]
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise _bad(f"{where}: {key!r} must be a list of objects, got {value!r}")
    return value


def _validate_sheet_data(rule: dict[str, Any], where: str) -> None:
    precision = rule.get("precision", 4)
    if not isinstance(precision, int) or isinstance(precision, bool) or precision < 0:
        raise _bad(f"{where}: 'precision' must be a non-negative integer, got {precision!r}")


def _validate_sheet_fuzzy(rule: dict[str, Any], where: str) -> None:
    for check in _need_list_of_dicts(rule, "rules", where):
        if check.get("type") not in _FUZZY_TYPES:
            raise _bad(f"{where}: each fuzzy check needs 'type' in {_FUZZY_TYPES}, got {check.get('type')!r}")
        try:
            _ranges(check["range"])
        except (KeyError, TypeError, ValueError):
            raise _bad(f"{where}: each fuzzy check needs 'range' (cell ranges such as \"A1:B6\"), got {check!r}") from None
        threshold = check.get("threshold", 85)
        if not isinstance(threshold, (int, float)) or not 0 <= threshold <= 100:
            raise _bad(f"{where}: 'threshold' is a fuzz ratio in [0, 100], got {threshold!r}")
        pairs = check.get("normalization", [])
        if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise _bad(f"{where}: 'normalization' must be a list of [old, new] pairs, got {pairs!r}")


def _validate_check_cell(rule: dict[str, Any], where: str) -> None:
    try:
        coordinate_to_tuple(rule["coordinate"])
    except (TypeError, ValueError, AttributeError):
        raise _bad(f"{where}: 'coordinate' must be one cell such as \"E3\", got {rule['coordinate']!r}") from None
    props = rule["props"]
    if not isinstance(props, dict):
        raise _bad(f"{where}: 'props' must map property names to {{method, ref}}, got {props!r}")
    _check_props(list(props), ("value", "formula", *STYLE_PROPS), f"{where}: props")
    for prop, match_rule in props.items():
        _check_match_rule(match_rule, f"{where}: props.{prop}")


def _validate_zoom(rule: dict[str, Any], where: str) -> None:
    _check_match_rule(rule, where)


_DV_ATTRIBUTES = ("sqref", "ranges", "cells", "type", "validation_type", "formula1", "formula2", "operator",
                  "allowBlank", "allow_blank", "showDropDown", "hide_drop_down", "showInputMessage",
                  "showErrorMessage", "error", "errorTitle", "errorStyle", "prompt", "promptTitle", "imeMode")


def _validate_data_validation(rule: dict[str, Any], where: str) -> None:
    for wanted in _need_list_of_dicts(rule, "dv_props", where):
        _check_props(list(wanted), _DV_ATTRIBUTES, f"{where}: dv_props")
        for attribute, match_rule in wanted.items():
            _check_match_rule(match_rule, f"{where}: dv_props.{attribute}")


def _props_validator(key: str, known: tuple[str, ...], required: bool = True) -> Callable[[dict[str, Any], str], None]:
    def validate(rule: dict[str, Any], where: str) -> None:
        if required or key in rule:
            _check_props(rule[key], known, f"{where}: {key!r}")

    return validate


def _unsupported(reason: str) -> Callable[[dict[str, Any], str], None]:
    def validate(rule: dict[str, Any], where: str) -> None:
        raise _bad(f"{where}: {reason}")

    return validate


@dataclass(frozen=True)
class _RuleType:
    keys: tuple[str, ...]
    check: Callable[[_Workbooks, dict[str, Any]], bool]
    validate: Callable[[dict[str, Any], str], None] | None = None


_PAIR = ("sheet_idx0", "sheet_idx1")
RULE_TYPES: dict[str, _RuleType] = {
    "sheet_name": _RuleType((), _rule_sheet_name),
    "sheet_data": _RuleType(_PAIR, _rule_sheet_data, _validate_sheet_data),
    "sheet_print": _RuleType(_PAIR, _rule_sheet_print),
    "sheet_fuzzy": _RuleType((*_PAIR, "rules"), _rule_sheet_fuzzy, _validate_sheet_fuzzy),
    "check_cell": _RuleType(("sheet_idx", "coordinate", "props"), _rule_check_cell, _validate_check_cell),
    "style": _RuleType((*_PAIR, "props"), _rule_style, _props_validator("props", STYLE_PROPS)),
    "freeze": _RuleType(_PAIR, _rule_freeze),
    "zoom": _RuleType(("sheet_idx", "method"), _rule_zoom, _validate_zoom),
    "data_validation": _RuleType(("sheet_idx", "dv_props"), _rule_data_validation, _validate_data_validation),
    "row_props": _RuleType((*_PAIR, "props"), _dimensions_rule("row"), _props_validator("props", ROW_PROPS)),
    "col_props": _RuleType((*_PAIR, "props"), _dimensions_rule("column"), _props_validator("props", COL_PROPS)),
    "filter": _RuleType(_PAIR, _rule_filter),
    "chart": _RuleType(_PAIR, _rule_chart, _props_validator("chart_props", CHART_PROPS, required=False)),
    "pivot_table": _RuleType(_PAIR, _rule_pivot_table, _props_validator("pivot_props", PIVOT_PROPS, required=False)),
    "sparkline": _RuleType(_PAIR, lambda books, rule: False, _unsupported(
        "rule type 'sparkline' is not supported: openpyxl drops sparklines (an x14 extension) when it reads a file")),
}


def _validate_rules(rules: Any) -> list[dict[str, Any]]:
    if not isinstance(rules, list) or not rules:
        raise _bad(f"'rules' must be a non-empty list of rule objects, got {rules!r}")
    for i, rule in enumerate(rules):
        where = f"rules[{i}]"
        if not isinstance(rule, dict):
            raise _bad(f"{where} must be an object with a 'type', got {rule!r}")
        rule_type = RULE_TYPES.get(rule.get("type"))
        if rule_type is None:
            raise _bad(f"{where}: unknown rule type {rule.get('type')!r}; known: {', '.join(RULE_TYPES)}")
        missing = [key for key in rule_type.keys if key not in rule]
        if missing:
            raise _bad(f"{where} ({rule['type']}): missing {missing}")
        for key in ("sheet_idx", *_PAIR):
            if key in rule:
                _parse_selector(rule[key], f"{where}.{key}")
        if rule_type.validate is not None:
            rule_type.validate(rule, f"{where} ({rule['type']})")
    return rules


@metric("compare_table")
def compare_table(result_path: str | None, expected_path: str | None = None, rules: Any = None, **unknown: Any) -> float:
    """1 when the result xlsx passes every rule (checked in order, stopping at the first failure), else 0.

    ``result_path`` / ``expected_path``: local xlsx paths (expected is optional: rules that only
    look at the result need none). ``rules``: list of ``{"type": …, …}``. Sheet selectors
    (``sheet_idx``, ``sheet_idx0``, ``sheet_idx1``): an int (result sheet by index), ``"RI0"`` /
    ``"EI0"`` (result/expected by index), ``"RNSheet1"`` / ``"ENSheet1"`` (by name). Types:

    - ``sheet_name``: same sheet names in the same order as expected.
    - ``sheet_data`` (sheet_idx0, sheet_idx1, precision=4): the sheets as OSWorld's
      ``pandas.read_excel`` frames (first row = column names, "NA"/"N/A"/"None"… and empty as
      missing, numeric text as numbers, one dtype per column) equal after rounding floats to
      ``precision`` decimals; ``ignore_case`` is not an option of this rule (ignored, as in OSWorld).
    - ``sheet_print`` (sheet_idx0, sheet_idx1, ignore_case=false): values as displayed through
      their number formats (see ``_printed``); computed here instead of OSWorld's
      LibreOffice-exported CSV, so no postconfig export is needed.
    - ``sheet_fuzzy`` (sheet_idx0, sheet_idx1, rules=[{range, type: includes | included_by |
      fuzzy_match | exact_match, threshold (0–100, default 85), ignore_case, ignore_chars,
      trim_leadings, trim_trailings, normalization: [[old, new]…]}]): cell by cell over ranges.
    - ``check_cell`` (sheet_idx, coordinate, props {prop: {method, ref}}): ``value`` (cached),
      ``formula`` (as written, e.g. ``=SUM(A1:A3)``) or a style property from ``STYLE_PROPS``.
    - ``style`` (sheet_idx0, sheet_idx1, props [...]): per-cell style properties equal, with
      conditional formats applied where their condition can be checked without a formula engine
      (``cellIs`` with constant or absolute-cell operands, text and blank tests, using cached
      values); the other conditional formats (formula expressions, top/average/duplicate rules,
      colour scales, data bars, icon sets) are compared as definitions.
    - ``freeze`` (sheet_idx0, sheet_idx1): same frozen rows/columns.
    - ``zoom`` (sheet_idx, method, ref): zoom percentage (100 when unset) matches.
    - ``data_validation`` (sheet_idx, dv_props [{attribute: {method, ref}}]): each item is
      matched by a different validation of the sheet (extra validations are allowed); ``sqref``
      supports ``spreadsheet_range``.
    - ``row_props`` / ``col_props`` (sheet_idx0, sheet_idx1, props): rows' height, hidden,
      outline_level, collapsed, customHeight / columns' width, hidden, outline_level, collapsed,
      auto_size, customWidth equal (rows/columns without an entry have the defaults).
    - ``filter`` (sheet_idx0, sheet_idx1): same autofilter range, column criteria and sort.
    - ``chart`` (sheet_idx0, sheet_idx1, chart_props [...]): same number of charts with the same
      series references, and equal ``CHART_PROPS`` (width/height: the anchor's extent in cm,
      None for two-cell anchors, which are sized by their cells: compare ``anchor``).
    - ``pivot_table`` (sheet_idx0, sheet_idx1, pivot_props [...]): same pivot tables (source range
      narrowed to the used fields) with equal ``PIVOT_PROPS``; fields are named through the pivot
      cache openpyxl reads with the table (a result pivot without a readable cache fails, an
      expected one is a UserError). Only the definition is compared: openpyxl does not compute
      pivot output, so the rendered cells are checked with ``sheet_data`` if needed.
      ``show_total`` means (row grand totals, column grand totals).
    - ``sparkline``: not supported (openpyxl drops sparklines on reading): UserError.
    """
    if unknown:
        raise _bad(f"unknown options {sorted(unknown)}; it takes 'rules'")
    checked = _validate_rules(rules)
    formulas = _load(result_path, data_only=False)
    if formulas is None:
        return 0.0
    books = _Workbooks(_Book(result_path, formulas), expected_path)
    try:
        for rule in checked:
            if not RULE_TYPES[rule["type"]].check(books, rule):
                return 0.0
    except _Unreadable:
        return 0.0
    return 1.0


# ---------------------------------------------------------------------------------------------
# CSV


def _csv_lines(path: str, strict: bool, ignore_case: bool) -> list[str] | None:
    """The file's lines as OSWorld compares them: UTF-8 (a BOM kept as a character), else Latin-1."""
    file = Path(path)
    if not file.is_file():
        return None
    data = file.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    lines = text.splitlines()
    if not strict:
        lines = [line.strip() for line in lines]
    if ignore_case:
        lines = [line.lower() for line in lines]
    return lines


@metric("compare_csv")
def compare_csv(
    result_path: str | None, expected_path: Any = None, strict: bool = True, ignore_case: bool = False, **unknown: Any
) -> float:
    """1 when the result CSV has the same lines as the expected CSV (or any one of a list of them).

    ``result_path``: local CSV path; ``expected_path``: a path or a list of acceptable paths.
    The files are compared line by line as text, as OSWorld does, so quoting matters
    (``"a",b`` is not ``a,b``) and so does a trailing empty line; only the line-ending style and a
    final newline do not. ``strict=False`` strips each whole line; ``ignore_case`` lower-cases
    both sides. Expected files that do not exist are skipped; none existing is a UserError
    (OSWorld scores 0: the gold file is the task's, not the agent's).
    """
    if unknown:
        raise UserError(f"metric 'compare_csv': unknown options {sorted(unknown)}; it takes 'strict', 'ignore_case'")
    paths = expected_path if isinstance(expected_path, list) else [expected_path]
    if not paths or not all(isinstance(p, str) for p in paths):
        raise UserError(f"metric 'compare_csv': expected must be a CSV path or a list of them, got {expected_path!r}")
    golds = [lines for lines in (_csv_lines(p, strict, ignore_case) for p in paths) if lines is not None]
    if not golds:
        raise UserError(f"metric 'compare_csv': no expected CSV file could be read among {paths}")
    result = _csv_lines(result_path, strict, ignore_case) if result_path else None
    if result is None:
        return 0.0
    return float(any(result == gold for gold in golds))


def _place_words(value: Any) -> str:
    """A place name folded for matching: accents dropped, lower case, punctuation as single spaces."""
    text = unicodedata.normalize("NFKD", "" if value is None else str(value))
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


@metric("compare_conference_city_in_order")
def compare_conference_city_in_order(result_path: str | None, rules: Any) -> float:
    """1 when column C of the workbook's active sheet, from row 2 on, names the expected cities in order.

    rules: ``{expected: [city | [alternatives…], …]}``, one entry per row (OSWorld's task: 21,
    C2:C22). A cell matches when one alternative appears in it as whole words, ignoring case,
    accents and punctuation ("Montréal, Canada" matches "Montreal"). OSWorld matched substrings,
    so "LA" was found in "Atlanta" and "Lake Tahoe"; and it always read C2:C22 whatever the
    length of the list.
    """
    name = "compare_conference_city_in_order"
    if not isinstance(rules, dict) or not isinstance(rules.get("expected"), list) or not rules["expected"]:
        raise UserError(f"metric {name!r} needs rules {{expected: [city or [alternatives], ...]}}, got {rules!r}")
    wanted: list[list[str]] = []
    for i, entry in enumerate(rules["expected"]):
        alternatives = [entry] if isinstance(entry, str) else entry
        if not isinstance(alternatives, list) or not all(isinstance(a, str) and _place_words(a) for a in alternatives):
            raise UserError(f"metric {name!r}: expected[{i}] must be a city name or a list of them, got {entry!r}")
        wanted.append([_place_words(a) for a in alternatives])
    book = _load(result_path, data_only=True)
    if book is None:
        return 0.0
    sheet = book.active
    if sheet is None or not hasattr(sheet, "cell"):  # no sheet, or a chart sheet
        return 0.0
    for row, alternatives in enumerate(wanted, start=2):
        cell = f" {_place_words(sheet.cell(row=row, column=3).value)} "
        if not any(f" {alternative} " in cell for alternative in alternatives):
            return 0.0
    return 1.0
