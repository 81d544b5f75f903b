"""OSWorld's machine conventions on this desktop, each through a task file shaped like the suite's
(tests/data/osworld_conventions/): Chrome's window name and process name for Debian's Chromium,
chrome:// pages on its command line, and GNOME's ctrl+alt+t terminal read by vm_terminal_output."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mcpworld.apps.catalog import programs
from mcpworld.core.task import Task
from mcpworld.env.local.environment import LocalEnvironment
from mcpworld.evaluation.registry import get_getter
from mcpworld.evaluation.verdict import judge
from mcpworld.tasks.load import load_task_file

pytestmark = pytest.mark.desktop

FIXTURES = Path(__file__).parents[1] / "data" / "osworld_conventions"


def load(tmp_path: Path, name: str, **changes: object) -> Task:
    """A fixture task, with top-level keys replaced (a copy under tmp_path)."""
    data = dict(json.loads((FIXTURES / f"{name}.json").read_text()), **changes)
    path = tmp_path / "suite" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    task = load_task_file(path)
    assert task.skip_reason is None, task.skip_reason
    return task


def run(task: Task, tmp_path: Path, check=None) -> float:
    with LocalEnvironment(1000, 800, programs=programs()) as env:
        env.reset(task, tmp_path / "ep")
        if check:
            check(env)
        verdict = judge(task, env, "DONE")
        env.end_episode()
    return verdict.score


def wait_active(env: LocalEnvironment, wid: int | None, timeout_s: float = 10) -> bool:
    """Whether the window manager makes ``wid`` the active window within ``timeout_s``."""
    assert env.windows is not None
    deadline = time.monotonic() + timeout_s
    while env.windows.active() != wid and time.monotonic() < deadline:
        time.sleep(0.05)
    return wid is not None and env.windows.active() == wid


def test_activate_window_google_chrome_brings_chromium_to_the_front(tmp_path):
    def covered_first(env: LocalEnvironment) -> None:
        # the xterm launched last was in front until the step activated the browser by Chrome's name
        assert env.windows is not None
        assert wait_active(env, env.windows.find_named("Google Chrome"))

    assert run(load(tmp_path, "chrome-activate"), tmp_path, covered_first) == 1.0


def test_chrome_settings_page_on_the_command_line_is_open(tmp_path):
    assert run(load(tmp_path, "chrome-settings-url"), tmp_path) == 1.0


@pytest.mark.parametrize("command", ["pkill chrome", "killall chrome", "pkill -f chrome"])
def test_killing_chrome_by_name_stops_the_browser(tmp_path, command):
    task = load(tmp_path, "chrome-pkill")
    data = json.loads((FIXTURES / "chrome-pkill.json").read_text())
    data["config"][1]["parameters"]["command"] = command
    task = load(tmp_path, "chrome-pkill", config=data["config"])
    assert run(task, tmp_path) == 1.0


def test_pkill_chrome_then_google_chrome_runs_a_new_browser(tmp_path):
    """The postconfig of OSWorld's bookmark tasks: the browser stopped (it writes its profile) and
    started again at once; the new one must not hand itself to the one shutting down."""
    first: list[int | None] = []
    task = load(tmp_path, "chrome-pkill-relaunch")
    with LocalEnvironment(1000, 800, programs=programs()) as env:
        env.reset(task, tmp_path / "ep")
        first.append(env.app_pid())
        verdict = judge(task, env, "DONE")
        second = env.shell('pgrep -u "$(id -u)" -x -o chromium').stdout.strip()
        tabs = get_getter("open_tabs_info")(env, {})  # the new browser answers on the desktop's DevTools port
        env.end_episode()
    assert verdict.score == 1.0, verdict.metrics
    assert first[0] is not None and second and int(second) != first[0]
    assert tabs and all("url" in tab for tab in tabs)


def test_ctrl_alt_t_opens_a_terminal_that_vm_terminal_output_reads(tmp_path):
    task = load(tmp_path, "terminal-ctrl-alt-t")
    with LocalEnvironment(1000, 800, programs=programs()) as env:
        env.reset(task, tmp_path / "ep")
        assert env.windows is not None
        assert wait_active(env, env.windows.find_named("Terminal", strict=True))
        # the shell runs what was typed a moment after the last key: wait for its output
        read = get_getter("vm_terminal_output")
        deadline = time.monotonic() + 10
        while "24 80" not in (read(env, {}) or "") and time.monotonic() < deadline:
            time.sleep(0.1)
        verdict = judge(task, env, "DONE")
        seen = env.shell('ls -la ~/.cache/mcpworld; ps -o pid,ppid,args -u "$(id -u)"').stdout
        env.end_episode()
    assert verdict.score == 1.0, (verdict.metrics, seen)
