from pathlib import Path

import pytest
from lxml import etree
from pptx import Presentation
from pptx.dml.color import RGBColor
from pptx.enum.text import PP_ALIGN
from pptx.oxml.ns import qn
from pptx.util import Emu, Inches, Pt

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.slides.checks import (
    check_slide_numbers_color,
    check_slide_orientation_Portrait,
    check_strikethrough,
    check_transition,
)
from mcpworld.evaluation.metrics.slides.compare import compare_pptx_files
from mcpworld.evaluation.registry import METRICS

A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"
P_NS = "http://schemas.openxmlformats.org/presentationml/2006/main"


def build_deck(path: Path, **tweak) -> str:
    """A two-slide deck; keyword arguments change one property for the mismatch tests."""
    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[5])  # title only
    slide.shapes.title.text = tweak.get("title", "Quarterly report")
    left = tweak.get("left", Inches(1))
    box = slide.shapes.add_textbox(left, Inches(2), Inches(6), Inches(2))
    para = box.text_frame.paragraphs[0]
    para.alignment = tweak.get("align")
    for text in tweak.get("runs", ["Revenue ", "grew"]):
        run = para.add_run()
        run.text = text
        run.font.name = tweak.get("font", "Arial")
        run.font.size = Pt(tweak.get("size", 18))
        run.font.bold = tweak.get("bold", True)
        if tweak.get("color", "FF0000"):
            run.font.color.rgb = RGBColor.from_string(tweak.get("color", "FF0000"))
        if tweak.get("strike"):
            run._r.get_or_add_rPr().set("strike", "sngStrike")
    second = box.text_frame.add_paragraph()
    second.text = "details"
    second.level = tweak.get("level", 1)
    if tweak.get("notes"):
        slide.notes_slide.notes_text_frame.text = tweak["notes"]
    if tweak.get("background"):
        slide.background.fill.solid()
        slide.background.fill.fore_color.rgb = RGBColor.from_string(tweak["background"])
    table = slide.shapes.add_table(2, 2, Inches(1), Inches(4.5), Inches(4), Inches(1)).table
    for r in range(2):
        for c in range(2):
            table.cell(r, c).text = tweak.get("cell", "x") if (r, c) == (1, 1) else f"{r}{c}"
    group = slide.shapes.add_group_shape()
    inner = group.shapes.add_textbox(Inches(7), Inches(5), Inches(2), Inches(1))
    inner.text_frame.text = tweak.get("grouped", "inside")
    for _ in range(tweak.get("extra_slides", 1)):
        extra = prs.slides.add_slide(prs.slide_layouts[6])
        extra.shapes.add_textbox(Inches(1), Inches(1), Inches(2), Inches(1)).text_frame.text = "end"
    prs.save(path)
    return str(path)


@pytest.fixture
def deck(tmp_path):
    counter = iter(range(1000))

    def make(**tweak) -> str:
        return build_deck(tmp_path / f"deck{next(counter)}.pptx", **tweak)

    return make


def test_registered():
    for name in (
        "compare_pptx_files",
        "check_slide_numbers_color",
        "check_strikethrough",
        "check_transition",
        "check_slide_orientation_Portrait",
    ):
        assert name in METRICS


def test_compare_identical(deck):
    assert compare_pptx_files(deck(), deck()) == 1.0
    # run splits differ but read alike: OSWorld pairs runs, so only examine_run_count=False passes
    split, joined = deck(runs=["Revenue ", "grew"]), deck(runs=["Revenue grew"])
    assert compare_pptx_files(split, joined) == 0.0
    assert compare_pptx_files(split, joined, examine_run_count=False) == 1.0
    # mcpworld's own normalize_runs option (OSWorld ignores it) pairs them too
    assert compare_pptx_files(split, joined, normalize_runs=True) == 1.0


@pytest.mark.parametrize(
    "tweak, option, extra",
    [
        # text changes also change the slide-wide bullet list OSWorld compares
        ({"title": "Annual report"}, "examine_text", {"examine_bullets": False}),
        ({"runs": ["Revenue ", "fell"]}, "examine_text", {"examine_bullets": False}),
        ({"font": "Calibri"}, "examine_font_name", {}),
        ({"size": 20}, "examine_font_size", {}),
        ({"bold": False}, "examine_font_bold", {}),
        ({"color": "0000FF"}, "examine_color_rgb", {}),
        ({"strike": True}, "examine_strike_through", {}),
        ({"align": PP_ALIGN.CENTER}, "examine_alignment", {}),
        ({"level": 2}, "examine_indent", {}),
        ({"left": Inches(2)}, "examine_shape", {}),
        ({"notes": "speak slowly"}, "examine_note", {}),
        ({"background": "00FF00"}, "examine_background_color", {}),
        ({"extra_slides": 2}, "examine_number_of_slides", {}),
    ],
)
def test_compare_each_check(deck, tweak, option, extra):
    gold, result = deck(), deck(**tweak)
    assert compare_pptx_files(result, gold) == 0.0
    assert compare_pptx_files(result, gold, **{option: False, **extra}) == 1.0


def test_compare_osworld_leniencies(deck):
    gold = deck()
    # colours are compared only when both runs have an RGB colour (OSWorld)
    assert compare_pptx_files(deck(color=None), gold) == 1.0
    # paragraph levels 0 and 1 look alike
    assert compare_pptx_files(deck(level=0), gold) == 1.0
    # options OSWorld does not know are ignored, as there (real tasks carry "_note")
    assert compare_pptx_files(gold, gold, _note="doc", examine_shape_lenient_height=True, enable_debug=False) == 1.0


def test_compare_tables_groups_tolerance_alignment(deck):
    gold = deck()
    assert compare_pptx_files(deck(cell="y"), gold) == 0.0
    assert compare_pptx_files(deck(cell="y"), gold, examine_text=False, examine_bullets=False) == 1.0
    assert compare_pptx_files(deck(grouped="outside"), gold) == 0.0
    # within the relative tolerance (0.5%) a shape has not moved
    assert compare_pptx_files(deck(left=Emu(Inches(1) + 2000)), gold) == 1.0
    assert compare_pptx_files(deck(left=Emu(Inches(1) + 2000)), gold, approximately_tolerance=0.0) == 0.0
    # unset alignment reads as left
    assert compare_pptx_files(deck(align=PP_ALIGN.LEFT), gold) == 1.0
    assert compare_pptx_files(deck(align=PP_ALIGN.RIGHT), deck(align=PP_ALIGN.RIGHT)) == 1.0


def test_compare_image_size_and_modify_height(deck, tmp_path):
    from PIL import Image

    png = tmp_path / "pic.png"
    Image.new("RGB", (20, 10), "red").save(png)

    def pictured(name, left, width):
        prs = Presentation()
        prs.slides.add_slide(prs.slide_layouts[6]).shapes.add_picture(str(png), left, Inches(1), width=width)
        prs.save(tmp_path / name)
        return str(tmp_path / name)

    gold = pictured("g.pptx", Inches(1), Inches(4))
    moved = pictured("m.pptx", Inches(3), Inches(4))
    resized = pictured("r.pptx", Inches(1), Inches(2))
    # OSWorld's examine_shape skips shapes without text on both sides, so a moved picture passes
    assert compare_pptx_files(moved, gold) == 1.0
    assert compare_pptx_files(moved, gold, examine_shape=False, examine_image_size=True) == 1.0
    assert compare_pptx_files(resized, gold, examine_shape=False, examine_image_size=True) == 0.0
    assert compare_pptx_files(moved, gold, examine_shape=False, examine_modify_height=True) == 1.0
    assert compare_pptx_files(resized, gold, examine_shape=False, examine_modify_height=True) == 0.0


def test_compare_task_specific_positions(tmp_path):
    """OSWorld's hard-coded position toggles are honoured (real tasks use them)."""
    from PIL import Image

    png = tmp_path / "pic.png"
    Image.new("RGB", (20, 10), "red").save(png)

    def two_slides(name, top):
        prs = Presentation()
        prs.slides.add_slide(prs.slide_layouts[6])
        prs.slides.add_slide(prs.slide_layouts[6]).shapes.add_picture(str(png), Inches(1), top, width=Inches(2))
        prs.save(tmp_path / name)
        return str(tmp_path / name)

    gold = two_slides("g.pptx", Inches(4))
    raised = two_slides("up.pptx", Inches(1))  # top 914400 EMU: above the gold and under 1980000
    options = {"examine_shape": False, "examine_top_position": True}
    assert compare_pptx_files(raised, gold, **options) == 1.0
    assert compare_pptx_files(gold, gold, **options) == 0.0


def test_compare_missing_files(deck, tmp_path):
    empty = tmp_path / "empty.pptx"
    Presentation().save(empty)  # what Presentation(None) would have opened: the default template
    junk = tmp_path / "junk.pptx"
    junk.write_text("not a zip")
    assert compare_pptx_files(None, str(empty)) == 0.0
    assert compare_pptx_files(str(empty), None) == 0.0
    assert compare_pptx_files(str(tmp_path / "nope.pptx"), deck()) == 0.0
    assert compare_pptx_files(str(junk), deck()) == 0.0


# --- slide numbers ----------------------------------------------------------------------------


def _solid(rpr, hex_color):
    fill = etree.SubElement(rpr, f"{{{A_NS}}}solidFill")
    etree.SubElement(fill, f"{{{A_NS}}}srgbClr", val=hex_color)


def numbered_deck(path: Path, field_color=None, master_color=None, numbers=True) -> str:
    prs = Presentation()
    for _ in range(2):
        slide = prs.slides.add_slide(prs.slide_layouts[6])
        if not numbers:
            continue
        para = slide.shapes.add_textbox(Inches(8), Inches(7), Inches(1), Inches(0.4)).text_frame.paragraphs[0]
        fld = etree.SubElement(para._p, f"{{{A_NS}}}fld", id="{B6F15528-21DE-4FAA-801E-634DDDAF4B2B}", type="slidenum")
        rpr = etree.SubElement(fld, f"{{{A_NS}}}rPr", lang="en-US")
        if field_color:
            _solid(rpr, field_color)
        etree.SubElement(fld, f"{{{A_NS}}}t").text = str(len(prs.slides))
    if master_color:
        for ph in prs.slide_master.placeholders:
            for fld in ph.element.iter(qn("a:fld")):
                if fld.get("type") == "slidenum":
                    _solid(fld.find(qn("a:rPr")), master_color)
    prs.save(path)
    return str(path)


def master_number_deck(path: Path, master_color=None, number_text="3") -> str:
    """A slide with a text box reading ``number_text``; the master's number placeholder reads <number>."""
    prs = Presentation()
    for ph in prs.slide_master.placeholders:
        if "SLIDE_NUMBER" in str(ph.placeholder_format.type):
            ph.text_frame.text = "<number>"
            if master_color:
                ph.text_frame.paragraphs[0].font.color.rgb = RGBColor.from_string(master_color)
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    slide.shapes.add_textbox(0, 0, Inches(1), Inches(1)).text_frame.text = number_text
    prs.save(path)
    return str(path)


def test_check_slide_numbers_color(tmp_path):
    # OSWorld: a shape with digits must exist; the master's "<number>" placeholder colour decides
    assert check_slide_numbers_color(master_number_deck(tmp_path / "a.pptx", "FF0000")) == 1.0
    assert check_slide_numbers_color(master_number_deck(tmp_path / "b.pptx", "0000FF")) == 0.0
    assert check_slide_numbers_color(master_number_deck(tmp_path / "c.pptx")) == 0.0  # no RGB colour
    assert check_slide_numbers_color(master_number_deck(tmp_path / "d.pptx", "FF0000", number_text="x")) == 0.0
    assert check_slide_numbers_color(None) == 0.0
    assert check_slide_numbers_color(str(tmp_path / "missing.pptx")) == 0.0


# --- strikethrough ----------------------------------------------------------------------------


def struck_deck(path: Path, struck: dict[int, str | None]) -> str:
    """One slide, one text box; paragraph i's runs get strike=struck[i] (None: attribute absent)."""
    prs = Presentation()
    frame = prs.slides.add_slide(prs.slide_layouts[6]).shapes.add_textbox(0, 0, Inches(5), Inches(3)).text_frame
    for i, value in struck.items():
        para = frame.paragraphs[0] if i == 0 else frame.add_paragraph()
        for text in (f"item {i} ", "done"):
            run = para.add_run()
            run.text = text
            if value:
                run._r.get_or_add_rPr().set("strike", value)
    prs.save(path)
    return str(path)


def test_check_strikethrough(tmp_path):
    rules = {"slide_index_s": [0], "shape_index_s": [0], "paragraph_index_s": [0, 1]}
    assert check_strikethrough(struck_deck(tmp_path / "a.pptx", {0: "sngStrike", 1: "dblStrike", 2: None}), rules) == 1.0
    assert check_strikethrough(struck_deck(tmp_path / "b.pptx", {0: "sngStrike", 1: None, 2: None}), rules) == 0.0
    # as OSWorld: the mere presence of the attribute on the first run counts, even noStrike
    assert check_strikethrough(struck_deck(tmp_path / "c.pptx", {0: "sngStrike", 1: "noStrike"}), rules) == 1.0
    assert check_strikethrough(struck_deck(tmp_path / "d.pptx", {0: "sngStrike"}), rules) == 0.0  # no paragraph 1
    assert check_strikethrough(None, rules) == 0.0
    with pytest.raises(UserError, match="paragraph_index_s"):
        check_strikethrough(None, {"slide_index_s": [0], "shape_index_s": [0]})
    with pytest.raises(UserError, match="shape_index_s"):
        check_strikethrough(None, {**rules, "shape_index_s": 0})


# --- transitions ------------------------------------------------------------------------------


def transition_deck(path: Path, kind: str | None, alternate: bool = False, reorder: bool = False) -> str:
    """Two slides; the transition goes on the second slide part created (slide2.xml)."""
    prs = Presentation()
    slides = [prs.slides.add_slide(prs.slide_layouts[6]) for _ in range(2)]
    if kind:
        transition = etree.Element(f"{{{P_NS}}}transition", nsmap={"p": P_NS})
        etree.SubElement(transition, f"{{{P_NS}}}{kind}")
        if alternate:  # PowerPoint's shape: mc:AlternateContent/mc:Fallback/p:transition
            mc = "http://schemas.openxmlformats.org/markup-compatibility/2006"
            wrapper = etree.SubElement(slides[1].element, f"{{{mc}}}AlternateContent", nsmap={"mc": mc})
            etree.SubElement(wrapper, f"{{{mc}}}Fallback").append(transition)
        else:
            slides[1].element.append(transition)
    if reorder:  # show slide2.xml first
        id_list = prs.slides._sldIdLst
        first = id_list[0]
        id_list.remove(first)
        id_list.append(first)
    prs.save(path)
    return str(path)


def test_check_transition(tmp_path):
    fade = transition_deck(tmp_path / "a.pptx", "fade")
    assert check_transition(fade, {"slide_idx": 1, "transition_type": "fade"}) == 1.0
    assert check_transition(fade, {"slide_idx": 1, "transition_type": "dissolve"}) == 0.0
    assert check_transition(fade, {"slide_idx": 0, "transition_type": "fade"}) == 0.0
    assert check_transition(fade, {"slide_idx": 5, "transition_type": "fade"}) == 0.0
    alternate = transition_deck(tmp_path / "b.pptx", "dissolve", alternate=True)
    assert check_transition(alternate, {"slide_idx": 1, "transition_type": "dissolve"}) == 1.0
    assert check_transition(alternate, {"slide_idx": 1, "transition_type": "Dissolve"}) == 0.0  # case-sensitive
    # as OSWorld: the slide is the part slide<idx+1>.xml, not the idx-th in presentation order
    reordered = transition_deck(tmp_path / "c.pptx", "push", reorder=True)
    assert check_transition(reordered, {"slide_idx": 1, "transition_type": "push"}) == 1.0
    assert check_transition(reordered, {"slide_idx": 0, "transition_type": "push"}) == 0.0
    assert check_transition(None, {"slide_idx": 0, "transition_type": "fade"}) == 0.0
    with pytest.raises(UserError, match="transition_type"):
        check_transition(fade, {"slide_idx": 0})
    with pytest.raises(UserError, match="slide_idx"):
        check_transition(fade, {"slide_idx": "first", "transition_type": "fade"})


# --- orientation ------------------------------------------------------------------------------


def test_check_slide_orientation_portrait(tmp_path):
    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[6])
    prs.save(tmp_path / "landscape.pptx")
    prs.slide_width, prs.slide_height = Inches(7.5), Inches(10)
    prs.save(tmp_path / "portrait.pptx")
    assert check_slide_orientation_Portrait(str(tmp_path / "portrait.pptx")) == 1.0
    assert check_slide_orientation_Portrait(str(tmp_path / "landscape.pptx")) == 0.0
    assert check_slide_orientation_Portrait(None) == 0.0
    (tmp_path / "bad.pptx").write_bytes(b"PK\x03\x04 truncated")
    assert check_slide_orientation_Portrait(str(tmp_path / "bad.pptx")) == 0.0


# --- picture stretch, background colour, slide-number colour family ----------------------------


def _png_bytes(color, size=(40, 20)):
    from io import BytesIO

    from PIL import Image

    buf = BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    buf.seek(0)
    return buf


def picture_deck(path: Path, geometry=None, color=(200, 30, 30), extra=False) -> str:
    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    if extra:
        slide.shapes.add_picture(_png_bytes((0, 0, 255)), Inches(0), Inches(0), Inches(1), Inches(1))
    left, top, width, height = geometry or (Inches(2), Inches(2), Inches(4), Inches(2))
    slide.shapes.add_picture(_png_bytes(color), left, top, width, height)
    prs.save(path)
    return str(path)


def test_check_image_stretch_and_center(tmp_path):
    from mcpworld.evaluation.metrics.slides.checks import check_image_stretch_and_center

    original = picture_deck(tmp_path / "original.pptx")
    w, h = Presentation(original).slide_width, Presentation(original).slide_height
    full = picture_deck(tmp_path / "full.pptx", (0, 0, w, h))
    assert check_image_stretch_and_center(full, original) == 1.0
    nearly = picture_deck(tmp_path / "nearly.pptx", (Inches(0.2), Inches(0.1), w - Inches(0.4), h - Inches(0.2)))
    assert check_image_stretch_and_center(nearly, original) == 1.0
    # the stretched copy may sit beside another picture
    assert check_image_stretch_and_center(picture_deck(tmp_path / "two.pptx", (0, 0, w, h), extra=True), original) == 1.0
    assert check_image_stretch_and_center(original, original) == 0.0  # untouched
    off_centre = picture_deck(tmp_path / "off.pptx", (Inches(1.5), 0, w, h))
    assert check_image_stretch_and_center(off_centre, original) == 0.0
    proportional = picture_deck(tmp_path / "prop.pptx", (0, Inches(1.75), w, Inches(4)))  # width only
    assert check_image_stretch_and_center(proportional, original) == 0.0
    other_image = picture_deck(tmp_path / "other.pptx", (0, 0, w, h), color=(10, 200, 10))
    assert check_image_stretch_and_center(other_image, original) == 0.0
    assert check_image_stretch_and_center(None, original) == 0.0
    assert check_image_stretch_and_center(full, str(tmp_path / "missing.pptx")) == 0.0


def background_deck(path: Path, slide_colors, master_color=None) -> str:
    prs = Presentation()
    if master_color:
        prs.slide_master.background.fill.solid()
        prs.slide_master.background.fill.fore_color.rgb = RGBColor.from_string(master_color)
    for color in slide_colors:
        slide = prs.slides.add_slide(prs.slide_layouts[6])
        if color:
            slide.background.fill.solid()
            slide.background.fill.fore_color.rgb = RGBColor.from_string(color)
    prs.save(path)
    return str(path)


def test_evaluate_presentation_fill_to_rgb_distance(tmp_path):
    from mcpworld.evaluation.metrics.slides.checks import evaluate_presentation_fill_to_rgb_distance as fill_distance

    rules = {"rgb": [0, 0, 255], "original_rgb": [255, 255, 255]}
    assert fill_distance(background_deck(tmp_path / "blue.pptx", ["0000FF", "0000FF"]), rules) == 1.0
    assert fill_distance(background_deck(tmp_path / "master.pptx", [None, None], master_color="0000FF"), rules) == 1.0
    assert fill_distance(background_deck(tmp_path / "white.pptx", ["FFFFFF", "FFFFFF"]), rules) == 0.0
    assert fill_distance(background_deck(tmp_path / "none.pptx", [None]), rules) == 0.0
    assert fill_distance(background_deck(tmp_path / "half.pptx", ["0000FF", "FFFFFF"]), rules) == 0.5
    navy = fill_distance(background_deck(tmp_path / "navy.pptx", ["000080"]), rules)
    assert navy == pytest.approx(1 - 127 / (3 * 255**2) ** 0.5)
    # without original_rgb, white is just far from blue
    assert fill_distance(background_deck(tmp_path / "white2.pptx", ["FFFFFF"]), {"rgb": [0, 0, 255]}) == pytest.approx(
        1 - (2 * 255**2) ** 0.5 / (3 * 255**2) ** 0.5
    )
    assert fill_distance(None, rules) == 0.0
    with pytest.raises(UserError, match="rgb"):
        fill_distance(None, {"rgb": "blue"})


def test_check_page_number_colors(tmp_path):
    from mcpworld.evaluation.metrics.slides.checks import check_page_number_colors

    red = {"color": "red"}
    # OSWorld reads only slideMaster1.xml: the slides' own number colours do not count
    assert check_page_number_colors(numbered_deck(tmp_path / "a.pptx", master_color="C00000"), red) == 1.0
    assert check_page_number_colors(numbered_deck(tmp_path / "b.pptx", master_color="FF0000", numbers=False), red) == 1.0
    assert check_page_number_colors(numbered_deck(tmp_path / "c.pptx", field_color="E02010"), red) == 0.0
    assert check_page_number_colors(numbered_deck(tmp_path / "d.pptx", master_color="0000FF"), {"color": "blue"}) == 1.0
    assert check_page_number_colors(numbered_deck(tmp_path / "d.pptx", master_color="0000FF"), red) == 0.0
    assert check_page_number_colors(numbered_deck(tmp_path / "e.pptx", master_color="FFD0D0"), red) == 0.0  # pale pink
    assert check_page_number_colors(None, red) == 0.0
    with pytest.raises(UserError, match="color"):
        check_page_number_colors(None, {"color": "purple"})
