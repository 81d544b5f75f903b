import zipfile
from io import BytesIO

import pytest
from docx.enum.text import (
    WD_ALIGN_PARAGRAPH,
    WD_BREAK,
    WD_COLOR_INDEX,
    WD_TAB_ALIGNMENT,
)
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Inches
from PIL import Image
from rapidfuzz import fuzz

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.documents.formatting import (
    check_tabstops,
    compare_font_names,
    compare_highlighted_text,
    compare_line_spacing,
    evaluate_spacing,
    is_first_line_centered,
)
from mcpworld.evaluation.metrics.documents.structure import (
    compare_docx_images,
    compare_docx_tables,
    contains_page_break,
    has_page_numbers_in_footers,
)
from mcpworld.evaluation.metrics.documents.text import check_no_duplicates, compare_docx_files, evaluate_alignment
from mcpworld.evaluation.registry import get_metric


@pytest.fixture
def make(make_docx):
    return make_docx


@pytest.fixture
def odt(tmp_path):
    path = tmp_path / "doc.odt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        z.writestr("content.xml", "<office:document-content/>")
    return str(path)


def _png(color, size=(8, 6), fmt="PNG"):
    buf = BytesIO()
    Image.new("RGB", size, color).save(buf, format=fmt)
    buf.seek(0)
    return buf


def test_all_metrics_registered():
    for name in [
        "compare_docx_files",
        "compare_docx_tables",
        "compare_docx_images",
        "compare_line_spacing",
        "compare_font_names",
        "has_page_numbers_in_footers",
        "is_first_line_centered",
        "contains_page_break",
        "check_tabstops",
        "compare_highlighted_text",
        "evaluate_alignment",
        "evaluate_spacing",
        "check_no_duplicates",
    ]:
        assert get_metric(name).__module__.startswith("mcpworld.evaluation.metrics.documents.")


# --- compare_docx_files ---------------------------------------------------------------------


def test_compare_docx_files_exact_and_blanks(make, tmp_path, odt):
    gold = make("gold.docx", "Hello world", "Second line")
    assert compare_docx_files(make("same.docx", "Hello world", "Second line"), gold) == 1.0
    spaced = make("spaced.docx", "Hello   world", "", "Second line ")
    assert compare_docx_files(spaced, gold) == 1.0  # ignore_blanks is on by default
    assert compare_docx_files(spaced, gold, ignore_blanks=False) == 0.0
    assert compare_docx_files(make("other.docx", "Hello world", "Third line"), gold) == 0.0
    # missing / None / unparsable / non-docx
    assert compare_docx_files(None, gold) == 0.0
    assert compare_docx_files(str(tmp_path / "nope.docx"), gold) == 0.0
    assert compare_docx_files(gold, None) == 0.0
    broken = tmp_path / "broken.docx"
    broken.write_text("not a zip")
    assert compare_docx_files(str(broken), gold) == 0.0
    assert compare_docx_files(odt, gold) == 0.0


def test_compare_docx_files_options(make):
    gold = make("gold.docx", "Alpha beta", "Gamma")
    upper = make("upper.docx", "ALPHA BETA", "GAMMA")
    assert compare_docx_files(upper, gold) == 0.0
    assert compare_docx_files(upper, gold, ignore_case=True) == 1.0

    swapped = make("swapped.docx", "gamma", "alpha  beta")
    assert compare_docx_files(swapped, gold, ignore_order=True) == 0.0
    # normalised before sorting: case and blanks do not change the order
    assert compare_docx_files(swapped, gold, ignore_order=True, ignore_case=True) == 1.0

    gapped = make("gapped.docx", "Alpha beta", "", "Gamma")
    assert compare_docx_files(gapped, gold, ignore_blanks=False) == 0.0
    assert compare_docx_files(gapped, gold, ignore_blanks=False, delete_empty_lines=True) == 1.0


# --- tables and images -------------------------------------------------------------------


def _table(rows):
    def build(document):
        table = document.add_table(rows=len(rows), cols=len(rows[0]))
        for i, row in enumerate(rows):
            for j, value in enumerate(row):
                table.cell(i, j).text = value

    return build


def test_compare_docx_tables(make, tmp_path, odt):
    gold = make("gold.docx", "x", build=_table([["a", "b"], ["1", "2"]]))
    assert compare_docx_tables(make("same.docx", build=_table([["a ", "b"], ["1", " 2"]])), gold) == 1.0
    assert compare_docx_tables(make("cell.docx", build=_table([["a", "b"], ["1", "3"]])), gold) == 0.0
    assert compare_docx_tables(make("shape.docx", build=_table([["a", "b", "c"], ["1", "2", "3"]])), gold) == 0.0
    assert compare_docx_tables(make("none.docx", "x"), gold) == 0.0
    assert compare_docx_tables(None, gold) == 0.0
    assert compare_docx_tables(str(tmp_path / "missing.docx"), gold) == 0.0
    assert compare_docx_tables(odt, gold) == 0.0


def _pictures(*images):
    def build(document):
        for image in images:
            document.add_picture(image, width=Inches(1))

    return build


def test_compare_docx_images(make, tmp_path):
    gold = make("gold.docx", build=_pictures(_png("red"), _png("blue")))
    assert compare_docx_images(make("same.docx", build=_pictures(_png("red"), _png("blue"))), gold) == 1.0
    # same pixels, different encoding (BMP vs PNG) still match
    assert compare_docx_images(make("bmp.docx", build=_pictures(_png("red", fmt="BMP"), _png("blue"))), gold) == 1.0
    assert compare_docx_images(make("order.docx", build=_pictures(_png("blue"), _png("red"))), gold) == 0.0
    assert compare_docx_images(make("pixel.docx", build=_pictures(_png("red"), _png("green"))), gold) == 0.0
    assert compare_docx_images(make("fewer.docx", build=_pictures(_png("red"))), gold) == 0.0
    assert compare_docx_images(make("size.docx", build=_pictures(_png("red"), _png("blue", (9, 6)))), gold) == 0.0
    assert compare_docx_images(make("a.docx", "text"), make("b.docx", "text")) == 1.0  # no images on either side
    assert compare_docx_images(None, gold) == 0.0
    assert compare_docx_images(str(tmp_path / "missing.docx"), gold) == 0.0


# --- line spacing ------------------------------------------------------------------------


def _spacing(*values):
    def build(document):
        for paragraph, value in zip(document.paragraphs, values, strict=False):
            if value is not None:
                paragraph.paragraph_format.line_spacing = value

    return build


# --- fonts ------------------------------------------------------------------------------


def test_compare_font_names(make, tmp_path):
    def all_arial(document):
        for paragraph in document.paragraphs:
            for run in paragraph.runs:
                run.font.name = "Arial"

    rules = {"font_name": "Arial"}
    assert compare_font_names(make("arial.docx", "one", "two", build=all_arial), rules) == 1.0

    def one_times(document):
        all_arial(document)
        document.paragraphs[1].add_run(" tail").font.name = "Times New Roman"

    assert compare_font_names(make("mixed.docx", "one", "two", build=one_times), rules) == 0.0

    def normal_style(document):
        document.styles["Normal"].font.name = "Arial"

    # the font set on the style applies to runs without direct formatting
    assert compare_font_names(make("styled.docx", "one", build=normal_style), rules) == 1.0

    def table_in_other_font(document):
        normal_style(document)
        _table([["cell"]])(document)
        document.tables[0].cell(0, 0).paragraphs[0].runs[0].font.name = "Courier New"

    assert compare_font_names(make("table.docx", "one", build=table_in_other_font), rules) == 0.0
    # the template's theme font (Cambria) is resolved, not reported as "unset"
    assert compare_font_names(make("theme.docx", "one"), {"font_name": "Cambria"}) == 1.0
    assert compare_font_names(make("empty.docx"), rules) == 0.0
    assert compare_font_names(None, rules) == 0.0
    assert compare_font_names(str(tmp_path / "missing.docx"), rules) == 0.0
    with pytest.raises(UserError, match="font_name"):
        compare_font_names(make("x.docx", "one"), {"font": "Arial"})


# --- footers ----------------------------------------------------------------------------


def _footer_field(instr, simple=True):
    def build(document):
        paragraph = document.sections[0].footer.paragraphs[0]
        if simple:
            field = OxmlElement("w:fldSimple")
            field.set(qn("w:instr"), instr)
            run = OxmlElement("w:r")
            text = OxmlElement("w:t")
            text.text = "1"
            run.append(text)
            field.append(run)
            paragraph._p.append(field)
            return
        for kind, value in [("begin", None), (None, instr), ("separate", None), (None, "1"), ("end", None)]:
            run = paragraph.add_run()
            if kind:
                char = OxmlElement("w:fldChar")
                char.set(qn("w:fldCharType"), kind)
                run._r.append(char)
            elif value == instr:
                code = OxmlElement("w:instrText")
                code.text = value
                run._r.append(code)
            else:
                run.text = value

    return build


# --- alignment ---------------------------------------------------------------------------


# --- page breaks ------------------------------------------------------------------------


# --- tab stops ----------------------------------------------------------------------------


def _tabs(*stops):
    def build(document):
        for paragraph in document.paragraphs:
            if paragraph.text.strip():
                for position, alignment in stops:
                    paragraph.paragraph_format.tab_stops.add_tab_stop(position, alignment)

    return build


def test_check_tabstops(make, tmp_path):
    lines = ["Name one\t100", "", "Name two\t200"]
    gold = make("gold.docx", *lines, build=_tabs((Inches(5), WD_TAB_ALIGNMENT.RIGHT)))
    assert check_tabstops(make("same.docx", *lines, build=_tabs((Inches(5), WD_TAB_ALIGNMENT.RIGHT))), gold) == 1.0
    near = check_tabstops(make("near.docx", *lines, build=_tabs((Inches(4.5), WD_TAB_ALIGNMENT.RIGHT))), gold)
    assert 0.8 < near < 1.0  # 0.5in off over a 6in text width
    assert check_tabstops(make("left.docx", *lines, build=_tabs((Inches(5), WD_TAB_ALIGNMENT.LEFT))), gold) == 0.0
    assert check_tabstops(make("none.docx", *lines), gold) == 0.0
    assert check_tabstops(make("fewer.docx", lines[0], build=_tabs((Inches(5), WD_TAB_ALIGNMENT.RIGHT))), gold) == 0.0
    # word count before the tab
    same = make("same2.docx", *lines, build=_tabs((Inches(5), WD_TAB_ALIGNMENT.RIGHT)))
    assert check_tabstops(same, gold, word_number_split_by_tabstop=2) == 1.0
    assert check_tabstops(same, gold, word_number_split_by_tabstop=1) == 0.0
    assert check_tabstops(same, gold, word_number_split_by_tabstop=1, index=5) == 0.0  # no such part
    assert check_tabstops(None, gold) == 0.0
    assert check_tabstops(str(tmp_path / "missing.docx"), gold) == 0.0
    with pytest.raises(UserError, match="word_number_split_by_tabstop"):
        check_tabstops(same, gold, word_number_split_by_tabstop="2")


# --- highlighting ---------------------------------------------------------------------------


def _highlight(*spans, shading=False):
    """One paragraph of runs; spans are (text, highlighted)."""

    def build(document):
        paragraph = document.add_paragraph()
        for text, on in spans:
            run = paragraph.add_run(text)
            if not on:
                continue
            if shading:  # how LibreOffice exports highlighting
                shd = OxmlElement("w:shd")
                shd.set(qn("w:val"), "clear")
                shd.set(qn("w:color"), "auto")
                shd.set(qn("w:fill"), "FFFF00")
                run._r.get_or_add_rPr().append(shd)
            else:
                run.font.highlight_color = WD_COLOR_INDEX.YELLOW

    return build


# --- duplicates -------------------------------------------------------------------------------


# --- OSWorld's semantics (docs.py): direct formatting, its indexing and its quirks ------------------


def test_compare_docx_files_fuzzy_and_paragraphs(make):
    a, b = make("a.docx", "The cat sat", "on the mat"), make("b.docx", "The cat sat", "on the hat")
    whole = fuzz.ratio("The cat sat on the mat", "The cat sat on the hat") / 100
    assert compare_docx_files(a, b, fuzzy_match=True) == pytest.approx(whole)
    # paragraph by paragraph: the mean similarity; a different paragraph count is 0 (OSWorld)
    mean = (1 + fuzz.ratio("on the mat", "on the hat") / 100) / 2
    assert compare_docx_files(a, b, ignore_blanks=False, fuzzy_match=True) == pytest.approx(mean)
    short = make("c.docx", "The cat sat")
    assert compare_docx_files(short, b, ignore_blanks=False, fuzzy_match=True) == 0.0
    # ignore_order sorts the raw paragraphs before case folding ("b" < "a" is false, "B" < "a" true)
    upper, lower = make("u.docx", "B", "a"), make("l.docx", "a", "b")
    assert compare_docx_files(upper, lower, ignore_case=True, ignore_order=True) == 0.0
    # the file names must end in .docx (or both in .odt)
    assert compare_docx_files(a, a + "x") == 0.0


def test_compare_docx_files_odt_as_odfpy_reads_it(tmp_path):
    from tests.helpers.documents import write_odt

    # headings are not text:p; text:s and nested spans are not seen
    a = write_odt(
        tmp_path / "a.odt", "<text:h>Title</text:h><text:p>a<text:s/>b<text:span>c<text:span>d</text:span></text:span></text:p>"
    )
    b = write_odt(tmp_path / "b.odt", "<text:p>abc</text:p>")
    assert compare_docx_files(a, b) == 1.0
    assert compare_docx_files(a, b, ignore_blanks=False) == 1.0


def test_compare_line_spacing_direct(make):
    def spaced(value):
        def build(d):
            d.paragraphs[-1].paragraph_format.line_spacing = value

        return build

    gold = make("gold.docx", "Intro", "Body", build=spaced(2.0))
    assert compare_line_spacing(make("ok.docx", "Intro", "Body", build=spaced(2.0)), gold) == 1.0
    assert compare_line_spacing(make("single.docx", "Intro", "Body", build=spaced(1.0)), gold) == 0.0

    def by_style(d):
        d.styles["Normal"].paragraph_format.line_spacing = 2.0

    # spacing from the style only is not direct spacing (OSWorld)
    assert compare_line_spacing(make("style.docx", "Intro", "Body", build=by_style), gold) == 0.0
    # every paragraph counts, empty ones too
    assert compare_line_spacing(make("extra.docx", "Intro", "", "Body", build=spaced(2.0)), gold) == 0.0


def test_evaluate_spacing_first_three_paragraphs(make):
    def build(d):
        for p, s in zip(d.paragraphs, (1.0, 2.0, 1.5), strict=False):
            p.paragraph_format.line_spacing = s

    assert evaluate_spacing(make("a.docx", "I", "B", "C", "more", build=build)) == 1.0
    assert evaluate_spacing(make("b.docx", "", "B", "C", build=build)) == 1.0  # paragraph 0 even when empty
    assert evaluate_spacing(make("c.docx", "I", "B", build=lambda d: None)) == 0.0  # fewer than 3: 0
    assert evaluate_spacing(make("d.docx", "I", "B", "C")) == 0.0  # unset is not 1.0
    with pytest.raises(UserError):
        evaluate_spacing(make("e.docx", "I"), {"body": "double"})


def test_has_page_numbers_in_footers_digit_in_first_paragraph(make):
    def footer(*texts):
        def build(d):
            f = d.sections[0].footer
            f.paragraphs[0].text = texts[0]
            for t in texts[1:]:
                f.add_paragraph(t)

        return build

    assert has_page_numbers_in_footers(make("a.docx", "x", build=footer("Page 1"))) == 1.0
    assert has_page_numbers_in_footers(make("b.docx", "x", build=footer("2024"))) == 1.0  # any digit
    assert has_page_numbers_in_footers(make("c.docx", "x", build=footer("", "3"))) == 0.0  # first paragraph only
    assert has_page_numbers_in_footers(make("d.docx", "x")) == 0.0
    assert has_page_numbers_in_footers(make("e.docx", "x", build=footer("2024")), field_only=True) == 0.0

    def field(d):
        p = d.sections[0].footer.paragraphs[0]
        for kind, text in (("begin", None), (None, " PAGE "), ("separate", None), ("t", "1"), ("end", None)):
            r = p.add_run()
            if kind == "t":
                r.text = text
            elif kind:
                el = OxmlElement("w:fldChar")
                el.set(qn("w:fldCharType"), kind)
                r._r.append(el)
            else:
                el = OxmlElement("w:instrText")
                el.text = text
                r._r.append(el)

    assert has_page_numbers_in_footers(make("f.docx", "x", build=field)) == 1.0
    assert has_page_numbers_in_footers(make("g.docx", "x", build=field), field_only=True) == 1.0


def test_is_first_line_centered_paragraph_zero_direct(make):
    def center(i):
        def build(d):
            d.paragraphs[i].alignment = WD_ALIGN_PARAGRAPH.CENTER

        return build

    assert is_first_line_centered(make("a.docx", "Title", "body", build=center(0))) == 1.0
    assert is_first_line_centered(make("b.docx", "", "Title", build=center(1))) == 0.0  # paragraph 0, even empty
    assert is_first_line_centered(make("c.docx")) == 0.0  # no paragraph: 0

    def by_style(d):
        d.styles["Normal"].paragraph_format.alignment = WD_ALIGN_PARAGRAPH.CENTER

    assert is_first_line_centered(make("d.docx", "Title", build=by_style)) == 0.0  # style only


def test_evaluate_alignment_osworld_test(make):
    assert evaluate_alignment(make("a.docx", "One two three\tfour five.")) == 1.0
    assert evaluate_alignment(make("b.docx", "One two three four five.")) == 1.0  # any gap passes
    assert evaluate_alignment(make("c.docx", "One  two three four.")) == 0.0  # a wide gap inside the first part
    assert evaluate_alignment(make("d.docx", "Hi. One two.")) == 1.0
    assert evaluate_alignment(make("e.docx", "Three words here.")) == 0.0  # exactly three words fails in OSWorld


def test_contains_page_break_runs_of_body_paragraphs(make):
    def breaks(d):
        d.paragraphs[0].add_run().add_break(WD_BREAK.PAGE)
        d.paragraphs[1].paragraph_format.page_break_before = True
        d.add_table(rows=1, cols=1).cell(0, 0).paragraphs[0].add_run().add_break(WD_BREAK.PAGE)

    doc = make("a.docx", "Part 1", "Part 2", build=breaks)
    assert contains_page_break(doc, {"page_break_count": 1}) == 1.0  # break-before and table breaks not counted
    assert contains_page_break(doc, None) == 1.0
    assert contains_page_break(doc, {"page_break_count": 2}) == 0.0
    assert contains_page_break(make("b.docx", "x"), {"page_break_count": 0}) == 0.0  # none at all is 0


def test_compare_highlighted_text_sets_of_first_text(make):
    y = {"highlight_color": WD_COLOR_INDEX.YELLOW}
    g = {"highlight_color": WD_COLOR_INDEX.BRIGHT_GREEN}
    gold = make("gold.docx", [("alpha", y), (" and ", {}), ("beta", y)])
    assert compare_highlighted_text(make("a.docx", [("beta", g), (" and ", {}), ("alpha", g), ("alpha", g)]), gold) == 1.0
    assert compare_highlighted_text(make("b.docx", [("alp", y), ("ha", y), (" and beta", {})]), gold) == 0.0
    assert compare_highlighted_text(None, gold) == 0.0


def test_check_no_duplicates_osworld_argument_order(make):
    original = make("orig.docx", "Timetable", "10:00, T1, S1, P1", "10:05, T1, S2, P1", "10:10, T2, S3, P2")
    deduped = make("dedup.docx", "10:00, T1, S1, P1", "10:10, T2, S3, P2")
    assert check_no_duplicates(original, deduped) == 1.0  # result read as the original, expected as the deduplicated
    assert check_no_duplicates(deduped, original) == 0.0  # duplicates in ``expected``
    assert check_no_duplicates(deduped, None) == 0.0
    assert check_no_duplicates(original, make("short.docx", "10:00, T1, S1, P1")) == 0.0
