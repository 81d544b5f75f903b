"""audio_in_slide / background_image_in_slide on real pptx files written into the environment's home."""

from io import BytesIO
from pathlib import Path

import pytest
from lxml import etree
from PIL import Image
from pptx import Presentation
from pptx.opc.constants import RELATIONSHIP_TYPE as RT
from pptx.opc.package import Part
from pptx.opc.packuri import PackURI
from pptx.oxml.ns import qn
from pptx.util import Inches

from mcpworld.core.errors import UserError
from mcpworld.evaluation.getters.slides import audio_in_slide, background_image_in_slide
from mcpworld.evaluation.registry import GETTERS

WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(28)


def _png(color):
    buf = BytesIO()
    Image.new("RGB", (16, 9), color).save(buf, format="PNG")
    buf.seek(0)
    return buf


def deck(env, name, build) -> str:
    """Three slides; ``build(prs, slides)`` adds the media. Saved under ~/Desktop/<name>."""
    prs = Presentation()
    slides = [prs.slides.add_slide(prs.slide_layouts[6]) for _ in range(3)]
    for i, slide in enumerate(slides):
        slide.shapes.add_textbox(Inches(1), Inches(1), Inches(3), Inches(1)).text_frame.text = f"slide {i}"
    build(prs, slides)
    target = Path(env.resolve(f"~/Desktop/{name}"))
    target.parent.mkdir(parents=True, exist_ok=True)
    prs.save(str(target))
    return f"/home/user/Desktop/{name}"


def _embed_audio(prs, slide, data=WAV):
    part = Part(PackURI("/ppt/media/media1.wav"), "audio/x-wav", prs.part.package, data)
    slide.part.relate_to(part, RT.AUDIO)


def _background_picture(slide, color):
    _, rid = slide.part.get_or_add_image_part(_png(color))
    c_sld = slide.element.find(qn("p:cSld"))
    bg = etree.Element(qn("p:bg"))
    c_sld.insert(0, bg)
    bg_pr = etree.SubElement(bg, qn("p:bgPr"))
    fill = etree.SubElement(bg_pr, qn("a:blipFill"))
    etree.SubElement(fill, qn("a:blip")).set(qn("r:embed"), rid)
    etree.SubElement(bg_pr, qn("a:effectLst"))


def cfg(kind, path, index, dest="out.bin"):
    return {"type": kind, "ppt_file_path": path, "slide_index": index, "dest": dest}


def test_registered():
    assert GETTERS["audio_in_slide"] is audio_in_slide
    assert GETTERS["background_image_in_slide"] is background_image_in_slide


def test_audio_embedded(env):
    path = deck(env, "talk.pptx", lambda prs, s: _embed_audio(prs, s[0]))
    got = audio_in_slide(env, cfg("audio_in_slide", path, 0, "planet.wav"))
    assert Path(got).read_bytes() == WAV and Path(got).name == "planet.wav"
    assert audio_in_slide(env, cfg("audio_in_slide", path, 1)) is None  # no audio on slide 2
    assert audio_in_slide(env, cfg("audio_in_slide", path, 7)) is None  # no such slide


def test_audio_linked(env):
    env.write("~/Desktop/Baseball.mp3", "ID3 tune")
    linked = deck(
        env,
        "linked.pptx",
        lambda prs, s: s[0].part.relate_to("file:///home/user/Desktop/Baseball.mp3", RT.AUDIO, is_external=True),
    )
    assert Path(audio_in_slide(env, cfg("audio_in_slide", linked, "0"))).read_text() == "ID3 tune"
    relative = deck(env, "relative.pptx", lambda prs, s: s[0].part.relate_to("Baseball.mp3", RT.AUDIO, is_external=True))
    assert Path(audio_in_slide(env, cfg("audio_in_slide", relative, 0))).read_text() == "ID3 tune"
    gone = deck(env, "gone.pptx", lambda prs, s: s[0].part.relate_to("file:///home/user/nothing.mp3", RT.AUDIO, is_external=True))
    assert audio_in_slide(env, cfg("audio_in_slide", gone, 0)) is None


def test_slides_counted_in_presentation_order(env):
    def build(prs, slides):
        _embed_audio(prs, slides[2])
        ids = prs.slides._sldIdLst
        ids.insert(0, ids[2])  # slide3.xml is now shown first

    path = deck(env, "moved.pptx", build)
    assert Path(audio_in_slide(env, cfg("audio_in_slide", path, 0))).read_bytes() == WAV
    assert audio_in_slide(env, cfg("audio_in_slide", path, 2)) is None


def test_background_image(env):
    path = deck(env, "bg.pptx", lambda prs, s: _background_picture(s[1], (0, 128, 0)))
    got = background_image_in_slide(env, cfg("background_image_in_slide", path, 1, "landscape.png"))
    with Image.open(got) as img:
        assert img.getpixel((0, 0)) == (0, 128, 0)
    assert background_image_in_slide(env, cfg("background_image_in_slide", path, 0)) is None  # plain background
    # a picture on the slide is not its background
    on_slide = deck(env, "pic.pptx", lambda prs, s: s[1].shapes.add_picture(_png((9, 9, 9)), 0, 0))
    assert background_image_in_slide(env, cfg("background_image_in_slide", on_slide, 1)) is None


def test_missing_or_broken_presentation_and_bad_config(env):
    assert audio_in_slide(env, cfg("audio_in_slide", "/home/user/Desktop/none.pptx", 0)) is None
    env.write("~/Desktop/broken.pptx", "not a zip")
    assert background_image_in_slide(env, cfg("background_image_in_slide", "/home/user/Desktop/broken.pptx", 0)) is None
    with pytest.raises(UserError, match="slide_index"):
        audio_in_slide(env, cfg("audio_in_slide", "/home/user/Desktop/none.pptx", "first"))
    with pytest.raises(UserError, match="ppt_file_path"):
        audio_in_slide(env, {"type": "audio_in_slide", "slide_index": 0, "dest": "x"})
