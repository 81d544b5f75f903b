"""Spreadsheet metrics: ``compare_table`` (a list of checks over xlsx workbooks), ``compare_csv``, and
``compare_conference_city_in_order`` (one column of place names, OSWorld's conference-city task).

``compare_table`` scores every rule type as OSWorld's own metric does, reading what OSWorld reads:
``sheet_data`` the cached values (as pandas frames, built here from openpyxl's value view);
``check_cell`` values, ``sheet_fuzzy`` and conditional-format conditions the raw cell XML
(tables_xml); ``sheet_print`` the CSV the task's postconfig exported next to the xlsx; everything
else openpyxl's formula view. Conditional-format formulas are evaluated by tables_cf. Where
OSWorld's code raises on the files (an agent's file it cannot read that way) the score is 0.

A result that is ``None``, missing or not a readable workbook scores 0. A malformed rule list, an
unknown rule type, a missing rule key, a rule that needs the expected workbook when there is none,
and an expected workbook (a gold file) that is missing or unreadable raise UserError.
"""

from __future__ import annotations

import functools
import operator
import re
import unicodedata
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import openpyxl
from openpyxl.cell.cell import MergedCell
from openpyxl.utils.cell import coordinate_to_tuple, get_column_letter
from openpyxl.workbook.workbook import Workbook
from openpyxl.worksheet.cell_range import CellRange, MultiCellRange
from openpyxl.worksheet.worksheet import Worksheet
from rapidfuzz import fuzz

from mcpworld.core.errors import UserError
from mcpworld.evaluation.matchers import RuleError, osworld_match_value
from mcpworld.evaluation.metrics.tables_cf import compile_condition, constant
from mcpworld.evaluation.metrics.tables_xml import RawBook, sheet_csv_lines
from mcpworld.evaluation.registry import metric

NAME = "compare_table"


def _bad(message: str) -> UserError:
    return UserError(f"metric {NAME!r}: {message}")


_UNBOUND = object()


class _Crash(Exception):
    """OSWorld's compare_table raises on this input: the score is 0."""


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
        self._raw: dict[str, RawBook] = {}
        self.previous_metric: Any = _UNBOUND  # OSWorld's `metric` variable left by the rule before

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

    # OSWorld's view of selectors, used by every rule type except sheet_data.

    def locate(self, selector: Any) -> tuple[str, str]:
        """("R" or "E", sheet name) as OSWorld resolves a selector: an index past the end (or an
        ``EI`` index without an expected workbook) gives the name "", which no sheet has; a
        negative index counts from the end; ``RN``/``EN`` names are not checked here."""
        if isinstance(selector, int):
            names = self.result.formulas.sheetnames
            try:
                return "R", names[selector] if names and selector < len(names) else ""
            except IndexError:
                return "R", ""
        if not isinstance(selector, str):
            raise _Crash(f"sheet selector {selector!r}")
        which, how = selector[:1], selector[1:2]
        if selector[:2] not in ("RI", "RN", "EI", "EN"):
            raise _Crash(f"unrecognised sheet selector {selector!r}")
        if how == "N":
            return which, selector[2:]
        try:
            names = self.result.formulas.sheetnames if which == "R" else self.expected.formulas.sheetnames
            return which, names[int(selector[2:])]
        except (ValueError, IndexError):
            return which, ""

    def formulas(self, which: str) -> Workbook:
        return (self.result if which == "R" else self.expected).formulas

    def path(self, which: str) -> str:
        return self.result.path if which == "R" else self.expected.path

    def raw(self, which: str) -> RawBook:
        if which not in self._raw:
            self._raw[which] = RawBook(self.path(which))
        return self._raw[which]

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


# ---------------------------------------------------------------------------------------------
# The other rule types, scored as OSWorld's compare_table scores them. OSWorld reads the
# workbook through openpyxl (formula view) for styles, charts, pivots, filters, dimensions,
# validation, freeze and zoom; through the raw XML (tables_xml.RawBook) for the cell values of
# check_cell, sheet_fuzzy and conditional formats; and through the exported CSV for sheet_print.
# Where OSWorld's code raises for a given input the metric scores 0 (_Crash).


def _osw_sheet(books: _Workbooks, rule: dict[str, Any], key: str) -> Any:
    """The openpyxl sheet (a worksheet or chartsheet) the selector names; None when absent."""
    which, name = books.locate(rule[key])
    try:
        return books.formulas(which)[name]
    except KeyError:
        return None


def _rule_sheet_print(books: _Workbooks, rule: dict[str, Any]) -> bool:
    """The printed sheets as the postconfig exported them: ``<stem>-<sheet>.csv`` next to each xlsx
    (a missing result CSV fails; see tables_xml.sheet_csv_lines)."""
    which0, name0 = books.locate(rule["sheet_idx0"])
    first = sheet_csv_lines(books.path(which0), name0)
    if first is None:
        return False
    which1, name1 = books.locate(rule["sheet_idx1"])
    second = sheet_csv_lines(books.path(which1), name1)
    if rule.get("ignore_case", False):
        if second is None:
            raise _Crash("sheet_print: no CSV for the second sheet")
        first, second = [line.lower() for line in first], [line.lower() for line in second]
    return first == second


def _fuzzy_text(value: Any, check: dict[str, Any]) -> str:
    """str() of the raw cell value ("None" for an empty cell, "3.0" for a number), then OSWorld's
    normalisation in its order: replacements, leading/trailing trim, dropped characters, case."""
    text = str(value)
    for pair in check.get("normalization", []):
        text = text.replace(pair[0], pair[1])
    if "trim_leadings" in check:
        text = text.lstrip(check["trim_leadings"])
    if "trim_trailings" in check:
        text = text.rstrip(check["trim_trailings"])
    if "ignore_chars" in check:
        dropped = set(check["ignore_chars"])
        text = "".join(ch for ch in text if ch not in dropped)
    if check.get("ignore_case", False):
        text = text.lower()
    return text


def _rule_sheet_fuzzy(books: _Workbooks, rule: dict[str, Any]) -> bool:
    """Every cell of every check's ranges compared (no early exit: a cell OSWorld cannot read scores 0)."""
    which0, name0 = books.locate(rule["sheet_idx0"])
    which1, name1 = books.locate(rule["sheet_idx1"])
    first, second = books.raw(which0), books.raw(which1)
    holds = True
    metric: Any = books.previous_metric
    for check in rule["rules"]:
        for rng in MultiCellRange(check["range"]):
            for row, col in rng.cells:
                coordinate = f"{get_column_letter(col)}{row}"
                a = _fuzzy_text(first.value(name0, coordinate), check)
                b = _fuzzy_text(second.value(name1, coordinate), check)
                kind = check["type"]
                if kind == "includes":
                    metric = b in a
                elif kind == "included_by":
                    metric = a in b
                elif kind == "fuzzy_match":
                    metric = fuzz.ratio(a, b) >= check.get("threshold", 85.0)
                elif kind == "exact_match":
                    metric = a == b
                elif metric is _UNBOUND:
                    raise _Crash(f"sheet_fuzzy: unknown check type {kind!r}")
                holds = holds and metric
    return bool(holds)


def _osw_match(value: Any, rule: Any) -> bool:
    """OSWorld's _match_value_to_rule, with its ``spreadsheet_range`` method (each range of ref[0]
    inside one range of the value, each range of the value inside one range of ref[1])."""
    if isinstance(rule, dict) and rule.get("method") == "spreadsheet_range":
        try:
            inner, outer = MultiCellRange(rule["ref"][0]), MultiCellRange(rule["ref"][1])
            return all(r in value for r in inner) and all(r in outer for r in value)
        except Exception as exc:  # noqa: BLE001 - OSWorld raises here
            raise _Crash(str(exc)) from exc
    try:
        return osworld_match_value(value, rule)
    except RuleError as exc:
        raise _Crash(str(exc)) from exc


_FONT_ATTRS = {"font_name": "name", "font_family": "family", "font_bold": "bold", "font_italic": "italic",
               "font_underline": "underline", "font_size": "size"}
STYLE_PROPS = ("number_format", *_FONT_ATTRS, "font_color", "fill_type", "bgcolor", "fgcolor", "hyperlink", "merge")


def _cell_style(prop: str, cell: Any, dxf: Any = None) -> Any:
    """A style property as OSWorld reads it, from the cell or from a conditional format's
    differential style ``dxf``. Font and number-format properties are None for an empty cell;
    ``number_format`` also for a non-number (text, formula, date) cell; ``font_color`` is the raw
    ``rgb`` (a theme colour gives openpyxl's descriptor text); ``bgcolor`` and ``fgcolor`` both read
    a cell's fgColor and a differential style's bgColor; ``merge`` is True for the covered cells of a
    merged range, not its top-left cell. An unknown property raises NotImplementedError."""
    if prop == "number_format":
        if cell.value is None or cell.data_type != "n":
            return None
        return cell.number_format if dxf is None else dxf.numFmt.formatCode
    if prop in _FONT_ATTRS:
        return getattr((dxf or cell).font, _FONT_ATTRS[prop]) if cell.value is not None else None
    if prop == "font_color":
        return (dxf or cell).font.color.rgb if cell.value is not None else None
    if prop == "fill_type":
        try:
            return (dxf or cell).fill.tagname
        except Exception:  # noqa: BLE001
            return None
    if prop in ("bgcolor", "fgcolor"):
        try:
            return dxf.fill.bgColor.rgb if dxf is not None else cell.fill.fgColor.rgb
        except Exception:  # noqa: BLE001
            return None
    if prop == "hyperlink":
        return cell.hyperlink or ("" if cell.value is not None else None)
    if prop == "merge":
        return isinstance(cell, MergedCell)
    raise NotImplementedError(f"unsupported style {prop!r}")


def _rule_check_cell(books: _Workbooks, rule: dict[str, Any]) -> bool:
    """``value`` is the raw XML value (tables_xml.RawBook.value); other properties are
    ``_cell_style``; a property that cannot be read is None; any other failure fails the rule."""
    try:
        ws = _osw_sheet(books, rule, "sheet_idx")
        if ws is None:
            return False
        cell = ws[rule["coordinate"]]
        which, name = books.locate(rule["sheet_idx"])
        metric = True
        for prop, match_rule in rule["props"].items():
            if prop == "value":
                try:
                    value = books.raw(which).value(name, rule["coordinate"])
                except Exception:  # noqa: BLE001
                    value = None
            elif prop == "formula":  # ours (our Calc tasks check formulas): OSWorld's check_cell reads no
                # formula (the property is unsupported there, so it never matches) and no OSWorld task asks for one
                value = cell.value if cell.data_type == "f" else None
            else:
                try:
                    value = _cell_style(prop, cell)
                except Exception:  # noqa: BLE001
                    value = None
            metric = metric and _osw_match(value, match_rule)
        return bool(metric)
    except UserError:
        raise
    except Exception:  # noqa: BLE001 - OSWorld's check_cell scores any failure 0
        return False


# Conditional formats. OSWorld evaluates each rule's formulas with the `formulas` engine, which is
# not a dependency here: tables_cf evaluates the subset such conditions use in practice. A
# ``cellIs`` operand with a cell reference cannot be evaluated without inputs in OSWorld either, so
# such a rule is skipped, as there; an expression outside the subset counts as never true (OSWorld
# would compute it: a documented difference).
_CF_FORMULA_TYPES = {"expression", "containsText", "notContainsText", "endsWith", "beginsWith",
                     "containsErrors", "notContainsErrors"}


_ABSOLUTE = re.compile(r"\$([A-Z]{1,3})\$(\d+)(?::\$([A-Z]{1,3})\$(\d+))?")


def _cf_absolute_arguments(formula: str, raw: RawBook, sheet_name: str) -> None:
    """OSWorld reads the cells of each absolute range (``$A$1:$A$9``) in a conditional format's
    formula, and raises on a single absolute cell (``$A$1``): it takes it for a range ending
    nowhere. Reading can raise too (tables_xml.CellReadError)."""
    for match in _ABSOLUTE.finditer(formula):
        if match[3] is None:
            raise _Crash(f"conditional format formula {formula!r}: OSWorld cannot read a single absolute cell")
        for row, col in CellRange(match[0].replace("$", "")).cells:
            raw.value(sheet_name, f"{get_column_letter(col)}{row}")


def _never(value: Any) -> bool:
    return False


def _cell_is(op: str, value: Any, refs: list[Any]) -> bool:
    """OSWorld's cellIs test: Python comparisons of the raw value with the operands (text against a
    number is a TypeError there, so False)."""
    try:
        if op in ("between", "notBetween"):
            low, high = min(refs), max(refs)
            return value >= low and value <= high if op == "between" else value < low or value > high
        compare = {"lessThanOrEqual": operator.le, "lessThan": operator.lt, "equal": operator.eq,
                   "greaterThanOrEqual": operator.ge, "notEqual": operator.ne, "greaterThan": operator.gt}.get(op)
        return bool(compare(value, refs[0])) if compare is not None else False
    except (TypeError, IndexError, ValueError):
        return False


def _styles(books: _Workbooks, rule: dict[str, Any], key: str) -> dict[str, list[Any]]:
    """OSWorld's per-cell style lists (A1 to the used corner), overwritten for cells a conditional
    format applies to by that format's differential style (the last applying format wins)."""
    which, name = books.locate(rule[key])
    ws = _osw_sheet(books, rule, key)
    if ws is None:
        return {}
    props = rule.get("props", [])
    styles = {c.coordinate: [_cell_style(p, c) for p in props] for col in ws.iter_cols() for c in col}
    raw = books.raw(which)
    active: Any = _UNBOUND
    for fmt in ws.conditional_formatting:
        for cf_rule in fmt.rules:
            formulas = list(cf_rule.formula)
            for formula in formulas:
                _cf_absolute_arguments(formula, raw, name)
            if cf_rule.type in _CF_FORMULA_TYPES:
                if not formulas:
                    raise _Crash("conditional format without a formula")
                active = compile_condition(formulas[0]) or _never
            elif cf_rule.type == "cellIs":
                operands = [constant(f) for f in formulas]
                if not all(ok for ok, _ in operands):
                    continue
                active = functools.partial(_cell_is, cf_rule.operator, refs=[v for _, v in operands])
            nothing = 0
            hits = []
            for rng in fmt.cells:
                for row, col in rng.cells:
                    cell = ws.cell(row=row, column=col)
                    value = raw.value(name, f"{get_column_letter(col)}{row}")
                    if value is None:
                        nothing += 1
                        if nothing > 50:
                            break
                        continue
                    if active is not _UNBOUND and active(value):
                        if not formulas:  # OSWorld logs the rule's first formula here, and has none
                            raise _Crash("an applying conditional format without a formula")
                        hits.append(cell)
            for cell in hits:
                styles[cell.coordinate] = [_cell_style(p, cell, cf_rule.dxf) for p in props]
    return styles


def _rule_style(books: _Workbooks, rule: dict[str, Any]) -> bool:
    return _styles(books, rule, "sheet_idx0") == _styles(books, rule, "sheet_idx1")


def _freeze_key(ws: Any) -> tuple[Any, ...]:
    """Frozen columns and rows (xSplit/ySplit); a pane that is not frozen keeps its top-left cell."""
    pane = ws.sheet_view.pane
    if pane is None:
        return ("none",)
    state = (pane.state or "").lower()
    x = int(pane.xSplit) if pane.xSplit is not None else 0
    y = int(pane.ySplit) if pane.ySplit is not None else 0
    if state in ("frozen", "frozensplit"):
        return ("frozen", x, y)
    return ("other", x, y, pane.topLeftCell)


def _rule_freeze(books: _Workbooks, rule: dict[str, Any]) -> bool:
    first = _osw_sheet(books, rule, "sheet_idx0")
    if first is None:
        return False
    second = _osw_sheet(books, rule, "sheet_idx1")
    if second is None:
        raise _Crash("freeze: second sheet missing")
    return _freeze_key(first) == _freeze_key(second)


def _rule_zoom(books: _Workbooks, rule: dict[str, Any]) -> bool:
    """The zoom percentage (100 when unset) against the rule's own ``method``/``ref``."""
    ws = _osw_sheet(books, rule, "sheet_idx")
    if ws is None:
        return False
    return _osw_match(ws.sheet_view.zoomScale or 100.0, rule)


def _rule_data_validation(books: _Workbooks, rule: dict[str, Any]) -> bool:
    """At least as many validations as ``dv_props`` items, and every validation of the sheet
    matches some item (so an extra validation that matches none fails the rule)."""
    ws = _osw_sheet(books, rule, "sheet_idx")
    if ws is None:
        return False
    validations = ws.data_validations.dataValidation
    holds = len(validations) >= len(rule["dv_props"])
    for dv in validations:
        matched = False
        for wanted in rule["dv_props"]:
            matched = matched or all(_osw_match(getattr(dv, attr), mr) for attr, mr in wanted.items())
            if matched:
                break
        holds = holds and matched
        if not holds:
            break
    return holds


def _dimensions(books: _Workbooks, rule: dict[str, Any], key: str, kind: str) -> dict[Any, Any]:
    """The rows/columns that have an entry in the file, with the asked properties (rows or
    columns without an entry are not compared, and an entry only one side has fails)."""
    ws = _osw_sheet(books, rule, key)
    if ws is None:
        return {}
    props = set(rule.get("props", []))
    holder = getattr(ws, f"{kind}_dimensions")
    return {index: {p: getattr(dim, p) for p in props} for index, dim in holder.items()}


def _dimensions_rule(kind: str) -> Callable[[_Workbooks, dict[str, Any]], bool]:
    def check(books: _Workbooks, rule: dict[str, Any]) -> bool:
        return _dimensions(books, rule, "sheet_idx0", kind) == _dimensions(books, rule, "sheet_idx1", kind)

    return check


def _filters(books: _Workbooks, rule: dict[str, Any], key: str) -> dict[str, Any]:
    ws = _osw_sheet(books, rule, key)
    if ws is None:
        return {}
    auto = ws.auto_filter
    columns = []
    for column in auto.filterColumn:
        entry: dict[str, Any] = {"col_id": column.colId, "hidden_button": column.hiddenButton,
                                 "show_button": column.showButton}
        if column.filters is not None:
            entry["filters_blank"] = column.filters.blank
            entry["filters"] = set(column.filters.filter)
        if column.customFilters is not None:
            entry["custom_filters_op"] = column.customFilters._and
            entry["custom_filters"] = {(f.operator, f.val) for f in column.customFilters.customFilter}
        columns.append(entry)
    found: dict[str, Any] = {"ref": auto.ref, "filter_column": sorted(columns, key=lambda e: e["col_id"])}
    sort = auto.sortState
    if sort is not None:
        found["sort_state"] = {
            "sort": sort.columnSort, "case": sort.caseSensitive, "method": sort.sortMethod, "ref": sort.ref,
            "condition": [{"descending": c.descending, "key": c.sortBy, "ref": c.ref, "custom_list": c.customList,
                           "dxf_id": c.dxfId, "icon": c.iconSet, "iconid": c.iconId} for c in sort.sortCondition]}
    return found


def _rule_filter(books: _Workbooks, rule: dict[str, Any]) -> bool:
    """Same autofilter range, per-column value and custom filters, and sort state (top-10 and
    dynamic filters are not compared, as in OSWorld)."""
    return _filters(books, rule, "sheet_idx0") == _filters(books, rule, "sheet_idx1")


def _first_run_text(title: Any) -> Any:
    try:
        return title.tx.rich.p[0].r[0].t
    except Exception:  # noqa: BLE001
        return None


def _series_ref(data: Any) -> str:
    if hasattr(data, "numRef") and hasattr(data.numRef, "f"):
        return data.numRef.f
    if hasattr(data, "strRef") and hasattr(data.strRef, "f"):
        return data.strRef.f
    return ""


def _charts(books: _Workbooks, rule: dict[str, Any], key: str) -> dict[str, Any]:
    """Charts keyed by their series ("values,categories;…"; charts with the same series collapse
    into one), with the asked ``chart_props``: title and axis titles are the first text run,
    ``type`` the first plot's tag, ``width``/``height`` openpyxl's nominal size (15 x 7.5 for a read
    chart), ``anchor`` [editAs, from.col, to.row, to.col, to.row] (two-cell anchors only), and
    ``direction`` fails on a chart that is not a bar chart."""
    ws = _osw_sheet(books, rule, key)
    if ws is None:
        return {}
    props = set(rule.get("chart_props", []))
    found: dict[str, Any] = {}
    for chart in ws._charts:
        series = ";".join(f"{_series_ref(s.val)},{_series_ref(s.cat)}" for s in chart.series)
        info: dict[str, Any] = {}
        if "title" in props:
            info["title"] = _first_run_text(chart.title)
        if "legend" in props:
            info["legend"] = chart.legend.position if chart.legend is not None else None
        if "anchor" in props:
            a = chart.anchor
            info["anchor"] = [a.editAs, a._from.col, a.to.row, a.to.col, a.to.row]
        if "width" in props:
            info["width"] = chart.width
        if "height" in props:
            info["height"] = chart.height
        if "type" in props:
            info["type"] = chart.tagname
        if "direction" in props:
            info["direction"] = chart.barDir
        for axis in ("x", "y", "z"):
            if f"{axis}title" in props:
                try:
                    info[f"{axis}title"] = getattr(chart, f"{axis}_axis").title.tx.rich.p[0].r[0].t
                except Exception:  # noqa: BLE001
                    info[f"{axis}title"] = None
        found[series] = info
    return found


def _rule_chart(books: _Workbooks, rule: dict[str, Any]) -> bool:
    return _charts(books, rule, "sheet_idx0") == _charts(books, rule, "sheet_idx1")


def _pivots(books: _Workbooks, rule: dict[str, Any], key: str) -> dict[str, Any]:
    """Pivot tables keyed by their source (cache type, range narrowed past the leading and
    trailing fields without items, source sheet), with the asked ``pivot_props``; field numbers
    are shifted by the leading fields without items. ``show_total`` is visualTotals,
    ``selection`` the (hidden, item) pairs per field (sets unless ``ordered``), ``filter`` the page
    field numbers, ``data_fields`` "field;name;subtotal;showDataAs" (name with ``data_fields_name``)."""
    ws = _osw_sheet(books, rule, key)
    if ws is None:
        return {}
    props = set(rule.get("pivot_props", []))
    found: dict[str, Any] = {}
    for pivot in ws._pivots:
        raw = [[(item.h, item.x) for item in field.items if item.x is not None] for field in pivot.pivotFields]
        left = next((i for i, r in enumerate(raw) if r), len(raw))
        trimmed = raw[left:]
        end = len(trimmed)
        while end and not trimmed[end - 1]:
            end -= 1
        selection = trimmed[:end]
        right = len(trimmed) - end
        source = pivot.cache.cacheSource
        start, stop = source.worksheetSource.ref.split(":")
        row0, col0 = coordinate_to_tuple(start)
        row1, col1 = coordinate_to_tuple(stop)
        key_text = f"{source.type};{(row0, col0 + left)}:{(row1, col1 - right)};{source.worksheetSource.sheet}"
        info: dict[str, Any] = {}
        if "name" in props:
            info["name"] = pivot.name
        if "show_total" in props:
            info["show_total"] = pivot.visualTotals
        if "show_empty_row" in props:
            info["show_empty_row"] = pivot.showEmptyRow
        if "show_empty_col" in props:
            info["show_empty_col"] = pivot.showEmptyCol
        if "show_headers" in props:
            info["show_headers"] = pivot.showHeaders
        if "location" in props:
            info["location"] = pivot.location
        if "filter" in props or "selection" in props:
            info["selection"] = selection if "ordered" in props else [set(r) for r in selection]
        if "filter" in props:
            info["filter_fields"] = {f.fld for f in pivot.pageFields}
        if "col_fields" in props:
            info["col_fields"] = [f.x - left for f in pivot.colFields]
        if "row_fields" in props:
            info["row_fields"] = [f.x - left for f in pivot.rowFields]
        if "data_fields" in props:
            info["data_fields"] = [
                "{:d};{:};{:};{:}".format(f.fld - left, f.name if "data_fields_name" in props else "",
                                          f.subtotal, f.showDataAs) for f in pivot.dataFields]
        found[key_text] = info
    return found


def _rule_pivot_table(books: _Workbooks, rule: dict[str, Any]) -> bool:
    return _pivots(books, rule, "sheet_idx0") == _pivots(books, rule, "sheet_idx1")


def _rule_sparkline(books: _Workbooks, rule: dict[str, Any]) -> bool:
    """Same ``{cells: source range}`` sparklines, read from the sheet XML (openpyxl drops them)."""
    which0, name0 = books.locate(rule["sheet_idx0"])
    which1, name1 = books.locate(rule["sheet_idx1"])
    try:
        first = books.raw(which0).sparklines(name0)
        second = books.raw(which1).sparklines(name1)
    except Exception as exc:  # noqa: BLE001 - OSWorld's reader raises for a sheet it cannot find
        raise _Crash(str(exc)) from exc
    return first == second


# ---------------------------------------------------------------------------------------------
# Rule table and validation


def _validate_sheet_data(rule: dict[str, Any], where: str) -> None:
    precision = rule.get("precision", 4)
    if not isinstance(precision, int) or isinstance(precision, bool) or precision < 0:
        raise _bad(f"{where}: 'precision' must be a non-negative integer, got {precision!r}")


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
    "sheet_fuzzy": _RuleType((*_PAIR, "rules"), _rule_sheet_fuzzy),
    "check_cell": _RuleType(("sheet_idx", "coordinate", "props"), _rule_check_cell),
    "style": _RuleType(_PAIR, _rule_style),
    "freeze": _RuleType(_PAIR, _rule_freeze),
    "zoom": _RuleType(("sheet_idx", "method", "ref"), _rule_zoom),
    "data_validation": _RuleType(("sheet_idx", "dv_props"), _rule_data_validation),
    "row_props": _RuleType(_PAIR, _dimensions_rule("row")),
    "col_props": _RuleType(_PAIR, _dimensions_rule("column")),
    "filter": _RuleType(_PAIR, _rule_filter),
    "chart": _RuleType(_PAIR, _rule_chart),
    "pivot_table": _RuleType(_PAIR, _rule_pivot_table),
    "sparkline": _RuleType(_PAIR, _rule_sparkline),
}


def _check_selector(value: Any, where: str) -> None:
    """A sheet selector: an int (result sheet by index) or RI<n>/EI<n>/RN<name>/EN<name>."""
    if isinstance(value, int) or (isinstance(value, str) and value[:2] in ("RI", "RN", "EI", "EN")):
        return
    raise _bad(f"{where}: a sheet selector is an index or RI<n>/EI<n>/RN<name>/EN<name>, got {value!r}")


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
                _check_selector(rule[key], f"{where}.{key}")
        if rule_type.validate is not None:
            rule_type.validate(rule, f"{where} ({rule['type']})")
    return rules


@metric("compare_table")
def compare_table(result_path: str | None, expected_path: str | None = None, rules: Any = None, **unknown: Any) -> float:
    """1 when the result xlsx passes every rule (checked in order, stopping at the first failure), else 0.

    ``result_path`` / ``expected_path``: local xlsx paths (expected is optional: rules that only
    look at the result need none; when given it is opened up front, as OSWorld does). ``rules``:
    list of ``{"type": …, …}``. Sheet selectors (``sheet_idx``, ``sheet_idx0``, ``sheet_idx1``): an
    int (result sheet by index), ``"RI0"`` / ``"EI0"`` (result/expected by index), ``"RNSheet1"`` /
    ``"ENSheet1"`` (by name); an index past the end names no sheet, a negative one counts from the
    end. A rule over a sheet that does not exist fails, except the comparisons of sheet parts
    (style, chart, pivot_table, filter, row_props, col_props), where a missing sheet has none of
    them (two missing sheets compare equal), as in OSWorld. Types:

    - ``sheet_name``: same sheet names in the same order as expected.
    - ``sheet_data`` (sheet_idx0, sheet_idx1, precision=4): the sheets as OSWorld's
      ``pandas.read_excel`` frames (first row = column names, "NA"/"N/A"/"None"… and empty as
      missing, numeric text as numbers, one dtype per column) equal after rounding floats to
      ``precision`` decimals; ``ignore_case`` is not an option of this rule (ignored, as in OSWorld).
    - ``sheet_print`` (sheet_idx0, sheet_idx1, ignore_case=false): the ``<stem>-<sheet>.csv`` files
      next to both xlsx files (the postconfig exports them) have the same stripped lines, trailing
      blank lines ignored; no result CSV fails.
    - ``sheet_fuzzy`` (sheet_idx0, sheet_idx1, rules=[{range: [ranges], type: includes |
      included_by | fuzzy_match | exact_match, threshold=85, ignore_case, ignore_chars,
      trim_leadings, trim_trailings, normalization: [[old, new]…]}]): cell by cell, comparing
      ``str()`` of the raw values ("None" for an empty cell, "3.0" for the number 3).
    - ``check_cell`` (sheet_idx, coordinate, props {prop: {method, ref}}): ``value`` is the raw
      value (numbers as floats, booleans and uncached formulas as None); the other properties are
      ``STYLE_PROPS`` as ``_cell_style`` reads them; an unknown property reads None.
    - ``style`` (sheet_idx0, sheet_idx1, props=[...]): every cell's ``STYLE_PROPS`` equal, after
      conditional formats are applied to the cells whose condition holds.
    - ``freeze`` (sheet_idx0, sheet_idx1): same frozen rows/columns.
    - ``zoom`` (sheet_idx, method, ref): zoom percentage (100 when unset) matches.
    - ``data_validation`` (sheet_idx, dv_props [{attribute: {method, ref}}]): at least as many
      validations as items and every validation matches some item (``ranges``/``sqref`` support
      ``spreadsheet_range``: [ranges it must cover, ranges it must stay within]).
    - ``row_props`` / ``col_props`` (sheet_idx0, sheet_idx1, props=[...]): the row/column entries the
      files have, with equal openpyxl attributes (``hidden``, ``height``, ``width``…).
    - ``filter`` (sheet_idx0, sheet_idx1): same autofilter range, column filters and sort state.
    - ``chart`` (sheet_idx0, sheet_idx1, chart_props=[...]): same charts by series references, with
      equal properties (see ``_charts``).
    - ``pivot_table`` (sheet_idx0, sheet_idx1, pivot_props=[...]): same pivot tables by source,
      with equal properties (see ``_pivots``).
    - ``sparkline`` (sheet_idx0, sheet_idx1): same sparklines (cells and source ranges).
    """
    if unknown:
        raise _bad(f"unknown options {sorted(unknown)}; it takes 'rules'")
    checked = _validate_rules(rules)
    formulas = _load(result_path, data_only=False)
    if formulas is None:
        return 0.0
    books = _Workbooks(_Book(result_path, formulas), expected_path)
    if expected_path is not None:
        books.expected  # noqa: B018 - OSWorld opens the expected workbook up front: unreadable is an error
    try:
        for rule in checked:
            if not RULE_TYPES[rule["type"]].check(books, rule):
                return 0.0
            books.previous_metric = True
    except UserError:
        raise
    except Exception:  # noqa: BLE001 - where OSWorld's code raises on these files it scores 0 (e.g. a
        return 0.0  # font without a colour under font_color, "direction" of a line chart, a pivot without cache)
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
