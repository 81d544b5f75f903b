"""``sheet_data``: the sheets as OSWorld's ``pandas.read_excel(header=0)`` frames, built from
openpyxl's value view without pandas, and compared as ``DataFrame.round(precision).equals`` does.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from openpyxl.worksheet.worksheet import Worksheet

from mcpworld.evaluation.metrics.tables.books import _Workbooks

# Text that pandas.read_excel reads as a missing value (its default na_values).
_NA_TEXT = frozenset(
    {
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
    }
)
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


def _as_numbers(values: list[Any]) -> list[int | float] | None:
    """The values as numbers (numeric text read as one), or None when one of them is none."""
    numbers: list[int | float] = []
    for v in values:
        if isinstance(v, (bool, int, float)):
            numbers.append(v)
        elif isinstance(v, str) and (n := _number_text(v)) is not None:
            numbers.append(n)
        else:
            return None
    return numbers


def _column(values: list[Any], precision: int) -> tuple[str, list[Any]]:
    """A column's pandas dtype kind and values (missing ones as _NA), floats rounded as DataFrame.round."""
    values = [_NA if v is _NA or (isinstance(v, str) and v in _NA_TEXT) else v for v in values]
    present = [v for v in values if v is not _NA]
    missing = len(present) < len(values)
    if not values:
        return "object", []
    if not present:
        return "float", [_NA] * len(values)
    numbers = _as_numbers(present)
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
    scale = 10.0**precision
    return round(value * scale) / scale if abs(value * scale) < 2**52 else value


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
    except Exception:
        return False


def _same_frame(first: tuple[list[Any], list[Any]], second: tuple[list[Any], list[Any]]) -> bool:
    """DataFrame.equals: same labels, and column by column the same dtype and equal values (missing equals missing)."""
    (labels1, columns1), (labels2, columns2) = first, second
    if len(labels1) != len(labels2) or not all(_same_value(a, b) for a, b in zip(labels1, labels2, strict=True)):
        return False
    for (kind1, values1), (kind2, values2) in zip(columns1, columns2, strict=False):
        if kind1 != kind2 or len(values1) != len(values2):
            return False
        if not all(_same_value(a, b) for a, b in zip(values1, values2, strict=True)):
            return False
    return True


def _rule_sheet_data(books: _Workbooks, rule: dict[str, Any]) -> bool:
    """OSWorld reads both sheets with pandas.read_excel and compares ``DataFrame.round(precision).equals``;
    the same frames are built here from the cached values (``ignore_case`` is not an option of this
    rule in OSWorld and is ignored)."""
    pair = books.pair(rule)
    if pair is None:
        return False
    precision = rule.get("precision", 4)
    return _same_frame(*(_frame(s.vs, precision) for s in pair))
