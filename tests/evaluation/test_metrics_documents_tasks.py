"""Writer task metrics graded against a gold document (OSWorld's libreoffice_writer / multi_apps tasks)."""

import zipfile

import pytest
from docx.enum.text import WD_COLOR_INDEX
from docx.shared import Pt, RGBColor

from mcpworld.errors import UserError
from mcpworld.evaluation.metrics.documents import (
    check_highlighted_words,
    check_italic_font_size_14,
    compare_docx_files_and_ignore_new_lines,
    compare_references,
    compare_subscript_contains,
    compare_unique_train_records,
    evaluate_colored_words_in_tables,
    evaluate_strike_through_last_paragraph,
    fuzzy_place_math,
)
from mcpworld.evaluation.metrics.odf import open_odt
from mcpworld.evaluation.registry import get_metric


@pytest.fixture
def make(make_docx):
    return make_docx


def test_registered():
    for name in [
        "compare_subscript_contains", "check_highlighted_words", "evaluate_strike_through_last_paragraph",
        "evaluate_colored_words_in_tables", "check_italic_font_size_14", "compare_unique_train_records",
        "compare_docx_files_and_ignore_new_lines", "compare_references", "fuzzy_place_math",
    ]:
        assert get_metric(name).__module__.endswith("documents")


# --- subscript ----------------------------------------------------------------------------------


def test_compare_subscript_contains(make, tmp_path):
    sub = {"subscript": True}
    gold = make("gold.docx", "Water", [("H", {}), ("2", sub), ("O is water", {})])
    assert compare_subscript_contains(make("same.docx", "Water", [("H", {}), ("2", sub), ("O is water", {})]), gold) == 1.0
    # split into other runs, same subscript character: still found (OSWorld paired runs by index)
    split = make("split.docx", "Water", [("H", {}), ("2", sub), ("O is ", {}), ("water", {})])
    assert compare_subscript_contains(split, gold) == 1.0
    resplit = make("resplit.docx", "Water", [("", {}), ("H", {}), ("2", sub), ("O is water", {})])
    assert compare_subscript_contains(resplit, gold) == 1.0
    assert compare_subscript_contains(make("plain.docx", "Water", "H2O is water"), gold) == 0.0
    wrong_place = make("wrong.docx", "Water", [("H2", {}), ("O", sub), (" is water", {})])
    assert compare_subscript_contains(wrong_place, gold) == 0.0
    superscript = make("sup.docx", "Water", [("H", {}), ("2", {"superscript": True}), ("O is water", {})])
    assert compare_subscript_contains(superscript, gold) == 0.0
    assert compare_subscript_contains(None, gold) == 0.0
    assert compare_subscript_contains(str(tmp_path / "missing.docx"), gold) == 0.0


# --- highlighting (.odt and .docx) -------------------------------------------------------------

ODT_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"'
)


def write_odt(path, body, automatic="", common=""):
    content = (
        f'<office:document-content {ODT_NS}><office:automatic-styles>{automatic}</office:automatic-styles>'
        f"<office:body><office:text>{body}</office:text></office:body></office:document-content>"
    )
    styles = f"<office:document-styles {ODT_NS}><office:styles>{common}</office:styles></office:document-styles>"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        z.writestr("content.xml", content)
        z.writestr("styles.xml", styles)
    return str(path)


def _span_style(name, color, parent=None):
    parent_attr = f' style:parent-style-name="{parent}"' if parent else ""
    props = f'<style:text-properties fo:background-color="{color}"/>' if color else ""
    return f'<style:style style:name="{name}" style:family="text"{parent_attr}>{props}</style:style>'


def test_odt_reading(tmp_path):
    path = write_odt(
        tmp_path / "a.odt",
        '<text:h>Title</text:h><text:p>Call<text:s text:c="2"/>the <text:span text:style-name="T1">candidate</text:span>'
        "<text:tab/>now</text:p>",
        automatic=_span_style("T1", "#ffff00"),
    )
    odt = open_odt(path)
    assert odt.texts() == ["Title", "Call  the candidate\tnow"]
    assert odt.highlighted_text() == "candidate"
    assert open_odt(None) is None
    assert open_odt(str(tmp_path / "missing.odt")) is None
    (tmp_path / "junk.odt").write_text("not a zip")
    assert open_odt(str(tmp_path / "junk.odt")) is None


def test_check_highlighted_words_odt(tmp_path):
    body = '<text:p>Please <text:span text:style-name="{}">call</text:span> the candidate.</text:p>'
    gold = write_odt(tmp_path / "gold.odt", body.format("T9"), automatic=_span_style("T9", "transparent"))
    clean = write_odt(tmp_path / "clean.odt", body.format("T1"), automatic=_span_style("T1", None))
    assert check_highlighted_words(clean, gold) == 1.0
    yellow = write_odt(tmp_path / "yellow.odt", body.format("T1"), automatic=_span_style("T1", "#ffff00"))
    assert check_highlighted_words(yellow, gold) == 0.0
    # any highlight colour counts (OSWorld only saw #ffff00)
    green = write_odt(tmp_path / "green.odt", body.format("T1"), automatic=_span_style("T1", "#00ff00"))
    assert check_highlighted_words(green, gold) == 0.0
    # inherited from a named style
    inherited = write_odt(
        tmp_path / "inherited.odt", body.format("T1"), automatic=_span_style("T1", None, parent="Marker"),
        common=_span_style("Marker", "#ffff00"),
    )
    assert check_highlighted_words(inherited, gold) == 0.0
    # a nearer style switching the background off wins over the paragraph's
    nested = write_odt(
        tmp_path / "nested.odt",
        '<text:p text:style-name="P1">Please <text:span text:style-name="T1">call</text:span> the candidate.</text:p>',
        automatic=_span_style("T1", "transparent")
        + '<style:style style:name="P1" style:family="paragraph"><style:text-properties fo:background-color="#ffff00"/></style:style>',
    )
    assert check_highlighted_words(nested, gold) == 0.0  # "Please" and "the candidate." still highlighted
    edited = write_odt(tmp_path / "edited.odt", "<text:p>Please phone the candidate.</text:p>")
    assert check_highlighted_words(edited, gold) == 0.0  # text changed
    assert check_highlighted_words(None, gold) == 0.0
    assert check_highlighted_words(str(tmp_path / "missing.odt"), gold) == 0.0


def test_check_highlighted_words_docx(make):
    gold = make("gold.docx", "Please call the candidate.")
    assert check_highlighted_words(make("clean.docx", [("Please call the candidate.", {})]), gold) == 1.0
    marked = make("marked.docx", [("Please ", {}), ("call", {"highlight_color": WD_COLOR_INDEX.YELLOW}), (" the candidate.", {})])
    assert check_highlighted_words(marked, gold) == 0.0


# --- strike-through, colours, italics ------------------------------------------------------------


def test_evaluate_strike_through_last_paragraph(make):
    gold = make("gold.docx", "Intro", "Redundant closing words", "")
    struck = make("struck.docx", "Intro", [("Redundant ", {"strike": True}), ("closing words", {"strike": True})], "")
    assert evaluate_strike_through_last_paragraph(struck, gold) == 1.0
    double = make("double.docx", "Intro", [("Redundant closing words", {"double_strike": True})])
    assert evaluate_strike_through_last_paragraph(double, gold) == 1.0
    partial = make("partial.docx", "Intro", [("Redundant ", {"strike": True}), ("closing words", {})], "")
    assert evaluate_strike_through_last_paragraph(partial, gold) == 0.0
    # the trailing empty paragraph does not make an untouched document pass
    assert evaluate_strike_through_last_paragraph(make("untouched.docx", "Intro", "Redundant closing words", ""), gold) == 0.0
    wrong = make("wrong.docx", [("Intro", {"strike": True})], "Redundant closing words")
    assert evaluate_strike_through_last_paragraph(wrong, gold) == 0.0
    changed = make("changed.docx", "Intro", [("Other words", {"strike": True})])
    assert evaluate_strike_through_last_paragraph(changed, gold) == 0.0
    assert evaluate_strike_through_last_paragraph(None, gold) == 0.0


def _word_table(words_and_colors):
    def build(document):
        table = document.add_table(rows=1, cols=len(words_and_colors))
        for cell, runs in zip(table.rows[0].cells, words_and_colors):
            paragraph = cell.paragraphs[0]
            for text, color in runs:
                run = paragraph.add_run(text)
                if color is not None:
                    run.font.color.rgb = RGBColor.from_string(color)

    return build


def test_evaluate_colored_words_in_tables(make):
    plain = [[("apple", None)], [("the", None), (" egg", None)], [("dog", None)]]
    gold = make("gold.docx", "Words", build=_word_table(plain))
    good = [[("apple", "FF0000")], [("the", "0000FF"), (" egg", "FF0000")], [("dog", "0000FF")]]
    assert evaluate_colored_words_in_tables(make("good.docx", "Words", build=_word_table(good)), gold) == 1.0
    near = [[("apple", "FE0101")], [("the", "0000FE"), (" egg", "FF0000")], [("dog", "0101FF")]]
    assert evaluate_colored_words_in_tables(make("near.docx", "Words", build=_word_table(near)), gold) == 1.0
    swapped = [[("apple", "0000FF")], [("the", "0000FF"), (" egg", "FF0000")], [("dog", "0000FF")]]
    assert evaluate_colored_words_in_tables(make("swapped.docx", "Words", build=_word_table(swapped)), gold) == 0.0
    # a word split over runs is judged by its first letter; "e" + "gg" in two runs must both be red
    split = [[("apple", "FF0000")], [("the ", "0000FF"), ("e", "FF0000"), ("gg", "0000FF")], [("dog", "0000FF")]]
    assert evaluate_colored_words_in_tables(make("split.docx", "Words", build=_word_table(split)), gold) == 0.0
    split_ok = [[("ap", "FF0000"), ("ple", "FF0000")], [("the ", "0000FF"), ("e", "FF0000"), ("gg", "FF0000")], [("dog", "0000FF")]]
    assert evaluate_colored_words_in_tables(make("split_ok.docx", "Words", build=_word_table(split_ok)), gold) == 1.0
    uncoloured = [[("apple", "FF0000")], [("the", None), (" egg", "FF0000")], [("dog", "0000FF")]]
    assert evaluate_colored_words_in_tables(make("auto.docx", "Words", build=_word_table(uncoloured)), gold) == 0.0
    dark_red = [[("apple", "CC0000")], [("the", "0000FF"), (" egg", "FF0000")], [("dog", "0000FF")]]
    dark = make("dark.docx", "Words", build=_word_table(dark_red))
    assert evaluate_colored_words_in_tables(dark, gold) == 0.0
    assert evaluate_colored_words_in_tables(dark, gold, threshold=20) == 1.0
    other_text = make("other.docx", "Words", build=_word_table([[("apple", "FF0000")]]))
    assert evaluate_colored_words_in_tables(other_text, gold) == 0.0
    assert evaluate_colored_words_in_tables(None, gold) == 0.0
    with pytest.raises(UserError, match="threshold"):
        evaluate_colored_words_in_tables(dark, gold, threshold="3.5")


def test_check_italic_font_size_14(make):
    gold = make("gold.docx", "Normal and slanted words here")
    size = Pt(14)
    good = make("good.docx", [("Normal and ", {}), ("slanted", {"italic": True, "size": size}), (" words here", {})])
    assert check_italic_font_size_14(good, gold) == 1.0
    twelve = make("twelve.docx", [("Normal and ", {}), ("slanted", {"italic": True, "size": Pt(12)}), (" words here", {})])
    assert check_italic_font_size_14(twelve, gold) == 0.0
    unset = make("unset.docx", [("Normal and ", {}), ("slanted", {"italic": True}), (" words here", {})])
    assert check_italic_font_size_14(unset, gold) == 0.0
    # italic from a character style counts as italic
    def emphasis(document):
        style = document.styles.add_style("Slant", 2)  # WD_STYLE_TYPE.CHARACTER
        style.font.italic = True
        document.paragraphs[0].runs[1].style = style

    styled = make("styled.docx", [("Normal and ", {}), ("slanted", {}), (" words here", {})], build=emphasis)
    assert check_italic_font_size_14(styled, gold) == 0.0
    assert check_italic_font_size_14(make("noitalic.docx", "Normal and slanted words here"), gold) == 0.0
    changed = make("changed.docx", [("Other", {"italic": True, "size": size})])
    assert check_italic_font_size_14(changed, gold) == 0.0
    assert check_italic_font_size_14(None, gold) == 0.0


# --- records, lines, references, places ------------------------------------------------------


def test_compare_unique_train_records(make, tmp_path):
    original = make(
        "original.docx", "08:00:00, T1, S1, 1", "08:05:00, T2, S1, 2", "08:09:00, T1, S2, 1", "09:00:00, T3, S2, 1",
    )
    gold = make("gold.docx", "08:00:00, T1, S1, 1", "08:05:00, T2, S1, 2", "09:00:00, T3, S2, 1")
    expected = [gold, original]
    assert compare_unique_train_records(make("a.docx", "08:00:00, T1, S1, 1", "08:05:00, T2, S1, 2", "", "09:00:00, T3, S2, 1"), expected) == 1.0
    # keeping the other T1 record is as good
    assert compare_unique_train_records(make("b.docx", "08:05:00, T2, S1, 2", "08:09:00, T1, S2, 1", "09:00:00, T3, S2, 1"), expected) == 1.0
    assert compare_unique_train_records(original, expected) == 0.0  # duplicate T1
    assert compare_unique_train_records(make("c.docx", "08:00:00, T1, S1, 1", "08:05:00, T2, S1, 2"), expected) == 0.0
    edited = make("d.docx", "08:00:00, T1, S1, 1", "08:05:00, T2, S1, 9", "09:00:00, T3, S2, 1")
    assert compare_unique_train_records(edited, expected) == 0.0  # a line not in the original
    assert compare_unique_train_records(None, expected) == 0.0
    assert compare_unique_train_records(gold, [gold, str(tmp_path / "missing.docx")]) == 0.0
    with pytest.raises(UserError, match="gold, original"):
        compare_unique_train_records(gold, gold)


def test_compare_docx_files_and_ignore_new_lines(make):
    gold = make("gold.docx", "First response about the Iliad.", "", "Second response.")
    assert compare_docx_files_and_ignore_new_lines(make("a.docx", "First response about the Iliad.", "Second response."), gold, ignore_blanks=False) == 1.0
    assert compare_docx_files_and_ignore_new_lines(make("b.docx", "First response about the Iliad.", "", "", "Second response."), gold, ignore_blanks=False) == 1.0
    merged = make("c.docx", "First response about the Iliad. Second response.")
    assert compare_docx_files_and_ignore_new_lines(merged, gold, ignore_blanks=False) == 0.0
    assert compare_docx_files_and_ignore_new_lines(merged, gold) == 1.0  # whitespace collapsed
    assert compare_docx_files_and_ignore_new_lines(make("d.docx", "First response.", "Second response."), gold) == 0.0
    assert compare_docx_files_and_ignore_new_lines(None, gold) == 0.0


def test_compare_references(make):
    refs = ["Smith, J. (2020). A study. Journal, 1(2), 3-4.", "Doe, A. (2019). Another study. Press."]
    gold = make("gold.docx", "Body text", "References", *refs)
    assert compare_references(make("same.docx", "Body", "References", refs[0], "", refs[1]), gold) == 1.0
    sloppy = make("sloppy.docx", "Body", "References", refs[0].replace("(2020)", "2020"), refs[1])
    score = compare_references(sloppy, gold, content_only=True, reference_base_result=0.6)
    assert 0.8 < score < 1.0
    rescaled = compare_references(sloppy, gold)  # base 0.5
    assert rescaled > score  # a lower base leaves more of the similarity
    assert compare_references(make("one.docx", "Body", "References", refs[0]), gold) == 0.0
    assert compare_references(make("none.docx", "Body", *refs), gold) == 0.0
    assert compare_references(make("far.docx", "References", "x", "y"), gold) == 0.0  # below the base
    bibliography = make("bib.docx", "Bibliography", *refs)
    assert compare_references(bibliography, make("bib2.docx", "Bibliography", *refs), reference_indicator="Bibliography") == 1.0
    assert compare_references(make("e.docx", "no heading"), make("f.docx", "none either")) == 1.0
    assert compare_references(None, gold) == 0.0
    with pytest.raises(UserError, match="reference_base_result"):
        compare_references(gold, gold, reference_base_result=1)


def test_fuzzy_place_math(make):
    rules = {"expected": ["深圳市福田区正义街1号", "福田区振兴路108号", "深圳市福田区滨河大道2033号"]}
    exact = make("exact.docx", "深圳市福田区正义街1号", "福田区振兴路108号", "深圳市福田区滨河大道2033号")
    assert fuzzy_place_math(exact, rules) == 1.0
    five = make("five.docx", "深圳市福田区正义街1号", "福田区振兴路108号", "深圳市福田区滨河大道2033号", "福田区振兴路108号", "深圳市福田区正义街1号")
    assert fuzzy_place_math(five, rules) == 1.0
    assert fuzzy_place_math(five, {**rules, "count": 3}) == 0.0
    close = make("close.docx", "深圳市福田区正义街2号")
    assert 0.8 < fuzzy_place_math(close, rules) < 1.0
    assert fuzzy_place_math(make("wrong.docx", "北京市海淀区"), rules) < 0.3
    assert fuzzy_place_math(make("empty.docx", ""), rules) == 0.0
    assert fuzzy_place_math(None, rules) == 0.0
    with pytest.raises(UserError, match="expected"):
        fuzzy_place_math(exact, {"expected": "one"})
