"""compare_image_text: Tesseract reading rendered terminal text (the engine comes from `make apt`)."""

import shutil

import pytest
from PIL import Image, ImageDraw, ImageFont

from mcpworld.core.errors import InfraError, UserError
from mcpworld.evaluation.metrics import ocr
from mcpworld.evaluation.metrics.ocr import compare_image_text
from mcpworld.evaluation.registry import METRICS

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract-ocr is not installed (make apt)")


def terminal(tmp_path, name, lines) -> str:
    """A dark terminal window with light monospace text, like a screenshot after running a command."""
    font = ImageFont.truetype(FONT, 15)
    img = Image.new("RGB", (760, 30 + 22 * len(lines)), (48, 10, 36))
    draw = ImageDraw.Draw(img)
    for i, (text, color) in enumerate(lines):
        draw.text((8, 8 + 22 * i), text, font=font, fill=color)
    path = tmp_path / name
    img.save(path)
    return str(path)


def test_registered():
    assert METRICS["compare_image_text"] is compare_image_text


@needs_tesseract
def test_reads_the_command_and_its_output(tmp_path):
    shot = terminal(
        tmp_path,
        "ls.png",
        [
            ("user@user-virtual-machine:~$ ls", (255, 255, 255)),
            ("Desktop    Documents  Downloads  Music  Pictures  Public  Templates  Videos", (110, 150, 255)),
        ],
    )
    # Tesseract, like EasyOCR, may read "ls" as "1s": the task accepts either
    assert max(compare_image_text(shot, {"type": "text", "text": t}) for t in ("ls", "1s")) == 1.0
    assert compare_image_text(shot, {"type": "text", "text": "Templates"}) == 1.0
    assert compare_image_text(shot, {"type": "text", "text": "Downloads Music"}) == 1.0  # words joined by one space
    empty = terminal(tmp_path, "empty.png", [("user@user-virtual-machine:~$", (255, 255, 255))])
    assert compare_image_text(empty, {"type": "text", "text": "Templates"}) == 0.0


def test_missing_or_undecodable_image_and_bad_rules(tmp_path):
    rules = {"type": "text", "text": "ls"}
    assert compare_image_text(None, rules) == 0.0
    assert compare_image_text(str(tmp_path / "missing.png"), rules) == 0.0
    (tmp_path / "x.png").write_bytes(b"not an image")
    assert compare_image_text(str(tmp_path / "x.png"), rules) == 0.0
    with pytest.raises(UserError, match="type"):
        compare_image_text(None, {"type": "regex", "text": "ls"})
    with pytest.raises(UserError, match="text"):
        compare_image_text(None, {"type": "text", "text": ""})


def test_no_engine_is_an_infrastructure_error(tmp_path, monkeypatch):
    monkeypatch.setattr(ocr, "TESSERACT", "no-such-ocr-engine")
    shot = terminal(tmp_path, "ls.png", [("ls", (255, 255, 255))])
    with pytest.raises(InfraError, match="tesseract-ocr"):
        compare_image_text(shot, {"type": "text", "text": "ls"})


@needs_tesseract
def test_tesseract_runs_on_one_thread(tmp_path, monkeypatch):
    """Its OpenMP threads spin-wait on a busy machine: a screen's read cost 5x the CPU with them."""
    seen: dict[str, str] = {}
    real_run = ocr.subprocess.run

    def run(argv, **kwargs):
        seen.update(kwargs["env"])
        return real_run(argv, **kwargs)

    monkeypatch.setattr(ocr.subprocess, "run", run)
    shot = terminal(tmp_path, "one.png", [("user@vm:~$ echo one", (255, 255, 255))])
    assert compare_image_text(shot, {"type": "text", "text": "echo"}) == 1.0
    assert seen["OMP_THREAD_LIMIT"] == "1" and seen["PATH"]
