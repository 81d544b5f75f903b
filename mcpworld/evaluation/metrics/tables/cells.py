"""The rules over cell values: ``sheet_print`` (the CSV the postconfig exported), ``sheet_fuzzy`` and
``check_cell`` (the raw cell XML, ``raw.RawBook``), and ``_osw_match``, OSWorld's matching of a
read value against a ``{method, ref}`` rule (also used by the ``parts`` rules).
"""

from __future__ import annotations

from typing import Any

from openpyxl.utils.cell import get_column_letter
from openpyxl.worksheet.cell_range import MultiCellRange
from rapidfuzz import fuzz

from mcpworld.core.errors import UserError
from mcpworld.evaluation.matchers import RuleError, osworld_match_value
from mcpworld.evaluation.metrics.tables.books import _UNBOUND, _Crash, _osw_sheet, _Workbooks
from mcpworld.evaluation.metrics.tables.raw import sheet_csv_lines
from mcpworld.evaluation.metrics.tables.styles import _cell_style


def _rule_sheet_print(books: _Workbooks, rule: dict[str, Any]) -> bool:
    """The printed sheets as the postconfig exported them: ``<stem>-<sheet>.csv`` next to each xlsx
    (a missing result CSV fails; see raw.sheet_csv_lines)."""
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
        except Exception as exc:
            raise _Crash(str(exc)) from exc
    try:
        return osworld_match_value(value, rule)
    except RuleError as exc:
        raise _Crash(str(exc)) from exc


def _rule_check_cell(books: _Workbooks, rule: dict[str, Any]) -> bool:
    """``value`` is the raw XML value (raw.RawBook.value); other properties are
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
                except Exception:
                    value = None
            elif prop == "formula":  # ours (our Calc tasks check formulas): OSWorld's check_cell reads no
                # formula (the property is unsupported there, so it never matches) and no OSWorld task asks for one
                value = cell.value if cell.data_type == "f" else None
            else:
                try:
                    value = _cell_style(prop, cell)
                except Exception:
                    value = None
            metric = metric and _osw_match(value, match_rule)
        return bool(metric)
    except UserError:
        raise
    except Exception:
        return False
