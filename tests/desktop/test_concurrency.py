"""Episodes side by side on one host: each desktop is its own (display, D-Bus, processes), a dead
X server or app is reported as what it is, a killed run's leftovers are reaped, and the oracle
suite stays 100 % at concurrency=4."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mcpworld.core.errors import InfraError
from mcpworld.core.task import Task
from mcpworld.env.local import leftovers
from mcpworld.env.local.display import MARKER, VirtualDisplay
from mcpworld.env.local.environment import LocalEnvironment
from mcpworld.env.local.processes import scrubbed_env
from tests.helpers.desktops import left_behind

pytestmark = pytest.mark.desktop
ROOT = Path(__file__).resolve().parents[2]


def xterm_task(tmp_path: Path) -> Task:
    (tmp_path / "task").mkdir(exist_ok=True)
    return Task(
        id="t/xterm",
        app="xterm",
        instruction="test",
        dir=tmp_path / "task",
        source=tmp_path / "task" / "task.yaml",
        setup=[{"launch": {"command": ["xterm", "-T", "probe", "-e", "sleep", "600"], "window": "probe"}}],
    )


def test_displays_started_at_once_are_all_distinct_and_alive(tmp_path):
    displays = [VirtualDisplay(200, 200, window_manager="", desktop_id=f"{tmp_path}/d{i}") for i in range(6)]
    barrier = threading.Barrier(len(displays))
    errors = []

    def start(d: VirtualDisplay) -> None:
        try:
            barrier.wait(timeout=10)
            d.start(scrubbed_env(tmp_path, tmp_path))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(d,)) for d in displays]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not errors
        assert len({d.name for d in displays}) == len(displays)
        assert all(d.alive() for d in displays)
    finally:
        for d in displays:
            d.stop()


def test_stopping_one_desktop_never_touches_another_ones_processes(tmp_path):
    a = VirtualDisplay(200, 200, window_manager="", desktop_id=f"{tmp_path}/a")
    b = VirtualDisplay(200, 200, window_manager="", desktop_id=f"{tmp_path}/b")
    a.start(scrubbed_env(tmp_path, tmp_path))
    b.start(scrubbed_env(tmp_path, tmp_path))
    try:
        # a process that left b's process group (as D-Bus activations do) but carries b's marker
        escapee = subprocess.Popen(["sleep", "60"], env=b.env, start_new_session=True)
        a.stop()
        time.sleep(0.2)
        assert escapee.poll() is None and b.alive()
        b.stop()
        escapee.wait(timeout=5)  # b's teardown finds it by its marker
    finally:
        a.stop()
        b.stop()


def test_a_dead_x_server_is_an_infra_error_not_the_agents(tmp_path):
    env = LocalEnvironment(300, 200, window_manager="")
    try:
        env.reset(Task(id="t/none", app="none", instruction="x", dir=tmp_path, source=tmp_path / "task.yaml"), tmp_path)
        env.screenshot()
        env.display._xvfb.kill()
        env.display._xvfb.wait()
        with pytest.raises(InfraError, match=f"X server {env.display.name} died"):
            env.screenshot()
        with pytest.raises(InfraError, match="died"):
            env.act({"kind": "click", "x": 5, "y": 5})
    finally:
        env.close()


def test_an_app_that_exits_is_reported_once(tmp_path):
    env = LocalEnvironment(400, 300)
    try:
        env.reset(xterm_task(tmp_path), tmp_path / "episode")
        assert env.app_exits() == []
        env.launched[0].proc.kill()
        deadline = time.monotonic() + 5
        exits = []
        while not exits and time.monotonic() < deadline:
            exits = env.app_exits()
            time.sleep(0.05)
        assert exits and exits[0]["app"] == "xterm" and exits[0]["returncode"] == -signal.SIGKILL
        assert env.app_exits() == []
    finally:
        env.close()


def test_a_killed_runs_desktop_is_reaped_by_the_next_run(tmp_path):
    base = tmp_path / "shm"
    base.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    workroot = base / f"{leftovers.PREFIX}dead"
    workroot.mkdir()
    (workroot / leftovers.OWNER_FILE).write_text(json.dumps({"pid": dead.pid, "started": 0.0}))
    orphan = subprocess.Popen(["sleep", "60"], env={**os.environ, MARKER: str(workroot)}, start_new_session=True)
    alive = base / f"{leftovers.PREFIX}alive"
    alive.mkdir()
    leftovers.claim(alive)
    survivor = subprocess.Popen(["sleep", "60"], env={**os.environ, MARKER: str(alive)}, start_new_session=True)
    try:
        assert leftovers.reap([base]) == [workroot]
        orphan.wait(timeout=5)
        assert not workroot.exists()
        assert alive.is_dir() and survivor.poll() is None  # a live run's desktop is never touched
    finally:
        orphan.kill()
        survivor.kill()


@pytest.mark.slow
def test_the_oracle_suite_at_concurrency_4_succeeds_every_time(tmp_path):
    """The acceptance check: three runs of the light apps' built-in tasks, four at a time, all
    successes (every task's oracle runs once in test_cli_e2e; the big apps would only add minutes)."""
    for i in range(3):
        out = tmp_path / f"run{i}"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "mcpworld",
                "concurrency=4",
                "tracking=none",
                "task=[mousepad/*,xterm/*,pcmanfm/*]",
                f"hydra.run.dir={out}",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        statuses = [json.loads(p.read_text())["status"] for p in out.rglob("result.json")]
        assert len(statuses) >= 9 and set(statuses) == {"success"}, (i, statuses)
        assert not left_behind()


def test_an_exited_app_is_an_event_and_relaunched_when_its_config_says_so(tmp_path):
    from mcpworld.run.episode import watch_apps
    from mcpworld.telemetry.trace import Trace

    env = LocalEnvironment(400, 300)
    trace = Trace(tmp_path / "trace.jsonl")
    try:
        env.reset(xterm_task(tmp_path), tmp_path / "episode")
        first = env.launched[0].proc
        first.kill()
        first.wait()
        time.sleep(0.3)  # the window manager drops the window
        watch_apps(env, trace, relaunch=True)()
        (event,) = [e for e in trace.events if e["type"] == "app_exit"]
        assert event["app"] == "xterm" and event["relaunched"] is True and "argv" not in event
        assert len(env.launched) == 2 and env.launched[1].proc.poll() is None
        assert env.windows.find("probe") is not None
    finally:
        trace.close()
        env.close()
