"""Getters and metrics that read a live desktop: clipboard, wallpaper, terminal output, and a
test suite run as the desktop's user."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mcpworld.apps.catalog import programs
from mcpworld.core.task import Task
from mcpworld.env.local.environment import LocalEnvironment
from mcpworld.evaluation.getters.desktop import vm_clipboard, vm_terminal_output, vm_wallpaper
from mcpworld.evaluation.spec import evaluate_spec

pytestmark = pytest.mark.desktop


def _task(tmp_path: Path, setup: list) -> Task:
    return Task(id="t/system", app="mousepad", instruction="x", dir=tmp_path, source=tmp_path / "task.json", setup=setup)


def _until(check, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def test_clipboard_copied_in_an_app_is_read_and_graded(tmp_path):
    path = "/home/user/Data3/List3/secret.docx"
    spec = {
        "func": "is_in_vm_clickboard",
        "result": {"type": "rule", "rules": {"expected": path}},
        "expected": {"type": "vm_clipboard"},
    }
    with LocalEnvironment(800, 600) as env:
        env.reset(_task(tmp_path, [{"launch": {"command": ["mousepad"], "window": "Mousepad"}}]), tmp_path / "ep")
        assert vm_clipboard(env, {"type": "vm_clipboard"}) is None  # nothing copied yet
        env.act({"kind": "type", "text": path})
        env.act({"kind": "key", "keys": "ctrl+a"})
        env.act({"kind": "key", "keys": "ctrl+c"})
        assert _until(lambda: vm_clipboard(env, {"type": "vm_clipboard"})) == path
        score, outcomes = evaluate_spec(env, spec, "DONE")
        env.end_episode()
    assert score == 1.0, outcomes


def test_terminal_output_of_the_desktops_xterm(tmp_path):
    """The desktop's `xterm` (mcpworld/conf/app/xterm.yaml) logs what it shows where the getter reads it."""
    setup = [{"launch": {"command": ["xterm", "-geometry", "132x43"], "window": "xterm"}}]
    with LocalEnvironment(1000, 800, programs=programs()) as env:
        env.reset(_task(tmp_path, setup), tmp_path / "ep")
        env.act({"kind": "type", "text": "stty size; echo done-$((6*7))\n"})
        text = _until(
            lambda: (
                "done-42" in (vm_terminal_output(env, {"type": "vm_terminal_output"}) or "")
                and vm_terminal_output(env, {"type": "vm_terminal_output"})
            )
        )
        env.end_episode()
    assert "43 132" in text and "stty size; echo done-$((6*7))" in text


def test_wallpaper_set_with_gsettings(tmp_path):
    with LocalEnvironment(640, 480) as env:
        env.reset(_task(tmp_path, []), tmp_path / "ep")
        picture = env.home / "Pictures" / "frame.png"
        picture.parent.mkdir()
        picture.write_bytes(b"\x89PNG not really")
        done = env.shell(f"gsettings set org.gnome.desktop.background picture-uri 'file://{picture}'")
        assert done.returncode == 0, done.stderr
        local = vm_wallpaper(env, {"type": "vm_wallpaper", "dest": "background.png"})
        assert Path(local).read_bytes() == b"\x89PNG not really"
        env.end_episode()


def test_test_suite_runs_as_the_desktop_user(tmp_path):
    spec = {
        "func": "check_python_file_by_test_suite",
        "result": {"type": "vm_file", "multi": True, "path": ["~/Desktop/game/mine.py"], "dest": ["mine.py"]},
        "expected": {"type": "vm_file", "path": "~/suite.py", "dest": "test_suite.py"},
    }
    with LocalEnvironment(640, 480) as env:
        env.reset(_task(tmp_path, []), tmp_path / "ep")
        uid = int(env.shell("id -u").stdout)
        (env.home / "Desktop" / "game").mkdir(parents=True)
        (env.home / "Desktop" / "game" / "mine.py").write_text("import os\nUID = os.getuid()\n")
        (env.home / "suite.py").write_text(f"from mine import UID\ndef test():\n    return UID == {uid}\n")
        score, outcomes = evaluate_spec(env, spec, "DONE")
        env.end_episode()
    assert score == 1.0, outcomes
