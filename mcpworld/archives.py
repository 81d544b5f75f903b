"""Safe archive extraction: task workspaces and sandbox dumps come from outside, so an archive may
never write outside its destination (no absolute paths, no ``..``, no links pointing out, no
device files). Python's ``tarfile`` "data" filter enforces exactly that; we turn its refusals into
one error naming the archive and the member."""

from __future__ import annotations

import io
import tarfile
import zlib
from pathlib import Path

from mcpworld.errors import UserError


class UnsafeArchive(UserError):
    """An archive member that would land outside the destination."""


def safe_extract(archive: Path | bytes, dest: Path, label: str | None = None) -> list[str]:
    """Extract a (gzipped) tar file or its bytes into ``dest``; the member names extracted."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    name = label or (str(archive) if isinstance(archive, Path) else "archive")
    try:
        opened = (tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") if isinstance(archive, bytes)
                  else tarfile.open(archive, mode="r:*"))
        with opened as tar:
            members = tar.getmembers()
            for member in members:
                if member.name.startswith(("/", "\\")) or member.name[1:2] == ":":  # the filter would strip it
                    raise UnsafeArchive(f"{name}: refusing to extract {member.name!r}: an absolute path")
                try:
                    tarfile.data_filter(member, str(dest))
                except tarfile.FilterError as exc:
                    raise UnsafeArchive(f"{name}: refusing to extract {member.name!r}: {exc}") from None
            tar.extractall(dest, filter="data")
            return [m.name for m in members]
    except (tarfile.TarError, EOFError, zlib.error) as exc:  # not a tar, or one cut short
        raise UserError(f"{name}: not a readable tar archive: {exc}") from None


def pack(folder: Path) -> bytes:
    """A gzipped tar of ``folder``'s contents (paths relative to it), e.g. a workspace upload."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(Path(folder).rglob("*")):
            tar.add(path, arcname=path.relative_to(folder).as_posix(), recursive=False)
    return buffer.getvalue()
