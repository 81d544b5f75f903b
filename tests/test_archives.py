"""Safe archive extraction (mcpworld.core.archives) and the context builder that uses it."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from mcpworld.core.archives import UnsafeArchive, pack, safe_extract
from mcpworld.core.errors import UserError
from mcpworld.core.task import ContextEntry
from mcpworld.env.context import build_golden


def make_tar(members: dict[str, bytes | str], symlinks: dict[str, str] | None = None) -> bytes:
    """A tar.gz of files (name -> content) and symlinks (name -> target)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, content in members.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (symlinks or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buffer.getvalue()


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


# --- safe_extract ------------------------------------------------------------------------------------


def test_extracts_bytes(tmp_path: Path):
    names = safe_extract(make_tar({"a.txt": "alpha", "sub/b.txt": "beta"}), tmp_path / "out")
    assert sorted(names) == ["a.txt", "sub/b.txt"]
    assert (tmp_path / "out" / "a.txt").read_text() == "alpha"
    assert (tmp_path / "out" / "sub" / "b.txt").read_text() == "beta"


def test_extracts_a_path_and_creates_the_destination(tmp_path: Path):
    archive = tmp_path / "files.tar.gz"
    archive.write_bytes(make_tar({"inbox/note.md": "# hi"}))
    safe_extract(archive, tmp_path / "deep" / "dest")
    assert (tmp_path / "deep" / "dest" / "inbox" / "note.md").read_text() == "# hi"


@pytest.mark.parametrize("member", ["../x", "sub/../../x", "/tmp/x"])
def test_refuses_members_that_leave_the_destination(tmp_path: Path, member: str):
    dest = tmp_path / "sandbox" / "dest"
    with pytest.raises(UnsafeArchive) as err:
        safe_extract(make_tar({"ok.txt": "fine", member: "evil"}), dest, label="dump.tar.gz")
    assert "dump.tar.gz" in str(err.value) and member in str(err.value)
    assert files_under(tmp_path) == set()  # refused before anything was written, even ok.txt


def test_refuses_an_absolute_path_into_a_real_folder(tmp_path: Path):
    target = tmp_path / "outside.txt"
    with pytest.raises(UnsafeArchive, match="absolute"):
        safe_extract(make_tar({str(target): "evil"}), tmp_path / "dest")
    assert not target.exists() and not (tmp_path / "dest" / target.relative_to("/")).exists()


def test_refuses_a_symlink_pointing_outside(tmp_path: Path):
    dest = tmp_path / "dest"
    with pytest.raises(UnsafeArchive, match="link"):
        safe_extract(make_tar({}, symlinks={"link": "../../etc"}), dest, label="ws.tar.gz")
    assert not (dest / "link").exists() and not (dest / "link").is_symlink()


def test_allows_a_symlink_inside(tmp_path: Path):
    safe_extract(make_tar({"real.txt": "x"}, symlinks={"alias.txt": "real.txt"}), tmp_path)
    assert (tmp_path / "alias.txt").read_text() == "x"


def test_unsafe_archive_is_a_user_error():
    assert issubclass(UnsafeArchive, UserError)


@pytest.mark.parametrize("as_path", [True, False])
def test_not_a_tar_is_a_user_error_naming_the_archive(tmp_path: Path, as_path: bool):
    bogus = tmp_path / "bogus.tar.gz"
    bogus.write_text("this is not a tarball")
    with pytest.raises(UserError, match=r"bogus\.tar\.gz"):
        safe_extract(bogus if as_path else bogus.read_bytes(), tmp_path / "out", label=str(bogus))


def test_a_corrupt_gzip_tar_is_a_user_error(tmp_path: Path):
    """A real gzip stream whose tar content is cut short fails inside the guarded part."""
    data = make_tar({"big.bin": bytes(range(256)) * 400})
    with pytest.raises(UserError, match=r"cut\.tar\.gz"):
        safe_extract(data[: len(data) // 2], tmp_path / "out", label="cut.tar.gz")


# --- pack --------------------------------------------------------------------------------------------


def test_pack_round_trip(tmp_path: Path):
    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "top.txt").write_text("top")
    (src / "a" / "b" / "deep.bin").write_bytes(b"\x00\x01\x02")
    (src / "empty").mkdir()
    data = pack(src)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert all(not n.startswith(("/", "src")) for n in tar.getnames())  # relative to the folder
    out = tmp_path / "out"
    safe_extract(data, out)
    assert files_under(out) == {"top.txt", "a/b/deep.bin"}
    assert (out / "a" / "b" / "deep.bin").read_bytes() == b"\x00\x01\x02"
    assert (out / "empty").is_dir()


# --- build_golden with extract_archives ---------------------------------------------------------------


def test_build_golden_unpacks_archives_in_place(tmp_path: Path):
    src = tmp_path / "task" / "initial_workspace"
    src.mkdir(parents=True)
    (src / "files.tar.gz").write_bytes(make_tar({"inbox/a.txt": "A", "readme.md": "R"}))
    (src / "plain.txt").write_text("P")
    golden = build_golden([ContextEntry(src, "~/workspace", extract_archives=True)], tmp_path / "golden")
    assert files_under(golden) == {"workspace/inbox/a.txt", "workspace/readme.md", "workspace/plain.txt"}
    assert (golden / "workspace" / "inbox" / "a.txt").read_text() == "A"
    assert (src / "files.tar.gz").is_file()  # the task folder itself is untouched


def test_build_golden_keeps_archives_without_extract(tmp_path: Path):
    src = tmp_path / "initial_workspace"
    src.mkdir()
    (src / "files.tar.gz").write_bytes(make_tar({"a.txt": "A"}))
    golden = build_golden([ContextEntry(src, "~/workspace")], tmp_path / "golden")
    assert files_under(golden) == {"workspace/files.tar.gz"}


def test_build_golden_refuses_an_escaping_archive(tmp_path: Path):
    src = tmp_path / "task" / "initial_workspace"
    src.mkdir(parents=True)
    (src / "files.tar.gz").write_bytes(make_tar({"../evil": "pwned"}))
    with pytest.raises(UnsafeArchive) as err:
        build_golden([ContextEntry(src, "~/workspace", extract_archives=True)], tmp_path / "golden")
    assert "files.tar.gz" in str(err.value) and "../evil" in str(err.value)
    assert not (tmp_path / "golden" / "evil").exists()
    assert [p.name for p in tmp_path.rglob("evil")] == []
