"""The rules over a sheet's parts other than its cells, read through openpyxl's formula view (the
sparklines through the raw XML): freeze panes, zoom, data validation, row and column properties,
the autofilter, charts, pivot tables and sparklines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openpyxl.utils.cell import coordinate_to_tuple

from mcpworld.evaluation.metrics.tables.books import _Crash, _osw_sheet, _Workbooks
from mcpworld.evaluation.metrics.tables.cells import _osw_match


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
        entry: dict[str, Any] = {"col_id": column.colId, "hidden_button": column.hiddenButton, "show_button": column.showButton}
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
            "sort": sort.columnSort,
            "case": sort.caseSensitive,
            "method": sort.sortMethod,
            "ref": sort.ref,
            "condition": [
                {
                    "descending": c.descending,
                    "key": c.sortBy,
                    "ref": c.ref,
                    "custom_list": c.customList,
                    "dxf_id": c.dxfId,
                    "icon": c.iconSet,
                    "iconid": c.iconId,
                }
                for c in sort.sortCondition
            ],
        }
    return found


def _rule_filter(books: _Workbooks, rule: dict[str, Any]) -> bool:
    """Same autofilter range, per-column value and custom filters, and sort state (top-10 and
    dynamic filters are not compared, as in OSWorld)."""
    return _filters(books, rule, "sheet_idx0") == _filters(books, rule, "sheet_idx1")


def _first_run_text(title: Any) -> Any:
    try:
        return title.tx.rich.p[0].r[0].t
    except Exception:
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
                except Exception:
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
                "{:d};{:};{:};{:}".format(f.fld - left, f.name if "data_fields_name" in props else "", f.subtotal, f.showDataAs)
                for f in pivot.dataFields
            ]
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
    except Exception as exc:
        raise _Crash(str(exc)) from exc
    return first == second
