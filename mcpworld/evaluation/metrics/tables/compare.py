"""``compare_table``: the rule types (each checked by ``frames``, ``cells``, ``styles`` or
``parts``), the validation of a rule list, and the metric that checks the rules in order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.tables.books import _bad, _Book, _load, _Workbooks
from mcpworld.evaluation.metrics.tables.cells import _rule_check_cell, _rule_sheet_fuzzy, _rule_sheet_print
from mcpworld.evaluation.metrics.tables.frames import _rule_sheet_data
from mcpworld.evaluation.metrics.tables.parts import (
    _dimensions_rule,
    _rule_chart,
    _rule_data_validation,
    _rule_filter,
    _rule_freeze,
    _rule_pivot_table,
    _rule_sparkline,
    _rule_zoom,
)
from mcpworld.evaluation.metrics.tables.styles import _rule_style
from mcpworld.evaluation.registry import metric


def _rule_sheet_name(books: _Workbooks, rule: dict[str, Any]) -> bool:
    return books.result.formulas.sheetnames == books.expected.formulas.sheetnames


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
        type_name = rule.get("type")
        rule_type = RULE_TYPES.get(type_name) if isinstance(type_name, str) else None
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
      ``styles.STYLE_PROPS`` as ``styles._cell_style`` reads them; an unknown property reads None.
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
      equal properties (see ``parts._charts``).
    - ``pivot_table`` (sheet_idx0, sheet_idx1, pivot_props=[...]): same pivot tables by source,
      with equal properties (see ``parts._pivots``).
    - ``sparkline`` (sheet_idx0, sheet_idx1): same sparklines (cells and source ranges).
    """
    if unknown:
        raise _bad(f"unknown options {sorted(unknown)}; it takes 'rules'")
    checked = _validate_rules(rules)
    formulas = _load(result_path, data_only=False)
    if formulas is None or result_path is None:  # (_load reads no path as no workbook)
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
    except Exception:
        return 0.0  # font without a colour under font_color, "direction" of a line chart, a pivot without cache)
    return 1.0
