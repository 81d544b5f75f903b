"""Safe archive extraction: task workspaces and sandbox dumps come from outside, so an archive may
never write outside its destination (no absolute paths, no ``..``, no links pointing out, no
device files). Python's ``tarfile`` "data" filter enforces exactly that; we turn its refusals into
one error naming the archive and the member."""

from __future__ import annotations

import io
import tarfile
import zlib
from pathlib import Path

from mcpworld.core.errors import UserError


class UnsafeArchive(UserError):
    """An archive member that would land outside the destination."""


def safe_extract(archive: Path | bytes, dest: Path, label: str | None = None) -> list[str]:
    """Extract a (gzipped) tar file or its bytes into ``dest``; the member names extracted."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    name = label or (str(archive) if isinstance(archive, Path) else "archive")
    try:
        opened = (
            tarfile.open(fileobj=io.BytesIO(archive), mode="r:*")  # noqa: SIM115 - kept open beyond this block
            if isinstance(archive, bytes)
            else tarfile.open(archive, mode="r:*")  # noqa: SIM115 - kept open beyond this block
        )
        with opened as tar:
            members = tar.getmembers()
            for member in members:
                if member.name.startswith(("/", "\\")) or member.name[1:2] == ":":  # the filter would strip it
                    raise UnsafeArchive(f"{name}: refusing to extract {member.name!r}: an absolute path")
                why = _unsafe(member, dest)
                if why:
                    raise UnsafeArchive(f"{name}: refusing to extract {member.name!r}: {why}")
            if HAS_FILTERS:
                tar.extractall(dest, filter="data")
            else:  # every member passed the checks above; drop what the data filter would drop
                for member in members:
                    member.mode &= 0o755
                    member.uid = member.gid = 0
                    member.uname = member.gname = ""
                tar.extractall(dest)
            return [m.name for m in members]
    except (tarfile.TarError, EOFError, zlib.error) as exc:  # not a tar, or one cut short
        raise UserError(f"{name}: not a readable tar archive: {exc}") from None


# Python 3.11.4 added extraction filters; Debian 12's 3.11.2 (the interpreter the desktop account
# can run) has none, so the same refusals are made here for it.
HAS_FILTERS = hasattr(tarfile, "data_filter")


def _unsafe(member: tarfile.TarInfo, dest: Path) -> str | None:
    """Why the "data" filter would refuse ``member`` (None if it would extract it)."""
    if HAS_FILTERS:
        try:
            tarfile.data_filter(member, str(dest))
            return None
        except tarfile.FilterError as exc:
            return str(exc)
    root = dest.resolve()
    target = (root / member.name).resolve()
    if target != root and root not in target.parents:
        return f"it would be written outside {dest}"
    if member.ischr() or member.isblk() or member.isfifo() or member.isdev():
        return "it is a device or pipe"
    if member.issym() or member.islnk():
        base = target.parent if member.issym() else root
        link = Path(member.linkname)
        if link.is_absolute():
            return f"it links to the absolute path {member.linkname!r}"
        pointed = (base / link).resolve()
        if pointed != root and root not in pointed.parents:
            return f"it links outside {dest} ({member.linkname!r})"
    return None


def pack(folder: Path) -> bytes:
    """A gzipped tar of ``folder``'s contents (paths relative to it), e.g. a workspace upload."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(Path(folder).rglob("*")):
            tar.add(path, arcname=path.relative_to(folder).as_posix(), recursive=False)
    return buffer.getvalue()
