"""The ledger of Klavis sandboxes this machine holds, so a killed run's are given back.

Every acquired sandbox (local or individual) is written down as one small JSON file naming the
process that holds it, and removed once it is released. A run killed before it could release
(kill -9, a crashed host, a lost machine) leaves its files; the next run that talks to the same
Klavis finds the ones whose process is gone and releases them (their TTL would free them only
hours later, and occupied test accounts are a shared pool). Live runs' leases are never touched,
so parallel runs are safe. The files hold ids and URLs, never a key.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from mcpworld.core.paths import HOME

if TYPE_CHECKING:
    from mcpworld.mcp.klavis import KlavisClient, Sandbox

log = logging.getLogger(__name__)

DEFAULT_DIR = HOME / ".klavis-leases"
SAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class Lease:
    """One sandbox written down: what to DELETE, where, and who holds it."""

    id: str
    server: str | None  # None: a local sandbox
    base_url: str
    pid: int
    started: float
    file: Path


def _holder() -> tuple[int, float]:
    me = psutil.Process()
    return me.pid, me.create_time()


def holder_alive(pid: int, started: float) -> bool:
    """Whether the process that wrote a lease still runs (not merely a recycled pid)."""
    try:
        return abs(psutil.Process(pid).create_time() - started) < 1.0
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True  # cannot tell: leave it alone


class Leases:
    """The ledger in ``folder`` (default ``$MCPWORLD_HOME/.klavis-leases``)."""

    def __init__(self, folder: Path | str | None = None):
        self.folder = Path(folder).expanduser() if folder else DEFAULT_DIR

    def _file(self, sandbox_id: str) -> Path:
        return self.folder / f"{SAFE.sub('_', sandbox_id)}.json"

    def record(self, sandbox: Sandbox, base_url: str) -> None:
        """Write the sandbox down before anything else can fail (an unwritable ledger only warns:
        the sandbox still expires at its TTL)."""
        pid, started = _holder()
        data = {"id": sandbox.id, "server": sandbox.server, "base_url": base_url, "pid": pid, "started": started}
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            target = self._file(sandbox.id)
            partial = target.with_suffix(".part")
            partial.write_text(json.dumps(data))
            os.replace(partial, target)
        except OSError as exc:
            log.warning(
                "could not record Klavis sandbox %s in %s (%s): a killed run would leave it until its TTL",
                sandbox.id,
                self.folder,
                exc,
            )

    def forget(self, sandbox_id: str) -> None:
        self._file(sandbox_id).unlink(missing_ok=True)

    def all(self) -> list[Lease]:
        leases = []
        for path in sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []:
            try:
                d: dict[str, Any] = json.loads(path.read_text())
                leases.append(Lease(str(d["id"]), d.get("server"), str(d["base_url"]), int(d["pid"]), float(d["started"]), path))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # mid-write or foreign: not ours to judge
        return leases

    def orphaned(self, base_url: str) -> list[Lease]:
        """Leases on ``base_url`` whose holder is gone."""
        return [
            lease for lease in self.all() if lease.base_url == base_url.rstrip("/") and not holder_alive(lease.pid, lease.started)
        ]


async def release_orphans(client: KlavisClient, leases: Leases) -> list[Lease]:
    """Release every sandbox a dead run left on the client's Klavis; the ones now gone (a release
    that fails stays in the ledger for the next run)."""
    from mcpworld.mcp.klavis import Sandbox

    released = []
    for lease in leases.orphaned(client.base_url):
        if await client.release(Sandbox(id=lease.id, urls={}, server=lease.server)):
            leases.forget(lease.id)
            released.append(lease)
    return released
