"""Windows Agent Arena's file getters, for its tasks that make sense on this desktop.

WAA's tasks name the account's folders as C:\\Users\\Docker\\…; those paths are read as the same
folders of this desktop's home (/home/user/…). Results keep WAA's types: some getters return
True/False or 1.0/0.0, others the strings "true"/"false", which the tasks' exact_match rules expect.
"""

from __future__ import annotations

import posixpath
import re
from typing import TYPE_CHECKING, Any

from mcpworld.core.errors import UserError
from mcpworld.evaluation.getters.base import read_or_none, require, true_false
from mcpworld.evaluation.registry import getter

if TYPE_CHECKING:
    from mcpworld.env.base import Environment


_WAA_HOME = re.compile(r"^[A-Za-z]:[\\/]+Users[\\/]+Docker(?=[\\/]|$)", re.I)
_WINDOWS_PATH = re.compile(r"^[A-Za-z]:[\\/]")


def waa_path(path: Any, getter_name: str) -> str:
    """A task path, with WAA's ``C:\\Users\\Docker\\…`` read as ``/home/user/…``."""
    if not isinstance(path, str) or not path.strip():
        raise UserError(f"getter {getter_name!r}: expected a path, got {path!r}")
    match = _WAA_HOME.match(path)
    if match:
        return "/home/user" + path[match.end() :].replace("\\", "/")
    if _WINDOWS_PATH.match(path):
        raise UserError(f"getter {getter_name!r}: {path!r} is a Windows path outside the user's folders")
    return path


def _kind(env: Environment, path: str) -> str | None:
    """``file``, ``dir`` or ``other`` at a path in the environment (on a WAA VM: on the VM), or None."""
    found = env.stat(path)
    return None if found is None else found.kind


def _waa_text(env: Environment, path: str) -> str | None:
    data = read_or_none(env, path)
    return None if data is None else data.decode("utf-8", errors="replace")


@getter("vm_file_exists_in_vm_folder")
def vm_file_exists_in_vm_folder(env: Environment, cfg: dict[str, Any]) -> float:
    """1.0 when ``folder_name`` holds the file ``file_name`` with some content, else 0.0 (an empty
    file counts as absent, as in WAA, which fetched the file and tested its bytes)."""
    folder = waa_path(require(cfg, "folder_name"), "vm_file_exists_in_vm_folder")
    name = require(cfg, "file_name")
    return float(bool(read_or_none(env, posixpath.join(folder, str(name)))))


@getter("vm_folder_exists_in_documents")
def vm_folder_exists_in_documents(env: Environment, cfg: dict[str, Any]) -> bool:
    """Whether ~/Documents holds the folder ``folder_name``."""
    return _kind(env, posixpath.join("~/Documents", str(require(cfg, "folder_name")))) == "dir"


@getter("vm_file_exists_in_desktop")
def vm_file_exists_in_desktop(env: Environment, cfg: dict[str, Any]) -> bool:
    """Whether ~/Desktop holds an entry (file, folder or link) named ``file_name``."""
    return env.stat(posixpath.join("~/Desktop", str(require(cfg, "file_name")))) is not None


@getter("is_file_desktop")
def is_file_desktop(env: Environment, cfg: dict[str, Any]) -> str:
    """``"true"`` when ~/Desktop holds the file ``filename``."""
    return true_false(read_or_none(env, posixpath.join("~/Desktop", str(require(cfg, "filename")))) is not None)


@getter("is_file_saved_desktop")
def is_file_saved_desktop(env: Environment, cfg: dict[str, Any]) -> str:
    """``"true"`` when the text file ~/Desktop/``filename`` contains ``textcontent`` (with ``exact``:
    equals it, line endings and surrounding whitespace aside)."""
    text = _waa_text(env, posixpath.join("~/Desktop", str(require(cfg, "filename"))))
    expected = str(require(cfg, "textcontent"))
    if text is None:
        return "false"
    if cfg.get("exact", False):

        def normalise(value: str) -> str:
            return value.replace("\r\n", "\n").replace("\r", "\n").strip()

        return true_false(normalise(text) == normalise(expected))
    return true_false(expected in text)


@getter("is_file_hidden")
def is_file_hidden(env: Environment, cfg: dict[str, Any]) -> str:
    """``"true"`` when the file ``file_path`` is hidden the Linux way: its name starts with a dot,
    its folder's ``.hidden`` file lists it (what GTK file managers such as pcmanfm honour), or it
    was renamed to ``.<name>`` beside where it was. (On Windows it is a file attribute.)"""
    path = waa_path(require(cfg, "file_path"), "is_file_hidden")
    folder, name = posixpath.split(path.rstrip("/"))
    if env.stat(path) is not None:
        listed = (_waa_text(env, posixpath.join(folder, ".hidden")) or "").splitlines()
        return true_false(name.startswith(".") or name in (line.strip() for line in listed))
    return true_false(not name.startswith(".") and env.stat(posixpath.join(folder, "." + name)) is not None)


@getter("all_png_file_names")
def all_png_file_names(env: Environment, cfg: dict[str, Any]) -> str:
    """``"true"`` when the lines of the text file ``file_path`` are exactly the names of the .png
    files (any case) in ``folder_path``, as sets."""
    text = _waa_text(env, waa_path(require(cfg, "file_path"), "all_png_file_names"))
    folder = waa_path(require(cfg, "folder_path"), "all_png_file_names")
    if text is None:
        return "false"
    try:
        pngs = {name for name in env.list_dir(folder) if name.lower().endswith(".png")}
    except FileNotFoundError:
        return "false"
    return true_false(set(text.splitlines()) == pngs)


def _files_in(env: Environment, folder: str) -> list[str]:
    return [name for name in env.list_dir(folder) if _kind(env, posixpath.join(folder, name)) == "file"]


@getter("is_all_docx_in_archive")
def is_all_docx_in_archive(env: Environment, cfg: dict[str, Any]) -> str:
    """``"true"`` when ``folder_path`` has an ``Archive`` folder whose files are all .docx (and there is
    at least one), and no .docx file is left directly in ``folder_path``."""
    folder = waa_path(require(cfg, "folder_path"), "is_all_docx_in_archive")
    archive = posixpath.join(folder, "Archive")
    if _kind(env, archive) != "dir":
        return "false"
    archived = _files_in(env, archive)
    if not archived or not all(name.lower().endswith(".docx") for name in archived):
        return "false"
    return true_false(not any(name.lower().endswith(".docx") for name in _files_in(env, folder)))


def _tree_names(env: Environment, folder: str) -> set[str]:
    names: set[str] = set()
    try:
        entries = env.list_dir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return names
    for name in entries:
        names.add(name)
        if _kind(env, posixpath.join(folder, name)) == "dir":
            names |= _tree_names(env, posixpath.join(folder, name))
    return names


@getter("is_files_moved_downloads")
def is_files_moved_downloads(env: Environment, cfg: dict[str, Any]) -> str:
    """``"true"`` when ~/OldDownloads/``folder_name``/``file_name`` exists and ~/Downloads no longer
    holds both ``folder_name`` and ``file_name`` (WAA looked for the two names anywhere in the
    folder's tree listing)."""
    folder, name = str(require(cfg, "folder_name")), str(require(cfg, "file_name"))
    left_behind = _tree_names(env, "~/Downloads")
    if folder in left_behind and name in left_behind:
        return "false"
    return true_false(env.stat(posixpath.join("~/OldDownloads", folder, name)) is not None)
