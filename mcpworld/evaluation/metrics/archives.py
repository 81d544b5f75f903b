"""Archive metrics: a zip or tar the agent made, compared with a gold archive.

``result`` and ``expected`` are local archive paths (a getter's cached copies). A ``None``,
missing or unreadable archive (result or gold) scores 0. Archives are read member by member,
never unpacked as a whole: absolute paths, ``..`` and links are skipped, so a hostile archive
cannot write outside the scratch folder.
"""

from __future__ import annotations

import difflib
import io
import logging
import posixpath
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from pypdf import PdfReader

from mcpworld.core.errors import UserError
from mcpworld.evaluation.registry import get_metric, metric

log = logging.getLogger(__name__)

MAX_MEMBER_BYTES = 512 * 1024 * 1024
PDF_TEXT_THRESHOLD = 0.95


def _is_file(path: Any) -> bool:
    return isinstance(path, (str, Path)) and bool(str(path)) and Path(path).is_file()


def _safe_name(name: str) -> str | None:
    """A member name as a relative POSIX path, or None when it would leave the archive's folder."""
    name = posixpath.normpath(name.replace("\\", "/"))
    if name.startswith("/") or name == ".." or name.startswith("../") or name == ".":
        return None
    return name


def _members(path: Any) -> tuple[dict[str, bytes], set[str]] | None:
    """({relative path: bytes} of the regular files, {relative paths of the folders}) of a zip or
    tar (any compression); None if unreadable.

    Folders are those with an entry of their own and those implied by a file's path, as
    unpacking creates them all.
    """
    if not _is_file(path):
        return None
    files: dict[str, bytes] = {}
    folders: set[str] = set()
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist():
                    name = _safe_name(info.filename)
                    if name is None or info.file_size > MAX_MEMBER_BYTES:
                        continue
                    if info.is_dir():
                        folders.add(name)
                    else:
                        files[name] = archive.read(info)
        else:
            with tarfile.open(path) as archive:
                for member in archive.getmembers():
                    name = _safe_name(member.name)
                    if name is None or member.size > MAX_MEMBER_BYTES:
                        continue
                    if member.isdir():
                        folders.add(name)
                    elif member.isfile() and (handle := archive.extractfile(member)) is not None:
                        files[name] = handle.read()
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, RuntimeError) as exc:
        log.debug("cannot read archive %s: %s", path, exc)
        return None
    for name in files:
        parent = posixpath.dirname(name)
        while parent:
            folders.add(parent)
            parent = posixpath.dirname(parent)
    return files, folders


def _pypdf_text(data: bytes) -> str:
    """The text of every page run together, as PyPDF2 gave it to OSWorld."""
    return "".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)


@metric("compare_zip_files")
def compare_zip_files(result: Any, expected: Any) -> float:
    """1 when the zip holds the same entries as the gold, each with the same content.

    Entries are matched by name, directory entries included (as in OSWorld, which compared the
    two name lists). A ``.pdf`` whose bytes differ still matches when difflib's ratio of the two
    extracted texts is at least 0.95 (PDF writers stamp dates and ids; two textless PDFs match).
    Not a zip (a tar too), missing, or a PDF that cannot be read: 0.
    """
    if not _is_file(result) or not _is_file(expected):
        return 0.0
    try:
        with zipfile.ZipFile(result) as mine, zipfile.ZipFile(expected) as gold:
            names = set(mine.namelist())
            if names != set(gold.namelist()):
                return 0.0
            for name in names:
                if max(mine.getinfo(name).file_size, gold.getinfo(name).file_size) > MAX_MEMBER_BYTES:
                    return 0.0
                got, want = mine.read(name), gold.read(name)
                if name.lower().endswith(".pdf"):
                    ratio = difflib.SequenceMatcher(None, _pypdf_text(got), _pypdf_text(want)).ratio()
                    if ratio < PDF_TEXT_THRESHOLD:
                        return 0.0
                elif got != want:
                    return 0.0
    except Exception as exc:  # a broken zip or PDF (OSWorld raised: the task scored 0)
        log.debug("cannot compare zips %s and %s: %s", result, expected, exc)
        return 0.0
    return 1.0


# file_type → the metric that compares one pair of extracted files (OSWorld's choices).
COMPARERS = {
    "text": "compare_text_file",
    "pdf": "compare_pdfs",
    "docx": "compare_docx_files",
    "ppt": "compare_pptx_files",
    "image": "compare_images",
    "csv": "compare_csv",
    "table": "compare_table",
    "audio": "compare_audios",
    "video": "compare_videos",
}

FAIL_ON_FOLDERS = ("text", "ppt", "image")  # OSWorld's comparers raised on a folder path


def _listing(members: tuple[dict[str, bytes], set[str]], folder: str) -> dict[str, bytes | None] | None:
    """The entries directly inside ``folder``: files with their bytes, subfolders as None; None when
    the archive has no such folder."""
    files, folders = members
    folder = posixpath.normpath(folder) if folder.strip("/") else ""
    if folder and folder not in folders:
        return None
    prefix = f"{folder}/" if folder else ""
    entries: dict[str, bytes | None] = {}
    for name in (*files, *folders):
        if name.startswith(prefix):
            first, _, rest = name[len(prefix) :].partition("/")
            entries[first] = None if rest or name in folders else files[name]
    return entries


@metric("compare_archive")
def compare_archive(result: Any, expected: Any, file_path: str = "", file_type: str = "text", **options: Any) -> float:
    """Mean score of the entries in the archive against the gold archive's, compared by ``file_type``.

    The entries directly inside folder ``file_path`` of the archive (default: its top level),
    files and subfolders, must have the same names as the gold's; each is then scored against
    the gold entry of the same name by the metric for ``file_type``: text (compare_text_file),
    pdf (compare_pdfs), docx (compare_docx_files), ppt (compare_pptx_files), image
    (compare_images), csv (compare_csv), table (compare_table), audio (compare_audios), video
    (compare_videos). Other options are passed to that metric. A subfolder counts as an entry
    scoring 0, and for text, ppt and image fails the whole comparison, as OSWorld's comparers did
    on a folder path (its compare_audios and compare_videos scored two folders 1: here 0).
    Nothing to compare, or no folder ``file_path``, scores 0 (OSWorld raised).
    """
    if file_type not in COMPARERS:
        raise UserError(f"metric 'compare_archive': file_type must be one of {', '.join(COMPARERS)}, got {file_type!r}")
    if not isinstance(file_path, str):
        raise UserError(f"metric 'compare_archive': file_path must be a folder inside the archive, got {file_path!r}")
    compare = get_metric(COMPARERS[file_type])
    got, want = _members(result), _members(expected)
    if got is None or want is None:
        return 0.0
    mine, gold = _listing(got, file_path), _listing(want, file_path)
    if mine is None or gold is None or not mine or sorted(mine) != sorted(gold):
        return 0.0
    if file_type in FAIL_ON_FOLDERS and any(mine[n] is None or gold[n] is None for n in mine):
        return 0.0
    total = 0.0
    with tempfile.TemporaryDirectory(prefix="mcpworld-archive-") as scratch:
        for i, name in enumerate(sorted(mine)):
            mine_data, gold_data = mine[name], gold[name]
            if mine_data is None or gold_data is None:
                continue  # a subfolder: scores 0
            # each pair in its own folders, under its own name: some metrics read the suffix
            mine_path, gold_path = Path(scratch, str(i), "result", name), Path(scratch, str(i), "gold", name)
            for path, data in ((mine_path, mine_data), (gold_path, gold_data)):
                path.parent.mkdir(parents=True)
                path.write_bytes(data)
            total += float(compare(str(mine_path), str(gold_path), **options))
    return total / len(mine)
