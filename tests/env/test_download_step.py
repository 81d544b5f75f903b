"""The download step: a file named by URL lands in the home through the file cache; a host that
cannot serve it is an infra error (the environment's failure, not the agent's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpworld.core.errors import InfraError
from mcpworld.env.steps import run_steps
from tests.fakes.file_server import FileServer


class CopyHost:
    def __init__(self) -> None:
        self.copied: list[tuple[bytes, str]] = []

    def copy_in(self, src: str, dest: str) -> None:
        self.copied.append((Path(src).read_bytes(), dest))


def test_download_step_fetches_and_copies(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with FileServer({"/f/notes.txt": b"notes"}) as host:
        steps = [{"download": {"url": host.url + "/f/notes.txt", "dest": "/home/user/notes.txt"}}]
        target = CopyHost()
        run_steps(target, steps)
        run_steps(target, steps)  # the second attempt of the task: from the cache
        assert target.copied == [(b"notes", "/home/user/notes.txt")] * 2 and host.count("/f/notes.txt") == 1
        with pytest.raises(InfraError, match=r"could not fetch .*/f/gone\.txt: HTTP 404"):
            run_steps(target, [{"download": {"url": host.url + "/f/gone.txt", "dest": "/home/user/g.txt"}}])
