"""Archive metrics: a zip or tar the agent made, compared with a gold archive.

``result`` and ``expected`` are local archive paths (a getter's cached copies). A ``None``,
missing or unreadable archive (result or gold) scores 0. Archives are read member by member,
never unpacked as a whole: absolute paths, ``..`` and links are skipped, so a hostile archive
cannot write outside the scratch folder.
"""

from __future__ import annotations

import logging
import posixpath
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from mcpworld.errors import UserError
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


def _members(path: Any) -> dict[str, bytes] | None:
    """{relative path: bytes} of the regular files in a zip or tar (any compression); None if unreadable.

    Directory entries carry no content and are left out.
    """
    if not _is_file(path):
        return None
    files: dict[str, bytes] = {}
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist():
                    name = _safe_name(info.filename)
                    if name is None or info.is_dir() or info.file_size > MAX_MEMBER_BYTES:
                        continue
                    files[name] = archive.read(info)
            return files
        with tarfile.open(path) as archive:
            for info in archive.getmembers():
                name = _safe_name(info.name)
                if name is None or not info.isfile() or info.size > MAX_MEMBER_BYTES:
                    continue
                handle = archive.extractfile(info)
                if handle is not None:
                    files[name] = handle.read()
        return files
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, RuntimeError) as exc:
        log.debug("cannot read archive %s: %s", path, exc)
        return None


@metric("compare_zip_files")
def compare_zip_files(result: Any, expected: Any) -> float:
    """1 when the archive holds the same files as the gold, each with the same content.

    Files are matched by their path inside the archive. A PDF whose bytes differ still matches
    when its extracted text is at least 95% similar to the gold's (PDF writers stamp dates and
    ids). Directory entries are ignored: whether a zip tool writes them says nothing about the
    files (OSWorld compared them as names, and compared textless PDFs as equal).
    """
    got, want = _members(result), _members(expected)
    if got is None or want is None or set(got) != set(want):
        return 0.0
    with tempfile.TemporaryDirectory(prefix="mcpworld-zip-") as scratch:
        for name, data in got.items():
            if data == want[name]:
                continue
            if not name.lower().endswith(".pdf"):
                return 0.0
            mine, gold = Path(scratch) / "result.pdf", Path(scratch) / "gold.pdf"
            mine.write_bytes(data)
            gold.write_bytes(want[name])
            if get_metric("compare_pdfs")(str(mine), str(gold)) < PDF_TEXT_THRESHOLD:
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


def _listing(files: dict[str, bytes], folder: str) -> dict[str, bytes | None]:
    """The entries directly inside ``folder``: files with their bytes, subfolders as None."""
    prefix = f"{posixpath.normpath(folder)}/" if folder.strip("/") else ""
    entries: dict[str, bytes | None] = {}
    for name, data in files.items():
        if not name.startswith(prefix):
            continue
        first, _, rest = name[len(prefix):].partition("/")
        entries[first] = None if rest else data
    return entries


@metric("compare_archive")
def compare_archive(result: Any, expected: Any, file_path: str = "", file_type: str = "text", **options: Any) -> float:
    """Mean score of the files in the archive against the gold archive's, compared by ``file_type``.

    The entries directly inside folder ``file_path`` of the archive (default: its top level)
    must have the same names as the gold's; each file is then scored against the gold file of
    the same name by the metric for ``file_type``: text (compare_text_file), pdf (compare_pdfs),
    docx (compare_docx_files), ppt (compare_pptx_files), image (compare_images), csv
    (compare_csv), table (compare_table), audio (compare_audios), video (compare_videos). Other
    options are passed to that metric. Subfolders count by name only. Nothing to compare
    scores 0 (OSWorld divided by zero).
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
    if sorted(mine) != sorted(gold):
        return 0.0
    names = sorted(name for name, data in mine.items() if data is not None and gold[name] is not None)
    if not names:
        return 0.0
    total = 0.0
    with tempfile.TemporaryDirectory(prefix="mcpworld-archive-") as scratch:
        for i, name in enumerate(names):
            # each pair in its own folders, under its own name: some metrics read the suffix
            mine_path, gold_path = Path(scratch, str(i), "result", name), Path(scratch, str(i), "gold", name)
            for path, data in ((mine_path, mine[name]), (gold_path, gold[name])):
                path.parent.mkdir(parents=True)
                path.write_bytes(data or b"")
            total += float(compare(str(mine_path), str(gold_path), **options))
    return total / len(names)
