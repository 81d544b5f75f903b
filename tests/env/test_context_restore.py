"""Context restore: the home equals the task's golden copy, and what the task gives is the agent's to change."""

from __future__ import annotations

import os
import shutil
import stat

import pytest

from mcpworld.core.task import ContextEntry
from mcpworld.env.context import build_golden, restore


@pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync is not installed (make apt)")  # restore copies with it
def test_a_read_only_task_folder_gives_a_writable_home(tmp_path):
    """A suite on a read-only mount (or a read-only copy, as ../shared's) must not leave the agent
    unable to save: VS Code refused to write a workspace's .vscode/settings.json copied that way."""
    source = tmp_path / "suite" / "workspace"
    (source / ".vscode").mkdir(parents=True)
    (source / ".vscode" / "settings.json").write_text("{}")
    for path in (source / ".vscode" / "settings.json", source / ".vscode", source):
        path.chmod(0o444 if path.is_file() else 0o555)
    golden = build_golden([ContextEntry(source, "~/workspace")], tmp_path / "golden")
    home = tmp_path / "home"
    restore(golden, home)
    for path in (home / "workspace", home / "workspace" / ".vscode", home / "workspace" / ".vscode" / "settings.json"):
        assert os.stat(path).st_mode & stat.S_IWUSR, path
    assert (home / "workspace" / ".vscode" / "settings.json").read_text() == "{}"
    restore(golden, home)  # again, over the previous attempt's home
    assert os.stat(home / "workspace" / ".vscode").st_mode & stat.S_IWUSR


@pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync is not installed (make apt)")
def test_an_osworld_task_finds_the_vms_home_folders_and_a_native_task_only_its_own(tmp_path):
    from pathlib import Path

    from mcpworld.core.task import Task
    from mcpworld.env.context import VM_HOME_FOLDERS, Goldens

    goldens = Goldens(tmp_path / "goldens", lambda: [])
    for fmt, home in (("osworld", tmp_path / "vm-home"), ("native", tmp_path / "own-home")):
        task = Task(id=f"t/{fmt}", app="os", instruction="x", dir=tmp_path, source=Path("x"), format=fmt)
        goldens.restore(task, home, owner=None)
    assert sorted(p.name for p in (tmp_path / "vm-home").iterdir()) == sorted([*VM_HOME_FOLDERS, ".config"])
    assert "set-sink-volume" in (tmp_path / "vm-home" / ".config" / "pulse" / "default.pa").read_text()
    assert "Desktop" in VM_HOME_FOLDERS and list((tmp_path / "own-home").iterdir()) == []
