import json
from pathlib import Path

import pytest
from PIL import Image
from pypdf import PdfReader, PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.pdf import (
    check_pdf_pages,
    compare_pdfs,
    is_gold_text_included_in_pdf,
)
from mcpworld.evaluation.registry import METRICS


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def text_pdf(path: Path, *pages: list[str] | str) -> str:
    """A PDF with one page per argument; each page shows its lines in Helvetica."""
    writer = PdfWriter()
    for lines in pages:
        lines = [lines] if isinstance(lines, str) else lines
        page = writer.add_blank_page(612, 792)
        font = DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
        ops = ["BT", "/F1 12 Tf", "72 720 Td"]
        for i, line in enumerate(lines):
            ops.append(("" if i == 0 else "0 -16 Td ") + f"({_escape(line)}) Tj")
        ops.append("ET")
        stream = DecodedStreamObject()
        stream.set_data("\n".join(ops).encode("latin-1"))
        page.replace_contents(stream)
    writer.write(path)
    return str(path)


def blank_pdf(path: Path, pages: int) -> str:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(612, 792)
    writer.write(path)
    return str(path)


def test_registered():
    for name in ("check_pdf_pages", "compare_pdfs", "is_gold_text_included_in_pdf"):
        assert name in METRICS


def test_helpers_write_real_text(tmp_path):
    path = text_pdf(tmp_path / "t.pdf", ["Hello World", "second (line)"], "Total: 42")
    texts = [page.extract_text() for page in PdfReader(path).pages]
    assert "Hello World" in texts[0] and "second (line)" in texts[0] and "Total: 42" in texts[1]


def test_check_pdf_pages(tmp_path):
    three = blank_pdf(tmp_path / "three.pdf", 3)
    assert check_pdf_pages(three, {"relation": "eq", "ref_value": 3}) == 1.0
    assert check_pdf_pages(three, {"relation": "ge", "ref_value": 2}) == 1.0
    assert check_pdf_pages(three, {"relation": "lt", "ref_value": 3}) == 0.0
    assert check_pdf_pages(three, {"relation": "gt", "ref_value": 3}) == 0.0
    assert check_pdf_pages(three, {"relation": "le", "ref_value": 3}) == 1.0
    # Pillow writes one page per image
    images = [Image.new("RGB", (50, 50), c) for c in ("red", "green")]
    images[0].save(tmp_path / "pil.pdf", "PDF", save_all=True, append_images=images[1:])
    assert check_pdf_pages(str(tmp_path / "pil.pdf"), {"relation": "eq", "ref_value": 2}) == 1.0
    # nothing readable
    junk = tmp_path / "junk.pdf"
    junk.write_text("not a pdf at all")
    assert check_pdf_pages(None, {"relation": "eq", "ref_value": 0}) == 0.0
    assert check_pdf_pages(str(tmp_path / "missing.pdf"), {"relation": "ge", "ref_value": 0}) == 0.0
    assert check_pdf_pages(str(junk), {"relation": "ge", "ref_value": 0}) == 0.0
    # the task author's mistakes
    with pytest.raises(UserError, match="relation"):
        check_pdf_pages(three, {"relation": "__import__", "ref_value": 3})
    with pytest.raises(UserError, match="ref_value"):
        check_pdf_pages(three, {"relation": "eq"})
    with pytest.raises(UserError, match="ref_value"):
        check_pdf_pages(three, {"relation": "eq", "ref_value": "3"})


def test_compare_pdfs(tmp_path):
    gold = text_pdf(tmp_path / "gold.pdf", ["Invoice 2024", "Total due: 42 EUR"])
    same = text_pdf(tmp_path / "same.pdf", ["Invoice 2024", "Total due: 42 EUR"])
    # the same words with other line breaks: OSWorld compared the raw text, line breaks included
    rewrapped = text_pdf(tmp_path / "rewrapped.pdf", ["Invoice 2024 Total", "due: 42 EUR"])
    close = text_pdf(tmp_path / "close.pdf", ["Invoice 2024", "Total due: 43 EUR"])
    other = text_pdf(tmp_path / "other.pdf", "zzzz qqqq")
    blank = blank_pdf(tmp_path / "blank.pdf", 1)
    assert compare_pdfs(same, gold) == 1.0
    assert 0.9 < compare_pdfs(rewrapped, gold) < 1.0  # "4\nT" vs "4 T", "l\nd" vs "l d"
    assert 0.9 < compare_pdfs(close, gold) < 1.0
    assert compare_pdfs(other, gold) < 0.3
    assert compare_pdfs(blank, gold) == 0.0
    assert compare_pdfs(blank, blank) == 1.0  # two empty texts are equal, as in OSWorld
    assert compare_pdfs(None, gold) == 0.0
    assert compare_pdfs(None, blank) == 0.0  # OSWorld opened None as an empty PDF and gave 1
    assert compare_pdfs(str(tmp_path / "missing.pdf"), gold) == 0.0
    # lists: pairs in order, over the gold's count
    assert compare_pdfs([same, close], [gold, gold]) == pytest.approx((1.0 + compare_pdfs(close, gold)) / 2)
    assert compare_pdfs([same], [gold, gold]) == 0.5
    assert compare_pdfs([None, same], [gold, gold]) == 0.5
    assert compare_pdfs([same, same, other], [gold, gold]) == 1.0  # an extra result is ignored
    assert compare_pdfs(same, [gold]) == 0.0  # OSWorld paired the path's characters: nothing
    assert compare_pdfs([same], gold) == 0.0


def test_compare_pdfs_keeps_page_and_line_layout(tmp_path):
    """The texts compared are the pages' lines joined by newlines, stripped, as PyMuPDF gives them."""
    gold = text_pdf(tmp_path / "gold.pdf", ["ab", "cd"], "ef")
    flat = text_pdf(tmp_path / "flat.pdf", "ab cd ef")
    assert compare_pdfs(flat, gold) == pytest.approx(1 - 4 / 16)
    assert compare_pdfs(text_pdf(tmp_path / "pages.pdf", "ab", "cd", "ef"), gold) == 1.0


def test_is_gold_text_included_in_pdf(tmp_path):
    pdf = text_pdf(tmp_path / "r.pdf", ["Name:   Ada Lovelace", "Born: 1815"], "Total: 42")
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps({"name": "Ada Lovelace", "total": "Total: 42"}))
    assert is_gold_text_included_in_pdf(pdf, str(gold)) == 1.0
    # pdfplumber's layout: words one space apart, lines by newlines, pages run together
    assert is_gold_text_included_in_pdf(pdf, {"a": "Lovelace\nBorn:"}) == 1.0
    assert is_gold_text_included_in_pdf(pdf, {"a": "1815Total"}) == 1.0
    # as written: a value across a line break, or in another case, is not found
    assert is_gold_text_included_in_pdf(pdf, {"a": "Lovelace Born:"}) == 0.0
    assert is_gold_text_included_in_pdf(pdf, {"a": "ada lovelace"}) == 0.0
    assert is_gold_text_included_in_pdf(pdf, {"name": "Ada Lovelace", "x": "Charles Babbage"}) == 0.0
    assert is_gold_text_included_in_pdf(None, str(gold)) == 0.0
    assert is_gold_text_included_in_pdf(blank_pdf(tmp_path / "b.pdf", 1), str(gold)) == 0.0
    assert is_gold_text_included_in_pdf(pdf, str(tmp_path / "missing.json")) == 0.0
    assert is_gold_text_included_in_pdf(pdf, None) == 0.0
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    assert is_gold_text_included_in_pdf(pdf, str(empty)) == 1.0  # nothing to look for, as in OSWorld
    assert is_gold_text_included_in_pdf(str(tmp_path / "missing.pdf"), str(empty)) == 0.0
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UserError, match="not JSON"):
        is_gold_text_included_in_pdf(pdf, str(bad))
    for not_an_object in (["Born: 1815"], {"a": 42}):
        with pytest.raises(UserError, match="object of strings"):
            is_gold_text_included_in_pdf(pdf, not_an_object)


# --- compare_pdf_images -----------------------------------------------------------------------


def _receipt(size=(120, 160), shade=30, band=(20, 50)):
    """A grey page with a dark band and a lighter block: structure a perceptual hash can see."""
    img = Image.new("RGB", size, (235, 235, 235))
    for y in range(*band):
        for x in range(10, size[0] - 10):
            img.putpixel((x, y), (shade, shade, shade))
    for y in range(size[1] // 2, size[1] - 20):
        for x in range(size[0] // 2, size[0] - 15):
            img.putpixel((x, y), (120, 60, 60))
    return img


def image_pdf(path: Path, *images, fmt_quality=None) -> str:
    first, *rest = images
    options = {"quality": fmt_quality} if fmt_quality else {}
    first.save(path, "PDF", save_all=True, append_images=rest, **options)
    return str(path)


def test_compare_pdf_images(tmp_path):
    from mcpworld.evaluation.metrics.pdf import compare_pdf_images

    gold = image_pdf(tmp_path / "gold.pdf", _receipt())
    assert compare_pdf_images(image_pdf(tmp_path / "same.pdf", _receipt()), gold) == 1.0
    # re-encoded as a smaller JPEG: same picture to a perceptual hash
    small = _receipt().resize((90, 120)).convert("L")
    assert compare_pdf_images(image_pdf(tmp_path / "small.pdf", small), gold) == 1.0
    other = _receipt(band=(100, 150)).transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    assert compare_pdf_images(image_pdf(tmp_path / "other.pdf", other), gold) == 0.0
    two_gold = image_pdf(tmp_path / "gold2.pdf", _receipt(), _receipt(band=(100, 150)))
    half = image_pdf(tmp_path / "half.pdf", _receipt(), other)
    assert compare_pdf_images(half, two_gold) == 0.5
    assert compare_pdf_images(image_pdf(tmp_path / "one.pdf", _receipt()), two_gold) == 0.0  # count differs
    assert compare_pdf_images(text_pdf(tmp_path / "text.pdf", "receipt"), gold) == 0.0
    assert compare_pdf_images(text_pdf(tmp_path / "t1.pdf", "a"), text_pdf(tmp_path / "t2.pdf", "b")) == 1.0  # no images
    assert compare_pdf_images(None, gold) == 0.0
    assert compare_pdf_images(str(tmp_path / "missing.pdf"), gold) == 0.0
