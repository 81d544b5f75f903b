"""compare_zip_files / compare_archive on zip and tar archives written into tmp_path."""

import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.archives import compare_archive, compare_zip_files
from mcpworld.evaluation.registry import METRICS


def pdf_bytes(text: str, producer: str = "LibreOffice") -> bytes:
    """A one-page PDF showing ``text``; ``producer`` changes the bytes, not the text."""
    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
    stream = DecodedStreamObject()
    stream.set_data(f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1"))
    page.replace_contents(stream)
    writer.add_metadata({"/Producer": producer})
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def zip_of(path: Path, files: dict[str, bytes | str], dirs: tuple[str, ...] = ()) -> str:
    with zipfile.ZipFile(path, "w") as z:
        for d in dirs:
            z.writestr(d, "")
        for name, data in files.items():
            z.writestr(name, data)
    return str(path)


def tar_of(path: Path, files: dict[str, bytes | str]) -> str:
    with tarfile.open(path, "w:gz") as t:
        for name, data in files.items():
            raw = data.encode() if isinstance(data, str) else data
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            t.addfile(info, io.BytesIO(raw))
    return str(path)


def test_registered():
    assert METRICS["compare_zip_files"] is compare_zip_files
    assert METRICS["compare_archive"] is compare_archive


def test_compare_zip_files(tmp_path):
    files = {"essay/essay.docx": b"DOCX", "essay/essay.pdf": pdf_bytes("Recruitment and retention")}
    gold = zip_of(tmp_path / "gold.zip", files, dirs=("essay/",))
    assert compare_zip_files(zip_of(tmp_path / "same.zip", files, dirs=("essay/",)), gold) == 1.0
    # entry names as OSWorld compared them: a missing directory entry is a difference
    assert compare_zip_files(zip_of(tmp_path / "nodir.zip", files), gold) == 0.0
    # the PDF re-made by another writer: other bytes, same text
    remade = {**files, "essay/essay.pdf": pdf_bytes("Recruitment and retention", producer="pdfTeX")}
    assert compare_zip_files(zip_of(tmp_path / "remade.zip", remade, dirs=("essay/",)), gold) == 1.0
    other_pdf = {**files, "essay/essay.pdf": pdf_bytes("Something else entirely")}
    assert compare_zip_files(zip_of(tmp_path / "otherpdf.zip", other_pdf, dirs=("essay/",)), gold) == 0.0
    otherdoc = {**files, "essay/essay.docx": b"DOCX2"}
    assert compare_zip_files(zip_of(tmp_path / "otherdoc.zip", otherdoc, dirs=("essay/",)), gold) == 0.0
    flat = {"essay.docx": b"DOCX", "essay.pdf": files["essay/essay.pdf"]}
    assert compare_zip_files(zip_of(tmp_path / "flat.zip", flat), gold) == 0.0
    assert compare_zip_files(zip_of(tmp_path / "less.zip", {"essay/essay.docx": b"DOCX"}, dirs=("essay/",)), gold) == 0.0
    (tmp_path / "junk.zip").write_text("not an archive")
    assert compare_zip_files(str(tmp_path / "junk.zip"), gold) == 0.0
    assert compare_zip_files(None, gold) == 0.0
    assert compare_zip_files(gold, str(tmp_path / "missing.zip")) == 0.0
    # a tar of the same files is not a zip (OSWorld could not open it)
    tar = tar_of(tmp_path / "same.tar", {"essay/essay.docx": "DOCX"})
    assert compare_zip_files(tar, zip_of(tmp_path / "g2.zip", {"essay/essay.docx": b"DOCX"})) == 0.0


def test_compare_zip_files_pdf_text_threshold(tmp_path):
    """difflib's ratio of the PDFs' texts must reach 0.95; two PDFs without text match."""
    text = "Recruitment and retention of health professionals across Europe"
    gold = zip_of(tmp_path / "gold.zip", {"a.pdf": pdf_bytes(text)})
    close = zip_of(tmp_path / "close.zip", {"a.pdf": pdf_bytes(text.replace("Europe", "Europa"))})  # 1 of 64 chars
    far = zip_of(tmp_path / "far.zip", {"a.pdf": pdf_bytes(text.replace("across Europe", "in Asia"))})
    assert compare_zip_files(close, gold) == 1.0
    assert compare_zip_files(far, gold) == 0.0
    textless = [zip_of(tmp_path / f"e{i}.zip", {"a.pdf": pdf_bytes("", producer)}) for i, producer in ((1, "x"), (2, "y"))]
    assert compare_zip_files(*textless) == 1.0
    assert compare_zip_files(zip_of(tmp_path / "bad.zip", {"a.pdf": b"not a pdf"}), gold) == 0.0


def test_compare_archive_pdf_folder(tmp_path):
    gold_files = {f"lecture_slides/week{i}.pdf": pdf_bytes(f"Lecture {i} on Python") for i in range(3)}
    gold = zip_of(tmp_path / "gold.zip", gold_files)
    assert compare_archive(zip_of(tmp_path / "same.zip", gold_files), gold, file_path="lecture_slides", file_type="pdf") == 1.0
    wrong = {**gold_files, "lecture_slides/week2.pdf": pdf_bytes("Lecture 2 on Scratch")}
    score = compare_archive(zip_of(tmp_path / "wrong.zip", wrong), gold, file_path="lecture_slides", file_type="pdf")
    assert 2 / 3 < score < 1.0  # two files identical, the third similar text
    renamed = {k.replace("week2", "Week2"): v for k, v in gold_files.items()}
    assert compare_archive(zip_of(tmp_path / "renamed.zip", renamed), gold, file_path="lecture_slides", file_type="pdf") == 0.0
    # a tar.gz against a zip: the format does not matter, the files do
    assert compare_archive(tar_of(tmp_path / "same.tar.gz", gold_files), gold, file_path="lecture_slides", file_type="pdf") == 1.0
    assert compare_archive(zip_of(tmp_path / "same2.zip", gold_files), gold, file_type="pdf") == 0.0  # top level: a folder only
    assert compare_archive(None, gold, file_type="pdf") == 0.0


def test_compare_archive_text_with_options(tmp_path):
    gold = tar_of(tmp_path / "gold.tar.gz", {"a.txt": "Hello\n", "b.txt": "World\n"})
    assert compare_archive(tar_of(tmp_path / "same.tar.gz", {"a.txt": "Hello\n", "b.txt": "World\n"}), gold) == 1.0
    upper = tar_of(tmp_path / "upper.tar.gz", {"a.txt": "HELLO\n", "b.txt": "World\n"})
    assert compare_archive(upper, gold) == 0.5
    assert compare_archive(upper, gold, ignore_case=True) == 1.0  # passed on to compare_text_file
    with pytest.raises(UserError, match="file_type"):
        compare_archive(upper, gold, file_type="spreadsheet")


def test_hostile_member_names_are_skipped(tmp_path):
    evil = zip_of(tmp_path / "evil.zip", {"../../outside.txt": "x", "/etc/passwd2": "y", "ok.txt": "z"})
    gold = zip_of(tmp_path / "gold.zip", {"ok.txt": "z"})
    assert compare_zip_files(evil, gold) == 0.0  # other entry names (nothing is written out)
    assert compare_archive(evil, gold) == 1.0  # unpacking skips them, as shutil.unpack_archive does
    assert not (tmp_path.parent / "outside.txt").exists()


def test_compare_archive_subfolders_count_as_entries(tmp_path):
    """OSWorld listed the unpacked folder, subfolders included, and scored every entry."""
    pdfs = {"a.pdf": pdf_bytes("Chapter one"), "b.pdf": pdf_bytes("Chapter two")}
    gold = zip_of(tmp_path / "gold.zip", pdfs)
    nested = zip_of(tmp_path / "nested.zip", {**pdfs, "sub/c.pdf": pdf_bytes("Chapter three")})
    gold_nested = zip_of(tmp_path / "gold_nested.zip", {**pdfs, "sub/c.pdf": pdf_bytes("Chapter three")})
    assert compare_archive(nested, gold, file_type="pdf") == 0.0  # a subfolder the gold lacks
    assert compare_archive(nested, gold_nested, file_type="pdf") == pytest.approx(2 / 3)  # the folder pair scores 0
    # an empty folder is an entry too
    empty_dir = zip_of(tmp_path / "emptydir.zip", pdfs, dirs=("extra/",))
    assert compare_archive(empty_dir, gold, file_type="pdf") == 0.0
    # no such folder, or nothing in it
    assert compare_archive(nested, gold_nested, file_path="nope", file_type="pdf") == 0.0
    empty, empty_gold = (zip_of(tmp_path / name, {}, dirs=("x/",)) for name in ("e.zip", "e2.zip"))
    assert compare_archive(empty, empty_gold, file_path="x") == 0.0


def test_compare_archive_text_with_a_subfolder_fails(tmp_path):
    """OSWorld's compare_text_file raised on the subfolder's path, so the task scored 0."""
    files = {"d/a.txt": "x", "b.txt": "y"}
    assert compare_archive(zip_of(tmp_path / "r.zip", files), zip_of(tmp_path / "g.zip", files)) == 0.0
    flat = {"a.txt": "x", "b.txt": "y"}
    assert compare_archive(zip_of(tmp_path / "r2.zip", flat), zip_of(tmp_path / "g2.zip", flat)) == 1.0
