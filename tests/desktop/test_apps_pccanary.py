"""PC-Canary's desktop apps (FreeCAD, qBittorrent, OBS Studio, QGIS, Shotcut, Telegram Desktop),
Debian's builds: each starts by the command the task loader gives it, its main window takes input,
and no first-run dialog (qBittorrent's legal notice, OBS's auto-configuration wizard …) opens
beside it. One test, the apps one after another on fresh desktops, to keep CI time low; an app
this machine lacks (``make apps APPS="freecad qbittorrent obs qgis shotcut telegram"``) is left out."""

from __future__ import annotations

import time

import pytest

from mcpworld.apps.catalog import programs
from mcpworld.core.task import Task
from mcpworld.env.local.environment import LocalEnvironment

pytestmark = pytest.mark.desktop

# app config → the command PC-Canary's tasks are given (mcpworld/tasks/mcpworld_format.py)
COMMANDS = {
    "freecad": "freecad",
    "qbittorrent": "qbittorrent",
    "obs": "obs",
    "qgis": "qgis",
    "shotcut": "shotcut",
    "telegram": "telegram-desktop",
}
WATCH_S = 3.0  # after its window answers: long enough for a dialog queued at start to show


def test_pccanary_apps_start_ready_with_no_first_run_dialog(tmp_path):
    chosen = [p for p in programs() if p.app in COMMANDS]
    assert sorted(p.app for p in chosen) == sorted(COMMANDS)
    for program in chosen:
        assert COMMANDS[program.app] in program.names and program.window
    installed = [p for p in chosen if p.installed()]
    if not installed:
        pytest.skip('none of PC-Canary\'s apps is installed (make apps APPS="freecad qbittorrent obs qgis shotcut telegram")')
    failures, timings = [], {}
    with LocalEnvironment(1280, 800, programs=installed, app_timeout_s=60) as env:
        for program in installed:
            command = COMMANDS[program.app]
            env.reset(
                Task(id=f"t/{program.app}", app=program.app, instruction="x", dir=tmp_path, source=tmp_path / "task.yaml"),
                tmp_path / program.app,
            )
            start = time.monotonic()
            env.launch([command])  # waits for the program's main window, then for it to answer a ping
            timings[program.app] = round(time.monotonic() - start, 1)
            main = env.launched[0].window
            time.sleep(WATCH_S)
            windows = env.windows.list()
            others = [(title, cls) for wid, title, cls in windows if wid != main]
            if main not in {wid for wid, _, _ in windows} or others:
                failures.append(
                    f"{program.app}: main window {'open' if main in {w for w, _, _ in windows} else 'gone'}, "
                    f"other windows {others}"
                )
            elif not env.windows.responds(main, 5):
                failures.append(f"{program.app}: its main window stopped answering")
    print("launch to ready (s):", timings)
    assert not failures, failures


def test_two_desktops_run_obs_at_once(tmp_path):
    """OBS looks for other OBS processes on the machine and, without --multi, shows "OBS is already
    running" instead of its main window: concurrent episodes must each get their own OBS."""
    (obs,) = [p for p in programs() if p.app == "obs"]
    if not obs.installed():
        pytest.skip("OBS is not installed (make apps APPS=obs)")
    with (
        LocalEnvironment(1280, 800, programs=[obs], app_timeout_s=30) as first,
        LocalEnvironment(1280, 800, programs=[obs], app_timeout_s=30) as second,
    ):
        for n, env in enumerate((first, second)):
            env.reset(
                Task(id=f"t/obs{n}", app="obs", instruction="x", dir=tmp_path, source=tmp_path / "task.yaml"),
                tmp_path / f"obs{n}",
            )
            env.launch(["obs"])  # raises when its main window does not come
        assert first.app_pid() != second.app_pid()
