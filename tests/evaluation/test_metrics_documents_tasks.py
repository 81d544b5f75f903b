"""Writer task metrics graded against a gold document (OSWorld's libreoffice_writer / multi_apps tasks)."""

import pytest
from docx.shared import Pt, RGBColor

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.documents.formatting import (
    check_highlighted_words,
    check_italic_font_size_14,
    compare_subscript_contains,
    evaluate_colored_words_in_tables,
    evaluate_strike_through_last_paragraph,
)
from mcpworld.evaluation.metrics.documents.text import (
    compare_docx_files_and_ignore_new_lines,
    compare_references,
    compare_unique_train_records,
    fuzzy_place_math,
)
from mcpworld.evaluation.metrics.odf import open_odt
from mcpworld.evaluation.registry import get_metric
from tests.helpers.documents import write_odt


@pytest.fixture
def make(make_docx):
    return make_docx


def test_registered():
    for name in [
        "compare_subscript_contains",
        "check_highlighted_words",
        "evaluate_strike_through_last_paragraph",
        "evaluate_colored_words_in_tables",
        "check_italic_font_size_14",
        "compare_unique_train_records",
        "compare_docx_files_and_ignore_new_lines",
        "compare_references",
        "fuzzy_place_math",
    ]:
        assert get_metric(name).__module__.startswith("mcpworld.evaluation.metrics.documents.")


# --- subscript ----------------------------------------------------------------------------------


# --- highlighting (.odt and .docx) -------------------------------------------------------------


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


# --- strike-through, colours, italics ------------------------------------------------------------


def _word_table(words_and_colors):
    def build(document):
        table = document.add_table(rows=1, cols=len(words_and_colors))
        for cell, runs in zip(table.rows[0].cells, words_and_colors, strict=True):
            paragraph = cell.paragraphs[0]
            for text, color in runs:
                run = paragraph.add_run(text)
                if color is not None:
                    run.font.color.rgb = RGBColor.from_string(color)

    return build


# --- records, lines, references, places ------------------------------------------------------


def test_compare_docx_files_and_ignore_new_lines(make):
    gold = make("gold.docx", "First response about the Iliad.", "", "Second response.")
    joined = make("a.docx", "First response about the Iliad.", "Second response.")
    assert compare_docx_files_and_ignore_new_lines(joined, gold, ignore_blanks=False) == 1.0
    spaced = make("b.docx", "First response about the Iliad.", "", "", "Second response.")
    assert compare_docx_files_and_ignore_new_lines(spaced, gold, ignore_blanks=False) == 1.0
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


# --- OSWorld's semantics (docs.py / general.py) ---------------------------------------------------


def test_compare_subscript_contains_runs_paired_by_index(make):
    sub = {"subscript": True}
    gold = make("gold.docx", [("H", {}), ("2", sub), ("O", {})])
    assert compare_subscript_contains(make("a.docx", [("H", {}), ("2", sub), ("O", {})]), gold) == 1.0
    # the same subscript at another run index does not pair (OSWorld pairs runs by index)
    assert compare_subscript_contains(make("b.docx", [("H", {}), ("", {}), ("2", sub), ("O", {})]), gold) == 0.0
    assert compare_subscript_contains(make("c.docx", "H2O"), gold) == 0.0
    assert compare_subscript_contains(None, gold) == 0.0


def test_check_highlighted_words_yellow_automatic_span_styles(tmp_path, make):
    body = '<text:p>Please <text:span text:style-name="{}">call</text:span> the candidate.</text:p>'
    gold = write_odt(tmp_path / "gold.odt", "<text:p>Please call the candidate.</text:p>")
    clean = write_odt(tmp_path / "clean.odt", body.format("T1"), automatic=_span_style("T1", None))
    assert check_highlighted_words(clean, gold) == 1.0
    yellow = write_odt(tmp_path / "yellow.odt", body.format("T1"), automatic=_span_style("T1", "#ffff00"))
    assert check_highlighted_words(yellow, gold) == 0.0
    # only exactly #ffff00 in an automatic style is seen, as in OSWorld
    green = write_odt(tmp_path / "green.odt", body.format("T1"), automatic=_span_style("T1", "#00ff00"))
    assert check_highlighted_words(green, gold) == 1.0
    named = write_odt(tmp_path / "named.odt", body.format("Marker"), common=_span_style("Marker", "#ffff00"))
    assert check_highlighted_words(named, gold) == 1.0
    edited = write_odt(tmp_path / "edited.odt", "<text:p>Please phone the candidate.</text:p>")
    assert check_highlighted_words(edited, gold) == 0.0
    assert check_highlighted_words(None, gold) == 0.0
    # a .docx is not OpenDocument: 0
    assert check_highlighted_words(make("a.docx", "x"), make("b.docx", "x")) == 0.0


def test_evaluate_strike_through_last_paragraph_very_last(make):
    s = {"strike": True}
    gold = make("gold.docx", "Intro", "Last words")
    assert evaluate_strike_through_last_paragraph(make("a.docx", "Intro", [("Last ", s), ("words", s)]), gold) == 1.0
    assert evaluate_strike_through_last_paragraph(make("b.docx", "Intro", [("Last ", s), ("words", {})]), gold) == 0.0
    assert evaluate_strike_through_last_paragraph(make("c.docx", "Intro", [("Last words", {"double_strike": True})]), gold) == 0.0
    # a trailing empty paragraph has no runs: passes, as in OSWorld
    trailing, trailing_gold = (make(name, "Intro", "Last words", "") for name in ("d.docx", "g2.docx"))
    assert evaluate_strike_through_last_paragraph(trailing, trailing_gold) == 1.0
    assert evaluate_strike_through_last_paragraph(make("e.docx", "Intro", [("Other", s)]), gold) == 0.0


def test_evaluate_colored_words_in_tables_first_letter_of_each_run(make):
    red, blue = RGBColor(255, 0, 0), RGBColor(0, 0, 255)

    def table(*runs):
        def build(d):
            p = d.add_table(rows=1, cols=1).cell(0, 0).paragraphs[0]
            for text, color in runs:
                r = p.add_run(text)
                if color is not None:
                    r.font.color.rgb = color

        return build

    gold = make("gold.docx", "Words")
    assert evaluate_colored_words_in_tables(make("a.docx", "Words", build=table(("apple ", red), ("tree", blue))), gold) == 1.0
    # a run is judged by its first letter only
    assert evaluate_colored_words_in_tables(make("b.docx", "Words", build=table(("apple tree", red))), gold) == 1.0
    assert evaluate_colored_words_in_tables(make("c.docx", "Words", build=table(("apple", blue))), gold) == 0.0
    assert evaluate_colored_words_in_tables(make("d.docx", "Words", build=table(("apple", None))), gold) == 0.0  # no colour
    assert evaluate_colored_words_in_tables(make("e.docx", "Words", build=table(("egg", RGBColor(250, 5, 5)))), gold) == 1.0
    assert evaluate_colored_words_in_tables(make("f.docx", "Words"), gold) == 1.0  # no table
    assert evaluate_colored_words_in_tables(make("g.docx", "Other", build=table(("egg", red))), gold) == 0.0


def test_check_italic_font_size_14_direct(make):
    gold = make("gold.docx", "Title text")
    it14 = {"italic": True, "size": Pt(14)}
    assert check_italic_font_size_14(make("a.docx", [("Title ", it14), ("text", {})]), gold) == 1.0
    assert check_italic_font_size_14(make("b.docx", [("Title ", {"italic": True}), ("text", {})]), gold) == 0.0
    assert check_italic_font_size_14(make("c.docx", "Title text"), gold) == 1.0  # no italics: passes, as in OSWorld
    assert check_italic_font_size_14(make("d.docx", [("Other", it14)]), gold) == 0.0


def test_compare_unique_train_records_lists(make):
    original = make("orig.docx", "10:00, T1, S1, P1", "10:05, T1, S2, P1", "10:10, T2, S3, P2")
    gold = make("gold.docx", "10:00, T1, S1, P1", "10:10, T2, S3, P2")
    ok = make("ok.docx", "10:05, T1, S2, P1", "10:10, T2, S3, P2")
    assert compare_unique_train_records(ok, [gold, original]) == 1.0
    assert compare_unique_train_records(ok, [gold, original, original]) == 1.0  # extra entries ignored
    assert compare_unique_train_records(ok, [gold]) == 0.0
    assert compare_unique_train_records(ok, gold) == 0.0
    assert compare_unique_train_records(original, [gold, original]) == 0.0


def test_fuzzy_place_math_three_words(make):
    rules = {"expected": ["福田区正义街1号", "福田区振兴路108号", "福田区香梅路2002-4号"]}
    three = make("a.docx", "福田区正义街1号", "福田区振兴路108号", "福田区香梅路2002-4号")
    assert fuzzy_place_math(three, rules) == 1.0
    five = make("b.docx", "福田区正义街1号", "福田区振兴路108号", "福田区香梅路2002-4号", "福田区正义街1号", "福田区振兴路108号")
    assert fuzzy_place_math(five, rules) == 0.0  # OSWorld requires exactly 3 words
    assert fuzzy_place_math(five, {**rules, "count": 5}) == 1.0
    assert fuzzy_place_math(make("c.docx", "福田区正义街1号"), rules) == 0.0
    assert fuzzy_place_math(None, rules) == 0.0
    with pytest.raises(UserError):
        fuzzy_place_math(three, {"expected": "x"})
