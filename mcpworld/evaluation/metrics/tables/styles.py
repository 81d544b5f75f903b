"""Cell styles as OSWorld reads them (``_cell_style``, also read by ``check_cell``), and the ``style``
rule: every cell's style properties, after the conditional formats whose condition holds are
applied (their formulas evaluated by ``conditions``).
"""

from __future__ import annotations

import functools
import operator
import re
from typing import Any

from openpyxl.cell.cell import MergedCell
from openpyxl.utils.cell import get_column_letter
from openpyxl.worksheet.cell_range import CellRange

from mcpworld.evaluation.metrics.tables.books import _UNBOUND, _Crash, _osw_sheet, _Workbooks
from mcpworld.evaluation.metrics.tables.conditions import compile_condition, constant
from mcpworld.evaluation.metrics.tables.raw import RawBook

_FONT_ATTRS = {
    "font_name": "name",
    "font_family": "family",
    "font_bold": "bold",
    "font_italic": "italic",
    "font_underline": "underline",
    "font_size": "size",
}
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
        except Exception:
            return None
    if prop in ("bgcolor", "fgcolor"):
        try:
            return dxf.fill.bgColor.rgb if dxf is not None else cell.fill.fgColor.rgb
        except Exception:
            return None
    if prop == "hyperlink":
        return cell.hyperlink or ("" if cell.value is not None else None)
    if prop == "merge":
        return isinstance(cell, MergedCell)
    raise NotImplementedError(f"unsupported style {prop!r}")


# Conditional formats. OSWorld evaluates each rule's formulas with the `formulas` engine, which is
# not a dependency here: ``conditions`` evaluates the subset such conditions use in practice. A
# ``cellIs`` operand with a cell reference cannot be evaluated without inputs in OSWorld either, so
# such a rule is skipped, as there; an expression outside the subset counts as never true (OSWorld
# would compute it: a documented difference).
_CF_FORMULA_TYPES = {
    "expression",
    "containsText",
    "notContainsText",
    "endsWith",
    "beginsWith",
    "containsErrors",
    "notContainsErrors",
}


_ABSOLUTE = re.compile(r"\$([A-Z]{1,3})\$(\d+)(?::\$([A-Z]{1,3})\$(\d+))?")


def _cf_absolute_arguments(formula: str, raw: RawBook, sheet_name: str) -> None:
    """OSWorld reads the cells of each absolute range (``$A$1:$A$9``) in a conditional format's
    formula, and raises on a single absolute cell (``$A$1``): it takes it for a range ending
    nowhere. Reading can raise too (raw.CellReadError)."""
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
        compare = {
            "lessThanOrEqual": operator.le,
            "lessThan": operator.lt,
            "equal": operator.eq,
            "greaterThanOrEqual": operator.ge,
            "notEqual": operator.ne,
            "greaterThan": operator.gt,
        }.get(op)
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
