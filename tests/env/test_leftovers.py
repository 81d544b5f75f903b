"""Reaping the desktops a killed run left behind: only folders whose owner died, and never a folder
this account cannot look into (root's, seen by an unprivileged user's run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpworld.env.local import cgroup, leftovers, mountns, netns


@pytest.fixture
def no_sweeps(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (cgroup, netns, mountns):
        monkeypatch.setattr(module, "sweep", lambda: None)
    monkeypatch.setattr(leftovers, "kill_marked", lambda *_: None)


def dead_run_folder(base: Path, name: str) -> Path:
    folder = base / (leftovers.PREFIX + name)
    folder.mkdir()
    (folder / leftovers.OWNER_FILE).write_text(json.dumps({"pid": 2**22 + 1, "started": 0.0}))  # no such process
    return folder


def test_a_dead_runs_folder_is_reaped_and_an_unreadable_one_is_left(tmp_path: Path, monkeypatch, no_sweeps) -> None:
    dead = dead_run_folder(tmp_path, "dead")
    locked = dead_run_folder(tmp_path, "users")
    real_is_file = Path.is_file

    def is_file(self: Path) -> bool:
        if self.parent == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_file(self)

    monkeypatch.setattr(Path, "is_file", is_file)
    assert leftovers.reap([tmp_path]) == [dead]
    assert not dead.exists() and locked.exists()
