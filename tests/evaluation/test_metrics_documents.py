import zipfile
from io import BytesIO

import pytest
from rapidfuzz import fuzz
from docx.enum.text import (
    WD_ALIGN_PARAGRAPH,
    WD_BREAK,
    WD_COLOR_INDEX,
    WD_TAB_ALIGNMENT,
)
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Inches, Pt
from PIL import Image

from mcpworld.errors import UserError
from mcpworld.evaluation.metrics.documents import (
    check_no_duplicates,
    check_tabstops,
    compare_docx_files,
    compare_docx_images,
    compare_docx_tables,
    compare_font_names,
    compare_highlighted_text,
    compare_line_spacing,
    contains_page_break,
    evaluate_alignment,
    evaluate_spacing,
    has_page_numbers_in_footers,
    is_first_line_centered,
)
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
        "compare_docx_files", "compare_docx_tables", "compare_docx_images", "compare_line_spacing",
        "compare_font_names", "has_page_numbers_in_footers", "is_first_line_centered",
        "contains_page_break", "check_tabstops", "compare_highlighted_text", "evaluate_alignment",
        "evaluate_spacing", "check_no_duplicates",
    ]:
        assert get_metric(name).__module__.endswith("documents")


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


def test_compare_docx_files_fuzzy(make):
    text = "The quick brown fox jumps over the lazy dog near the river bank today"
    gold = make("gold.docx", text)
    typo = make("typo.docx", text.replace("quick", "quack"))
    assert compare_docx_files(typo, gold) == 0.0
    # content_only is OSWorld's partial credit, fuzz.ratio of the texts: 0.986 (we thresholded at 0.95: 1.0)
    assert compare_docx_files(typo, gold, content_only=True) == pytest.approx(0.9855072463768118)
    far = make("far.docx", "Something else entirely")
    assert compare_docx_files(far, gold, content_only=True) == pytest.approx(fuzz.ratio(
        "Something else entirely", text) / 100)  # OSWorld 0.30 (we scored 0.0)
    assert compare_docx_files(typo, gold, content_only=True, threshold=0.95) == 1.0
    assert compare_docx_files(typo, gold, content_only=True, threshold=0.999) == 0.0
    score = compare_docx_files(typo, gold, fuzzy_match=True)
    assert 0.9 < score < 1.0
    # per paragraph: a missing paragraph counts 0 instead of zeroing everything
    gold2 = make("gold2.docx", "one", "two")
    assert compare_docx_files(make("half.docx", "one"), gold2, ignore_blanks=False, fuzzy_match=True) == 0.5
    with pytest.raises(UserError, match="threshold"):
        compare_docx_files(typo, gold, content_only=True, threshold=95)


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
        for paragraph, value in zip(document.paragraphs, values):
            if value is not None:
                paragraph.paragraph_format.line_spacing = value

    return build


def test_compare_line_spacing(make, tmp_path):
    gold = make("gold.docx", "One", "Two", build=_spacing(1.5, 2.0))
    assert compare_line_spacing(make("same.docx", "One", "Two", build=_spacing(1.5, 2.0)), gold) == 1.0
    assert compare_line_spacing(make("diff.docx", "One", "Two", build=_spacing(1.5, 1.0)), gold) == 0.0
    assert compare_line_spacing(make("text.docx", "One", "Three", build=_spacing(1.5, 2.0)), gold) == 0.0
    # exact 12pt is not "1 line"
    gold_single = make("single.docx", "One", build=_spacing(1.0))
    assert compare_line_spacing(make("exact.docx", "One", build=_spacing(Pt(12))), gold_single) == 0.0

    # spacing inherited from the paragraph style counts like direct spacing
    def by_style(document):
        document.styles["Normal"].paragraph_format.line_spacing = 2.0

    styled_gold = make("sg.docx", "One", "Two", build=_spacing(2.0, 2.0))
    assert compare_line_spacing(make("styled.docx", "One", "Two", build=by_style), styled_gold) == 1.0
    assert compare_line_spacing(None, gold) == 0.0
    assert compare_line_spacing(str(tmp_path / "missing.docx"), gold) == 0.0


def test_evaluate_spacing(make, tmp_path):
    good = make("good.docx", "Intro", "", "Body 1", "Body 2", "Conclusion", build=_spacing(1.0, None, 2.0, 2.0, 1.5))
    assert evaluate_spacing(good) == 1.0
    bad_body = make("bad.docx", "Intro", "Body 1", "Body 2", "Conclusion", build=_spacing(1.0, 2.0, 1.0, 1.5))
    assert evaluate_spacing(bad_body) == 0.0
    # no explicit intro spacing: the template default (1.15) is not single spacing
    assert evaluate_spacing(make("default.docx", "I", "B", "C", build=_spacing(None, 2.0, 1.5))) == 0.0
    assert evaluate_spacing(make("short.docx", "I", "C", build=_spacing(1.0, 1.5))) == 0.0
    custom = make("custom.docx", "I", "B", "C", build=_spacing(1.5, 1.5, 1.5))
    assert evaluate_spacing(custom, {"introduction": 1.5, "body": 1.5}) == 1.0
    assert evaluate_spacing(None) == 0.0
    assert evaluate_spacing(str(tmp_path / "missing.docx")) == 0.0
    with pytest.raises(UserError, match="body"):
        evaluate_spacing(good, {"body": "double"})


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


def test_has_page_numbers_in_footers(make, tmp_path):
    assert has_page_numbers_in_footers(make("simple.docx", "x", build=_footer_field(" PAGE \\* ARABIC "))) == 1.0
    assert has_page_numbers_in_footers(make("complex.docx", "x", build=_footer_field(" PAGE ", simple=False))) == 1.0
    assert has_page_numbers_in_footers(make("numpages.docx", "x", build=_footer_field("NUMPAGES"))) == 0.0

    def typed_number(document):
        document.sections[0].footer.paragraphs[0].text = "Page 2024"

    assert has_page_numbers_in_footers(make("typed.docx", "x", build=typed_number)) == 0.0
    assert has_page_numbers_in_footers(make("nofooter.docx", "x")) == 0.0

    def second_section_linked(document):
        _footer_field("PAGE")(document)
        document.add_section()
        document.add_paragraph("more")

    assert has_page_numbers_in_footers(make("linked.docx", "x", build=second_section_linked)) == 1.0

    def second_section_unlinked(document):
        second_section_linked(document)
        document.sections[1].footer.is_linked_to_previous = False

    assert has_page_numbers_in_footers(make("unlinked.docx", "x", build=second_section_unlinked)) == 0.0
    assert has_page_numbers_in_footers(None) == 0.0
    assert has_page_numbers_in_footers(str(tmp_path / "missing.docx")) == 0.0


# --- alignment ---------------------------------------------------------------------------


def test_is_first_line_centered(make, tmp_path):
    def center_first_text(document):
        document.paragraphs[1].alignment = WD_ALIGN_PARAGRAPH.CENTER

    # the leading empty paragraph is skipped
    assert is_first_line_centered(make("c.docx", "", "Title", "body", build=center_first_text)) == 1.0
    assert is_first_line_centered(make("l.docx", "Title", "body")) == 0.0

    def center_body_only(document):
        document.paragraphs[1].alignment = WD_ALIGN_PARAGRAPH.CENTER

    assert is_first_line_centered(make("b.docx", "Title", "body", build=center_body_only)) == 0.0

    def title_style(document):
        document.styles["Title"].paragraph_format.alignment = WD_ALIGN_PARAGRAPH.CENTER
        document.add_paragraph("Heading", style="Title")

    assert is_first_line_centered(make("s.docx", build=title_style)) == 1.0
    assert is_first_line_centered(make("empty.docx")) == 0.0
    assert is_first_line_centered(None) == 0.0
    assert is_first_line_centered(str(tmp_path / "missing.docx")) == 0.0


def test_evaluate_alignment(make, tmp_path):
    good = make("good.docx", "One two three\tfour five. Six seven eight  nine ten.", "Short.")
    assert evaluate_alignment(good) == 1.0
    plain = make("plain.docx", "One two three four five. Six seven eight nine ten.")
    assert evaluate_alignment(plain) == 0.0
    assert evaluate_alignment(make("few.docx", "Too short. Also short.")) == 0.0  # nothing to check
    assert evaluate_alignment(make("two.docx", "One two\tthree four."), words=2) == 1.0
    assert evaluate_alignment(None) == 0.0
    assert evaluate_alignment(str(tmp_path / "missing.docx")) == 0.0
    with pytest.raises(UserError, match="words"):
        evaluate_alignment(good, words=0)


# --- page breaks ------------------------------------------------------------------------


def test_contains_page_break(make, tmp_path):
    def two_breaks(document):
        document.add_page_break()
        document.add_paragraph("page 2").runs[0].add_break(WD_BREAK.PAGE)
        document.add_paragraph("page 3")

    doc_two = make("two.docx", "page 1", build=two_breaks)
    assert contains_page_break(doc_two) == 1.0
    assert contains_page_break(doc_two, {}) == 1.0
    assert contains_page_break(doc_two, {"page_break_count": 2}) == 1.0
    assert contains_page_break(doc_two, {"page_break_count": 1}) == 0.0
    line_break = make("line.docx", build=lambda d: d.add_paragraph("a").runs[0].add_break())
    assert contains_page_break(line_break) == 0.0

    def break_before(document):
        document.paragraphs[0].paragraph_format.page_break_before = True  # first: breaks nothing
        document.paragraphs[1].paragraph_format.page_break_before = True

    assert contains_page_break(make("before.docx", "a", "b", build=break_before), {"page_break_count": 1}) == 1.0
    assert contains_page_break(None) == 0.0
    assert contains_page_break(str(tmp_path / "missing.docx")) == 0.0
    with pytest.raises(UserError, match="page_break_count"):
        contains_page_break(doc_two, {"page_break_count": "2"})
    with pytest.raises(UserError, match="rules"):
        contains_page_break(doc_two, ["page_break_count"])


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


def test_compare_highlighted_text(make, tmp_path):
    gold = make("gold.docx", build=_highlight(("Keep ", False), ("this", True), (" and ", False), ("that", True)))
    assert compare_highlighted_text(
        make("same.docx", build=_highlight(("Keep ", False), ("this", True), (" and ", False), ("that", True))), gold
    ) == 1.0
    # split runs and LibreOffice-style shading still match
    split = make("split.docx", build=_highlight(("Keep ", False), ("th", True), ("is", True), (" and ", False),
                                                ("that", True), shading=True))
    assert compare_highlighted_text(split, gold) == 1.0
    missing = make("missing1.docx", build=_highlight(("Keep ", False), ("this", True), (" and that", False)))
    assert compare_highlighted_text(missing, gold) == 0.0
    merged = make("merged.docx", build=_highlight(("Keep ", False), ("this and that", True)))
    assert compare_highlighted_text(merged, gold) == 0.0
    assert compare_highlighted_text(make("none.docx", "plain"), make("none2.docx", "plain")) == 1.0
    assert compare_highlighted_text(None, gold) == 0.0
    assert compare_highlighted_text(str(tmp_path / "missing.docx"), gold) == 0.0


# --- duplicates -------------------------------------------------------------------------------


def test_check_no_duplicates(make, tmp_path):
    initial = make(
        "initial.docx", "Timetable", "08:00:00, T1, S1, 1", "08:05:00, T2, S1, 2", "08:00:00, T1, S1, 1",
        "09:00:00, T3, S2, 1",
    )
    deduped = make("dedup.docx", "Timetable", "08:00:00, T1, S1, 1", "08:05:00, T2, S1, 2", "09:00:00, T3, S2, 1")
    assert check_no_duplicates(deduped) == 1.0
    assert check_no_duplicates(deduped, initial) == 1.0
    assert check_no_duplicates(initial) == 0.0  # T1 twice
    dropped = make("dropped.docx", "08:00:00, T1, S1, 1", "08:05:00, T2, S1, 2")
    assert check_no_duplicates(dropped) == 1.0
    assert check_no_duplicates(dropped, initial) == 0.0  # T3 lost
    edited = make("edited.docx", "08:00:00, T1, S9, 1", "08:05:00, T2, S1, 2", "09:00:00, T3, S2, 1")
    assert check_no_duplicates(edited, initial) == 0.0  # a record not in the original
    assert check_no_duplicates(make("norecords.docx", "just text")) == 0.0
    assert check_no_duplicates(make("keyed.docx", "a;x", "b;y"), separator=";", field_count=2, key_index=0) == 1.0
    assert check_no_duplicates(None) == 0.0
    assert check_no_duplicates(str(tmp_path / "missing.docx"), initial) == 0.0
    assert check_no_duplicates(deduped, str(tmp_path / "missing.docx")) == 0.0
    with pytest.raises(UserError, match="key_index"):
        check_no_duplicates(deduped, key_index=4)
