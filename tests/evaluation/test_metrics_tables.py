"""compare_table / compare_csv on real xlsx and csv files written into tmp_path."""

from __future__ import annotations

import zipfile
from pathlib import Path

import openpyxl
import pytest
from openpyxl.chart import BarChart, LineChart, Reference
from openpyxl.formatting.rule import CellIsRule, FormulaRule
from openpyxl.pivot.cache import (
    CacheDefinition,
    CacheField,
    CacheSource,
    SharedItems,
    WorksheetSource,
)
from openpyxl.pivot.fields import Text
from openpyxl.pivot.record import RecordList
from openpyxl.pivot.table import (
    DataField,
    FieldItem,
    Location,
    PivotField,
    RowColField,
    TableDefinition,
)
from openpyxl.styles import Font, PatternFill
from openpyxl.worksheet.datavalidation import DataValidation

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.tables.compare import compare_table
from mcpworld.evaluation.metrics.tables.csv_files import compare_csv
from mcpworld.evaluation.registry import METRICS

RED = PatternFill(fill_type="solid", fgColor="FFFF0000")
ROWS = [("Name", "Score"), ("Ann", 1.23456), ("Bob", 7)]


def xlsx(tmp_path: Path, name: str, build=None, rows=ROWS, title: str = "Sheet1") -> str:
    """A workbook with ``rows`` on its first sheet, then ``build(wb, ws)`` for the rest."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = title
    for row in rows:
        ws.append(row)
    if build is not None:
        build(wb, ws)
    path = tmp_path / name
    wb.save(path)
    return str(path)


def cache_values(path: str, values: dict[str, str]) -> None:
    """Write cached formula results into sheet1 the way LibreOffice/Excel save them."""
    with zipfile.ZipFile(path) as archive:
        parts = {n: archive.read(n) for n in archive.namelist()}
    xml = parts["xl/worksheets/sheet1.xml"].decode()
    for coordinate, value in values.items():
        start = xml.index(f'<c r="{coordinate}"')
        end = xml.index("</c>", start)
        xml = xml[:start] + xml[start:end].replace("<v></v>", f"<v>{value}</v>") + xml[end:]
    parts["xl/worksheets/sheet1.xml"] = xml.encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in parts.items():
            archive.writestr(name, data)


def rules(*items):
    return list(items)


def test_registered():
    assert METRICS["compare_table"] is compare_table
    assert METRICS["compare_csv"] is compare_csv


# --- missing results and bad rules -------------------------------------------------------------


def test_missing_or_unreadable_result_scores_zero(tmp_path):
    gold = xlsx(tmp_path, "gold.xlsx")
    garbage = tmp_path / "garbage.xlsx"
    garbage.write_text("not a zip")
    r = rules({"type": "sheet_name"})
    assert compare_table(None, gold, rules=r) == 0.0
    assert compare_table(str(tmp_path / "nope.xlsx"), gold, rules=r) == 0.0
    assert compare_table(str(garbage), gold, rules=r) == 0.0


@pytest.mark.parametrize(
    "bad, message",
    [
        (None, "'rules'"),
        ([], "'rules'"),
        ([{"type": "nope"}], "unknown rule type"),
        ([{"type": "sheet_data", "sheet_idx0": "RI0"}], "sheet_idx1"),
        ([{"type": "sheet_data", "sheet_idx0": "X0", "sheet_idx1": "EI0"}], "sheet selector"),
        ([{"type": "zoom", "sheet_idx": 0, "method": "lt"}], "ref"),
        ([{"type": "check_cell", "sheet_idx": 0, "coordinate": "A1"}], "props"),
        ([{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0", "precision": -1}], "precision"),
    ],
)
def test_bad_rules_raise_even_without_result(bad, message):
    with pytest.raises(UserError, match=message):
        compare_table(None, None, rules=bad)


def test_expected_workbook_needed_or_unreadable(tmp_path):
    result = xlsx(tmp_path, "r.xlsx")
    with pytest.raises(UserError, match=r"no expected|there is none"):
        compare_table(result, None, rules=rules({"type": "sheet_name"}))
    with pytest.raises(UserError, match="missing or not a readable"):
        compare_table(result, str(tmp_path / "gone.xlsx"), rules=rules({"type": "sheet_name"}))
    with pytest.raises(UserError, match="no sheet"):
        compare_table(result, result, rules=rules({"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "ENOther"}))
    with pytest.raises(UserError, match="unknown options"):
        compare_table(result, result, rules=rules({"type": "sheet_name"}), rule=[])


# --- sheet names and values -------------------------------------------------------------------


def test_sheet_name(tmp_path):
    gold = xlsx(tmp_path, "g.xlsx", lambda wb, ws: wb.create_sheet("Totals"))
    same = xlsx(tmp_path, "s.xlsx", lambda wb, ws: wb.create_sheet("Totals"))
    other = xlsx(tmp_path, "o.xlsx", lambda wb, ws: wb.create_sheet("Sums"))
    assert compare_table(same, gold, rules=rules({"type": "sheet_name"})) == 1.0
    assert compare_table(other, gold, rules=rules({"type": "sheet_name"})) == 0.0


def test_sheet_data_precision_and_trailing_cells(tmp_path):
    gold = xlsx(tmp_path, "g.xlsx", rows=[("Name", "Score"), ("Ann", 1.23456), ("Bob", 7)])
    close = xlsx(tmp_path, "c.xlsx", rows=[("Name", "Score"), ("Ann", 1.23458), ("Bob", 7.0), (None, None)])
    rule = {"type": "sheet_data", "sheet_idx0": "RI0", "sheet_idx1": "EI0"}
    assert compare_table(close, gold, rules=[rule]) == 1.0
    assert compare_table(close, gold, rules=[{**rule, "precision": 5}]) == 0.0
    shifted = xlsx(tmp_path, "s.xlsx", rows=[(None, None), *ROWS])
    assert compare_table(shifted, gold, rules=[rule]) == 0.0
    # a sheet the result lacks fails the rule
    assert compare_table(gold, gold, rules=[{**rule, "sheet_idx0": "RNMissing"}]) == 0.0
    assert compare_table(gold, gold, rules=[{**rule, "sheet_idx0": 3}]) == 0.0


def test_sheet_data_reads_as_pandas_read_excel(tmp_path):
    """OSWorld compares pandas.read_excel frames: ignore_case is no option of sheet_data, text that
    pandas reads as a number or as missing counts as such, and a column's dtype must match."""
    gold = xlsx(tmp_path, "g.xlsx", rows=[("Name", "Qty"), ("Ann", 1), (None, 2)])
    upper = xlsx(tmp_path, "u.xlsx", rows=[("NAME", "Qty"), ("ANN", 1), (None, 2)])
    rule = {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0", "ignore_case": True}
    assert compare_table(upper, gold, rules=[rule]) == 0.0
    as_text = xlsx(tmp_path, "t.xlsx", rows=[("Name", "Qty"), ("Ann", "1"), ("NA", " 2 ")])
    assert compare_table(as_text, gold, rules=[rule]) == 1.0  # "1" and " 2 " read as numbers, "NA" as missing
    as_int_text = xlsx(tmp_path, "i.xlsx", rows=[("Name", "Qty"), ("Ann", "1"), ("N/A", "2")])
    assert compare_table(as_int_text, gold, rules=[rule]) == 1.0
    float_qty = xlsx(tmp_path, "f.xlsx", rows=[("Name", "Qty"), ("Ann", 1), (None, 2.5)])
    assert compare_table(float_qty, gold, rules=[{**rule, "precision": 0}]) == 0.0  # float64 vs int64
    repeated = xlsx(tmp_path, "r.xlsx", rows=[("Name", "Name"), ("Ann", 1), (None, 2)])
    named = xlsx(tmp_path, "n.xlsx", rows=[("Name", "Name.1"), ("Ann", 1), (None, 2)])
    assert compare_table(repeated, named, rules=[rule]) == 1.0


def test_sheet_data_uses_cached_formula_values(tmp_path):
    gold = xlsx(tmp_path, "g.xlsx", rows=[("Total", 2)])
    uncached = xlsx(tmp_path, "u.xlsx", rows=[("Total", "=1+1")])
    cached = xlsx(tmp_path, "c.xlsx", rows=[("Total", "=1+1")])
    cache_values(cached, {"B1": "2"})
    rule = {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    assert compare_table(cached, gold, rules=[rule]) == 1.0
    # never calculated (openpyxl writes no cached value): the value view reads None
    assert compare_table(uncached, gold, rules=[rule]) == 0.0


def test_sheet_fuzzy(tmp_path):
    gold = xlsx(tmp_path, "g.xlsx", rows=[("Address",), ("12 Main Road",), ("5 Oak Street",)])
    close = xlsx(tmp_path, "c.xlsx", rows=[("address",), ("12 Main Rd",), ("5 oak st.",)])
    base = {"type": "sheet_fuzzy", "sheet_idx0": "RI0", "sheet_idx1": "EI0"}
    normalized = {
        "range": ["A2:A3"],
        "type": "exact_match",
        "ignore_case": True,
        "ignore_chars": ".",
        "normalization": [["Road", "Rd"], ["Street", "St"], ["road", "rd"], ["street", "st"]],
    }
    assert compare_table(close, gold, rules=[{**base, "rules": [normalized]}]) == 1.0
    assert compare_table(close, gold, rules=[{**base, "rules": [{"range": "A2:A3", "type": "exact_match"}]}]) == 0.0
    fuzzy = {"range": "A1:A3", "type": "fuzzy_match", "threshold": 70, "ignore_case": True}
    assert compare_table(close, gold, rules=[{**base, "rules": [fuzzy]}]) == 1.0
    assert compare_table(close, gold, rules=[{**base, "rules": [{**fuzzy, "threshold": 99}]}]) == 0.0
    includes = {"range": "A2", "type": "included_by", "ignore_case": True}
    assert compare_table(xlsx(tmp_path, "i.xlsx", rows=[("",), ("main",)]), gold, rules=[{**base, "rules": [includes]}]) == 1.0


# --- single cells and styles ------------------------------------------------------------------


def _content(wb, ws):
    ws["C1"] = "=SUM(B2:B3)"
    ws["A5"] = "link"


def _styled(wb, ws):
    _content(wb, ws)
    ws["A1"].font = Font(bold=True, color="FF0000FF")
    ws["B2"].fill = RED
    ws["B3"].number_format = "0.00%"
    ws["A5"].hyperlink = "https://example.org/"
    ws.merge_cells("D1:E1")


# --- sheet view and structure -------------------------------------------------------------------


def test_freeze_and_zoom(tmp_path):
    def frozen(wb, ws):
        ws.freeze_panes = "B2"
        ws.sheet_view.zoomScale = 150

    gold = xlsx(tmp_path, "g.xlsx", frozen)
    same = xlsx(tmp_path, "s.xlsx", frozen)
    scrolled = xlsx(tmp_path, "sc.xlsx", lambda wb, ws: (frozen(wb, ws), setattr(ws.sheet_view.pane, "topLeftCell", "B40")))
    plain = xlsx(tmp_path, "p.xlsx")
    rule = {"type": "freeze", "sheet_idx0": "RI0", "sheet_idx1": "EI0"}
    assert compare_table(same, gold, rules=[rule]) == 1.0
    assert compare_table(scrolled, gold, rules=[rule]) == 1.0  # the scroll position is not the freeze
    assert compare_table(plain, gold, rules=[rule]) == 0.0
    zoom = {"type": "zoom", "sheet_idx": 0, "method": "ge", "ref": 140}
    assert compare_table(same, None, rules=[zoom]) == 1.0
    assert compare_table(plain, None, rules=[zoom]) == 0.0  # unset zoom is 100
    assert compare_table(plain, None, rules=[{**zoom, "method": "eq", "ref": 100}]) == 1.0


def test_row_and_col_props(tmp_path):
    def shaped(wb, ws):
        ws.row_dimensions[3].hidden = True
        ws.column_dimensions["B"].width = 30

    gold = xlsx(tmp_path, "g.xlsx", shaped)
    same = xlsx(tmp_path, "s.xlsx", shaped)
    plain = xlsx(tmp_path, "p.xlsx")
    rows = {"type": "row_props", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["hidden"]}
    cols = {"type": "col_props", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["width", "hidden"]}
    assert compare_table(same, gold, rules=[rows, cols]) == 1.0
    assert compare_table(plain, gold, rules=[rows]) == 0.0
    assert compare_table(plain, gold, rules=[cols]) == 0.0


def test_filter(tmp_path):
    def filtered(values):
        def build(wb, ws):
            ws.auto_filter.ref = "A1:B3"
            ws.auto_filter.add_filter_column(0, values)

        return build

    gold = xlsx(tmp_path, "g.xlsx", filtered(["Ann"]))
    rule = {"type": "filter", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    assert compare_table(xlsx(tmp_path, "s.xlsx", filtered(["Ann"])), gold, rules=[rule]) == 1.0
    assert compare_table(xlsx(tmp_path, "o.xlsx", filtered(["Bob"])), gold, rules=[rule]) == 0.0
    assert compare_table(xlsx(tmp_path, "p.xlsx"), gold, rules=[rule]) == 0.0


# --- charts and pivot tables --------------------------------------------------------------------


def _chart(kind=BarChart, min_row=2, title="Scores"):
    def build(wb, ws):
        chart = kind()
        chart.title = title
        chart.add_data(Reference(ws, min_col=2, min_row=min_row, max_row=3))
        chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=3))
        ws.add_chart(chart, "E2")

    return build


def _pivot(row_field=0, hidden_west=False, name="PT1"):
    def build(wb, ws):
        ws.title = "Data"
        target = wb.create_sheet("Pivot")
        source = CacheSource(type="worksheet", worksheetSource=WorksheetSource(ref="A1:C4", sheet="Data"))
        cache = CacheDefinition(
            cacheSource=source,
            cacheFields=[
                CacheField(name="Region", sharedItems=SharedItems(_fields=[Text(v="East"), Text(v="West")])),
                CacheField(name="Rep", sharedItems=SharedItems(_fields=[Text(v="Ann"), Text(v="Bob")])),
                CacheField(name="Sales", sharedItems=SharedItems()),
            ],
        )
        cache.records = RecordList()
        items = [FieldItem(x=0), FieldItem(x=1, h=hidden_west or None), FieldItem(t="default")]
        fields = [PivotField(), PivotField(), PivotField(dataField=True)]
        fields[row_field] = PivotField(axis="axisRow", items=items)
        pivot = TableDefinition(
            name=name,
            cacheId=1,
            dataCaption="Values",
            location=Location(ref="A3:B6", firstHeaderRow=1, firstDataRow=1, firstDataCol=1),
            pivotFields=fields,
            rowFields=[RowColField(x=row_field)],
            dataFields=[DataField(name="Sum - Sales", fld=2, subtotal="sum")],
        )
        pivot.cache = cache
        target.add_pivot(pivot)

    return build


PIVOT_ROWS = [("Region", "Rep", "Sales"), ("East", "Ann", 1), ("West", "Bob", 2), ("East", "Bob", 3)]


def test_pivot_table(tmp_path):
    gold = xlsx(tmp_path, "g.xlsx", _pivot(), rows=PIVOT_ROWS)
    rule = {
        "type": "pivot_table",
        "sheet_idx0": "RNPivot",
        "sheet_idx1": "ENPivot",
        "pivot_props": ["row_fields", "data_fields", "selection", "location"],
    }
    assert compare_table(xlsx(tmp_path, "s.xlsx", _pivot(name="Other"), rows=PIVOT_ROWS), gold, rules=[rule]) == 1.0
    assert (
        compare_table(
            xlsx(tmp_path, "n.xlsx", _pivot(name="Other"), rows=PIVOT_ROWS), gold, rules=[{**rule, "pivot_props": ["name"]}]
        )
        == 0.0
    )
    assert compare_table(xlsx(tmp_path, "r.xlsx", _pivot(row_field=1), rows=PIVOT_ROWS), gold, rules=[rule]) == 0.0
    assert compare_table(xlsx(tmp_path, "h.xlsx", _pivot(hidden_west=True), rows=PIVOT_ROWS), gold, rules=[rule]) == 0.0
    no_pivot = xlsx(tmp_path, "p.xlsx", lambda wb, ws: wb.create_sheet("Pivot"), rows=PIVOT_ROWS)
    assert compare_table(no_pivot, gold, rules=[rule]) == 0.0


# --- rule types scored as OSWorld scores them ------------------------------------------------------


def _csv(xlsx_path: str, sheet: str, text: str) -> None:
    Path(xlsx_path).with_name(f"{Path(xlsx_path).stem}-{sheet}.csv").write_text(text)


def test_sheet_print_reads_the_exported_csv(tmp_path):
    gold = xlsx(tmp_path, "g.xlsx")
    result = xlsx(tmp_path, "r.xlsx")
    rule = {"type": "sheet_print", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1"}
    assert compare_table(result, gold, rules=[rule]) == 0.0  # no exported CSV: OSWorld fails the rule
    _csv(gold, "Sheet1", "Name,Score\nAnn,1.50\n")
    _csv(result, "Sheet1", "  Name,Score \r\nAnn,1.50\n\n\n")  # outer spaces and trailing blank lines ignored
    assert compare_table(result, gold, rules=[rule]) == 1.0
    _csv(result, "Sheet1", "NAME,Score\nAnn,1.50\n")
    assert compare_table(result, gold, rules=[rule]) == 0.0
    assert compare_table(result, gold, rules=[{**rule, "ignore_case": True}]) == 1.0
    _csv(result, "Sheet1", "Name,Score\nAnn,1.5\n")  # the printed text counts, not the value
    assert compare_table(result, gold, rules=[rule]) == 0.0


def test_check_cell_reads_raw_cell_values(tmp_path):
    def build(wb, ws):
        ws["C1"] = True
        ws["C2"] = "=1+2"  # never calculated: no cached value
        ws["C3"] = "  padded "  # openpyxl writes it inline with xml:space="preserve"
        ws["A5"] = "link"
        ws["A5"].hyperlink = "https://example.org/"
        ws["A1"].font = Font(bold=True, color="FF0000FF")
        ws["B2"].fill = RED
        ws.merge_cells("D1:E1")

    path = xlsx(tmp_path, "r.xlsx", build)

    def check(coordinate, props):
        return compare_table(path, None, rules=[{"type": "check_cell", "sheet_idx": 0, "coordinate": coordinate, "props": props}])

    assert check("B3", {"value": {"method": "eq", "ref": 7.0}}) == 1.0
    assert check("B3", {"value": {"method": "re", "ref": "7"}}) == 0.0  # a number, not text: OSWorld's regex fails
    assert check("C1", {"value": {"method": "eq", "ref": None}}) == 1.0  # booleans read as nothing
    assert check("C2", {"value": {"method": "eq", "ref": None}}) == 1.0
    assert check("C3", {"value": {"method": "eq", "ref": "  padded "}}) == 0.0
    assert (
        check(
            "A1",
            {
                "font_bold": {"method": "eq", "ref": True},
                "font_color": {"method": "eq", "ref": "FF0000FF"},
                "value": {"method": "eq", "ref": "Name"},
            },
        )
        == 1.0
    )
    assert check("B2", {"bgcolor": {"method": "eq", "ref": "FFFF0000"}}) == 1.0
    assert check("D1", {"merge": {"method": "eq", "ref": False}}) == 1.0  # the top-left cell is not "merged"
    assert check("E1", {"merge": {"method": "eq", "ref": True}}) == 1.0
    assert check("A5", {"hyperlink": {"method": "eq", "ref": "https://example.org/"}}) == 0.0  # a Hyperlink object
    assert check("A1", {"formula": {"method": "eq", "ref": None}}) == 1.0  # an unknown property reads None
    assert check("A1", {"value": {"method": "zz", "ref": 1}}) == 0.0


def test_sheet_fuzzy_compares_raw_text(tmp_path):
    gold = xlsx(tmp_path, "g.xlsx", rows=[("Name", "Qty"), ("12 Main Road", 3)])
    text_qty = xlsx(tmp_path, "t.xlsx", rows=[("name", "3"), ("12 main rd", None)])
    base = {"type": "sheet_fuzzy", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1"}
    norm = {"range": ["A2"], "type": "exact_match", "normalization": [["Road", "Rd"]], "ignore_case": True}
    assert compare_table(text_qty, gold, rules=[{**base, "rules": [norm]}]) == 1.0
    # the number 3 reads "3.0"; an empty cell reads "None"
    assert compare_table(text_qty, gold, rules=[{**base, "rules": [{"range": ["B1"], "type": "exact_match"}]}]) == 0.0
    assert compare_table(text_qty, gold, rules=[{**base, "rules": [{"range": ["C1:C3"], "type": "exact_match"}]}]) == 1.0
    assert compare_table(text_qty, gold, rules=[{**base, "rules": [{"range": ["B2"], "type": "includes"}]}]) == 0.0


def test_style_evaluates_conditional_formats(tmp_path):
    rows = [("Score",), (3,), (12,), (20,)]
    gold = xlsx(tmp_path, "g.xlsx", lambda wb, ws: [setattr(ws[c], "fill", RED) for c in ("A3", "A4")], rows=rows)
    rule = {"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["bgcolor"]}

    def conditional(make):
        return lambda wb, ws: ws.conditional_formatting.add("A2:A4", make())

    red = PatternFill(bgColor="FFFF0000")
    cell_is = conditional(lambda: CellIsRule(operator="greaterThan", formula=["10"], fill=red))
    assert compare_table(xlsx(tmp_path, "c.xlsx", cell_is, rows=rows), gold, rules=[rule]) == 1.0
    expression = conditional(lambda: FormulaRule(formula=["AND(A2>=10,MOD(A2,2)=0)"], fill=red))
    assert compare_table(xlsx(tmp_path, "e.xlsx", expression, rows=rows), gold, rules=[rule]) == 1.0
    other = conditional(lambda: FormulaRule(formula=["A2>15"], fill=red))
    assert compare_table(xlsx(tmp_path, "o.xlsx", other, rows=rows), gold, rules=[rule]) == 0.0
    # OSWorld cannot read a single absolute cell in a condition and fails the rule
    absolute = conditional(lambda: CellIsRule(operator="greaterThan", formula=["$A$2"], fill=red))
    assert compare_table(xlsx(tmp_path, "a.xlsx", absolute, rows=rows), gold, rules=[rule]) == 0.0


def test_data_validation_fails_on_an_extra_validation(tmp_path):
    def validated(extra):
        def build(wb, ws):
            dv = DataValidation(type="list", formula1='"Pass,Fail,Held"', allow_blank=True)
            dv.add("D2:D29")
            ws.add_data_validation(dv)
            if extra:
                ws.add_data_validation(DataValidation(type="whole", formula1="0", sqref="E2"))

        return build

    wanted = {
        "ranges": {"method": "spreadsheet_range", "ref": ["D2:D29", "D2:D1048576"]},
        "type": {"method": "eq", "ref": "list"},
        "formula1": {"method": "str_set_eq", "ref": ["Pass", "Fail", "Held"]},
    }
    rule = {"type": "data_validation", "sheet_idx": 0, "dv_props": [wanted]}
    assert compare_table(xlsx(tmp_path, "r.xlsx", validated(False)), None, rules=[rule]) == 1.0
    assert compare_table(xlsx(tmp_path, "x.xlsx", validated(True)), None, rules=[rule]) == 0.0
    assert compare_table(xlsx(tmp_path, "p.xlsx"), None, rules=[rule]) == 0.0
    # one validation may satisfy several items, but there must be as many validations as items
    assert compare_table(xlsx(tmp_path, "d.xlsx", validated(False)), None, rules=[{**rule, "dv_props": [wanted, wanted]}]) == 0.0


def test_col_props_compare_the_entries_in_the_file(tmp_path):
    def one_by_one(wb, ws):
        for letter in "BCD":
            ws.column_dimensions[letter].hidden = True

    gold = xlsx(tmp_path, "g.xlsx", one_by_one)
    grouped = xlsx(tmp_path, "r.xlsx", lambda wb, ws: ws.column_dimensions.group("B", "D", hidden=True))
    cols = {"type": "col_props", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["hidden"]}
    assert compare_table(xlsx(tmp_path, "s.xlsx", one_by_one), gold, rules=[cols]) == 1.0
    assert compare_table(grouped, gold, rules=[cols]) == 0.0  # one <col min=2 max=4> entry against three


def test_chart(tmp_path):
    gold = xlsx(tmp_path, "g.xlsx", _chart())
    rule = {"type": "chart", "sheet_idx0": "RI0", "sheet_idx1": "EI0", "chart_props": ["type", "title"]}
    assert compare_table(xlsx(tmp_path, "s.xlsx", _chart()), gold, rules=[rule]) == 1.0
    assert compare_table(xlsx(tmp_path, "l.xlsx", _chart(LineChart)), gold, rules=[rule]) == 0.0
    assert compare_table(xlsx(tmp_path, "r.xlsx", _chart(min_row=1)), gold, rules=[rule]) == 0.0  # other series range
    assert compare_table(xlsx(tmp_path, "t.xlsx", _chart(title="Other")), gold, rules=[rule]) == 0.0
    assert compare_table(xlsx(tmp_path, "t2.xlsx", _chart(title="Other")), gold, rules=[{**rule, "chart_props": []}]) == 1.0
    assert compare_table(xlsx(tmp_path, "none.xlsx"), gold, rules=[rule]) == 0.0
    # "direction" only exists on bar charts: OSWorld fails on a line chart
    line = xlsx(tmp_path, "l2.xlsx", _chart(LineChart))
    assert compare_table(line, line, rules=[{**rule, "chart_props": ["direction"]}]) == 0.0
    # a sheet missing on both sides has no charts on either
    assert compare_table(gold, gold, rules=[{**rule, "sheet_idx0": "RNNope", "sheet_idx1": "ENNope"}]) == 1.0


_SPARKLINES = (
    '<extLst><ext uri="{05C60535-1F16-4fd2-B633-F4F36F0B64E0}" '
    'xmlns:x14="http://schemas.microsoft.com/office/spreadsheetml/2009/9/main">'
    '<x14:sparklineGroups xmlns:xm="http://schemas.microsoft.com/office/excel/2006/main">'
    "<x14:sparklineGroup><x14:sparklines><x14:sparkline><xm:f>Sheet1!{}</xm:f><xm:sqref>D1</xm:sqref>"
    "</x14:sparkline></x14:sparklines></x14:sparklineGroup></x14:sparklineGroups></ext></extLst>"
)


def _with_sparkline(path: str, source: str) -> str:
    with zipfile.ZipFile(path) as archive:
        parts = {n: archive.read(n) for n in archive.namelist()}
    xml = parts["xl/worksheets/sheet1.xml"].decode()
    parts["xl/worksheets/sheet1.xml"] = xml.replace("</worksheet>", _SPARKLINES.replace("{}", source) + "</worksheet>").encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return path


def test_sparkline(tmp_path):
    gold = _with_sparkline(xlsx(tmp_path, "g.xlsx"), "A1:C1")
    rule = {"type": "sparkline", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    assert compare_table(_with_sparkline(xlsx(tmp_path, "s.xlsx"), "A1:C1"), gold, rules=[rule]) == 1.0
    assert compare_table(_with_sparkline(xlsx(tmp_path, "o.xlsx"), "A2:C2"), gold, rules=[rule]) == 0.0
    assert compare_table(xlsx(tmp_path, "p.xlsx"), gold, rules=[rule]) == 0.0
    assert compare_table(gold, gold, rules=[{**rule, "sheet_idx0": "RNNope"}]) == 0.0


def test_sheet_selectors_resolve_as_in_osworld(tmp_path):
    path = xlsx(tmp_path, "r.xlsx", lambda wb, ws: (wb.create_sheet("Two"), wb["Two"].__setitem__("A1", "two")))

    def value_of(selector):
        return compare_table(
            path,
            path,
            rules=[
                {
                    "type": "check_cell",
                    "sheet_idx": selector,
                    "coordinate": "A1",
                    "props": {"value": {"method": "eq", "ref": "two"}},
                }
            ],
        )

    assert value_of(1) == value_of("RI1") == value_of("RNTwo") == value_of("ENTwo") == value_of("EI1") == 1.0
    assert value_of(-1) == value_of("RI-1") == 1.0  # negative indexes count from the end
    assert value_of(5) == value_of("RNNope") == 0.0
    with pytest.raises(UserError, match="sheet selector"):
        value_of("XI0")


def test_expected_workbook_opened_up_front(tmp_path):
    result = xlsx(tmp_path, "r.xlsx")
    zoom = {"type": "zoom", "sheet_idx": 0, "method": "eq", "ref": 100}
    assert compare_table(result, None, rules=[zoom]) == 1.0
    with pytest.raises(UserError, match="missing or not a readable"):
        compare_table(result, str(tmp_path / "gone.xlsx"), rules=[zoom])


def test_rules_stop_at_first_failure(tmp_path):
    gold = xlsx(tmp_path, "g.xlsx")
    other = xlsx(tmp_path, "o.xlsx", rows=[("x",)])
    failing = {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    # the second rule would raise if it ran (the expected book has no such sheet)
    never = {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "ENMissing"}
    assert compare_table(other, gold, rules=[failing, never]) == 0.0
    assert compare_table(gold, gold, rules=[{"type": "sheet_name"}, failing]) == 1.0


# --- compare_csv ----------------------------------------------------------------------------------


def test_compare_csv(tmp_path):
    def write(name, text):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    gold = write("gold.csv", 'name,city\nAnn,"Paris, FR"\n')
    assert compare_csv(write("same.csv", 'name,city\r\nAnn,"Paris, FR"'), gold) == 1.0  # CRLF, no final newline
    # OSWorld compares lines as text: other quoting is 0.0 (we used to parse CSV and score 1.0)
    assert compare_csv(write("quoted.csv", '"name","city"\nAnn,"Paris, FR"\n'), gold) == 0.0
    # strict=False strips whole lines only: OSWorld 1.0 for padded lines ...
    padded = write("padded.csv", '  name,city \n\tAnn,"Paris, FR"\n')
    assert compare_csv(padded, gold) == 0.0
    assert compare_csv(padded, gold, strict=False) == 1.0
    # ... but 0.0 for spaces inside a line, a trailing empty cell or a trailing blank line (we scored 1.0)
    assert compare_csv(write("inner.csv", 'name , city\nAnn,"Paris, FR"\n'), gold, strict=False) == 0.0
    assert compare_csv(write("cell.csv", 'name,city\nAnn,"Paris, FR",\n'), gold, strict=False) == 0.0
    assert compare_csv(write("blank.csv", 'name,city\nAnn,"Paris, FR"\n\n'), gold, strict=False) == 0.0
    # a UTF-8 byte-order mark is part of the first line for OSWorld: 0.0 (we dropped it: 1.0)
    assert compare_csv(write("bom.csv", '\ufeffname,city\nAnn,"Paris, FR"\n'), gold) == 0.0
    # a Latin-1 file reads as Latin-1 when it is not UTF-8: OSWorld 1.0 (we read U+FFFD: 0.0)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("name,city\nZoë,Köln\n".encode("latin-1"))
    assert compare_csv(str(latin), write("gold_utf8.csv", "name,city\nZoë,Köln\n")) == 1.0
    upper = write("upper.csv", 'NAME,CITY\nANN,"PARIS, FR"\n')
    assert compare_csv(upper, gold) == 0.0
    assert compare_csv(upper, gold, ignore_case=True) == 1.0
    other_gold = write("gold2.csv", 'NAME,CITY\nANN,"PARIS, FR"\n')
    assert compare_csv(upper, [gold, other_gold]) == 1.0
    assert compare_csv(upper, [str(tmp_path / "missing.csv"), other_gold]) == 1.0
    assert compare_csv(write("wrong.csv", "name,city\nBob,Rome\n"), gold) == 0.0
    assert compare_csv(None, gold) == 0.0
    assert compare_csv(str(tmp_path / "nope.csv"), gold) == 0.0
    with pytest.raises(UserError, match="no expected CSV"):
        compare_csv(gold, str(tmp_path / "missing.csv"))
    with pytest.raises(UserError, match="unknown options"):
        compare_csv(gold, gold, strict_mode=True)


# --- compare_conference_city_in_order ----------------------------------------------------------


def test_compare_conference_city_in_order(tmp_path):
    from mcpworld.evaluation.metrics.tables.cities import compare_conference_city_in_order

    def book(name, cities):
        wb = openpyxl.Workbook()
        ws = wb.active
        ws.append(["Conference", "Year", "City"])
        for city in cities:
            ws.append(["ICML", 2013, city])
        path = tmp_path / name
        wb.save(path)
        return str(path)

    rules = {"expected": ["Atlanta", ["Montreal", "Montréal"], ["Los Angeles", "Long Beach", "LA"]]}
    assert compare_conference_city_in_order(book("a.xlsx", ["Atlanta", "Montréal, Canada", "Long Beach"]), rules) == 1.0
    assert compare_conference_city_in_order(book("b.xlsx", ["atlanta, ga", "MONTREAL", "LA"]), rules) == 1.0
    # "LA" is no substring match
    assert compare_conference_city_in_order(book("c.xlsx", ["Atlanta", "Montreal", "Atlanta"]), rules) == 0.0
    assert compare_conference_city_in_order(book("d.xlsx", ["Montreal", "Atlanta", "LA"]), rules) == 0.0  # order
    assert compare_conference_city_in_order(book("e.xlsx", ["Atlanta", "Montreal"]), rules) == 0.0  # a blank cell
    assert compare_conference_city_in_order(None, rules) == 0.0
    assert compare_conference_city_in_order(str(tmp_path / "missing.xlsx"), rules) == 0.0
    with pytest.raises(UserError, match="expected"):
        compare_conference_city_in_order(book("f.xlsx", ["Atlanta"]), {"expected": [3]})


@pytest.mark.parametrize(
    "formula, value, holds",
    [
        ("A1>5", 7.5, True),
        ("A1>5", "text", True),  # text sorts after every number
        ("A1<8", "text", False),
        ('A1="X"', "x", True),  # text compares without case
        ("AND(A1>=2,A1<=8)", 7.5, True),
        ("AND(A1>=2,A1<=8)", 10.0, False),
        ("WEEKDAY(A1,2)>5", 44002.0, True),  # 2020-06-21, a Sunday
        ("WEEKDAY(A1,2)>5", 44001.0, False),
        ("WEEKDAY(A1,2)>5", "text", True),  # #VALUE! is a non-empty result: the format applies
        ("MOD(A1,2)=0", 10.0, True),
        ('NOT(ISERROR(SEARCH("ap",A1)))', "Apple", True),
        ('LEFT(A1,LEN("Ma"))="Ma"', "Main", True),
        ("ISNUMBER(A1)", "5", True),
        ("A1>5%", 0.1, True),
    ],
)
def test_conditional_format_formulas(formula, value, holds):
    from mcpworld.evaluation.metrics.tables.conditions import compile_condition, constant

    condition = compile_condition(formula)
    assert condition is not None and condition(value) is holds
    assert compile_condition("SUMPRODUCT(A1:A3)>1") is None  # outside the subset
    assert compile_condition("A1>B1") is None  # two inputs
    assert constant("-3.5") == (True, -3.5) and constant('"x"') == (True, "x") and constant("A1")[0] is False


def test_check_cell_formula_is_ours_and_reads_the_formula_text(tmp_path):
    """mcpworld's own Calc tasks check formulas; OSWorld's check_cell has no such property (its tasks
    never ask for one), so this extension changes no OSWorld score."""

    def build(wb, ws):
        ws["B6"] = "=SUM(B2:B5)"

    path = xlsx(tmp_path, "f.xlsx", build)
    rule = {
        "type": "check_cell",
        "sheet_idx": 0,
        "coordinate": "B6",
        "props": {"formula": {"method": "re", "ref": r"^=SUM\(B2:B5\)$"}},
    }
    assert compare_table(path, None, rules=[rule]) == 1.0
    rule["props"]["formula"]["ref"] = r"^=SUM\(B2:B4\)$"
    assert compare_table(path, None, rules=[rule]) == 0.0
    rule["coordinate"] = "A1"  # a plain value has no formula
    rule["props"]["formula"]["ref"] = ".*"
    assert compare_table(path, None, rules=[rule]) == 0.0
