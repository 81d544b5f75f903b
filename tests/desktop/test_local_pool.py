"""env.pool for env=local: the next desktop is started while an episode runs, each episode gets a
fresh one (display, account, cgroup, network) over a home holding only its task's context, and
nothing of the pool outlives close(), Ctrl-C or a kill -9 followed by the next run's sweep."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from mcpworld.core.errors import UserError
from mcpworld.core.task import ContextEntry, Task
from mcpworld.env.local import leftovers
from mcpworld.env.local.display import MARKER, X_SOCKET_DIR, socket_answers
from mcpworld.env.local.environment import LocalEnvironment
from mcpworld.env.local.netns import NETNS_DIR
from mcpworld.env.local.pool import PreparedDesktop

pytestmark = pytest.mark.desktop
ROOT = Path(__file__).resolve().parents[2]


def xterm_task(tmp_path: Path) -> Task:
    ctx = tmp_path / "task" / "context"
    ctx.mkdir(parents=True, exist_ok=True)
    (ctx / "notes.txt").write_text("alpha\n")
    return Task(
        id="t/pool",
        app="xterm",
        instruction="test",
        dir=tmp_path / "task",
        source=tmp_path / "task" / "task.yaml",
        context=[ContextEntry(ctx / "notes.txt", "~/docs/notes.txt")],
        setup=[{"launch": {"command": ["xterm", "-T", "probe"], "window": "probe"}}],
    )


def wait_for(condition, timeout_s: float = 30.0, what: str = "the condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"{what} did not hold within {timeout_s:.0f}s")


@dataclass
class Traces:
    """Everything of one prepared desktop that must be gone after its teardown."""

    folder: Path
    socket: Path
    cgroup: Path | None
    netns: Path | None
    pids: list[int]

    @classmethod
    def of(cls, desktop: PreparedDesktop) -> Traces:
        cgroup = desktop.confinement.cgroup
        return cls(
            desktop.folder,
            X_SOCKET_DIR / f"X{desktop.display.number}",
            cgroup.path if cgroup else None,
            desktop.netns.path if desktop.netns else None,
            marked(desktop.folder),
        )

    def left(self) -> list:
        """What is still there (the X socket only while stale: its number may be another desktop's by now)."""
        return (
            [p for p in (self.folder, self.cgroup, self.netns) if p is not None and p.exists()]
            + [self.socket] * stale(self.socket)
            + [pid for pid in self.pids if running(pid)]
        )


def stale(path: Path) -> bool:
    """A socket file that no server answers on."""
    return path.exists() and not socket_answers(path)


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def marked(folder: Path) -> list[int]:
    """Processes whose desktop marker names ``folder``."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(MARKER) == str(folder):
                found.append(proc.pid)
        except (psutil.Error, OSError):
            pass
    return found


def files_under(home: Path) -> set[str]:
    return {str(p.relative_to(home)) for p in home.rglob("*")}


def test_a_pooled_reset_starts_on_a_fresh_display_over_a_home_of_only_the_tasks_context(tmp_path):
    task = xterm_task(tmp_path)
    with LocalEnvironment(400, 300, pool=2, network="isolated") as env:
        env.reset(task, tmp_path / "ep0")
        first = env._prepared
        assert first is not None
        before = Traces.of(first)
        assert before.pids and env.windows.find("probe")
        # what an agent leaves: a changed document, a stray file, a temp file, a process left running
        (env.home / "docs" / "notes.txt").write_text("changed by the agent")
        mess = "echo x > ~/stray.txt && echo t > $TMPDIR/left.txt && (setsid sleep 600 >/dev/null 2>&1 &)"
        assert env.shell(mess, timeout=10).returncode == 0

        def sleeping() -> list[int]:  # (the detached child may not have become `sleep` yet)
            found = []
            for pid in marked(first.folder):
                with contextlib.suppress(psutil.Error):
                    found += [pid] if psutil.Process(pid).name() == "sleep" else []
            return found

        stray = wait_for(sleeping, what="the agent's detached process")
        first_user, first_display, first_server = env.user, env.display.name, env.display._xvfb.pid
        wait_for(env.spares, what="a spare desktop")  # (the episode runs on meanwhile)
        env.end_episode()

        env.reset(task, tmp_path / "ep1")
        second = env._prepared
        assert second is not None and second is not first
        # a display of its own, the last one's gone with everything that ran on it
        assert env.display.name != first_display and env.display._xvfb.pid != first_server
        assert wait_for(lambda: not before.left(), what="the last desktop's removal"), before.left()
        assert stray and not any(running(p) for p in stray)
        # the home holds only the task's context, as the new desktop's account
        assert files_under(env.home) == {"docs", "docs/notes.txt"}
        assert env.read_file("~/docs/notes.txt") == b"alpha\n"
        assert "left.txt" not in env.shell("ls -A $TMPDIR").stdout
        if first_user is not None:  # as root: each desktop its own account, cgroup and namespace
            assert env.user is not None and env.user != first_user
            assert all(p.stat().st_uid == env.user.uid for p in [env.home, *env.home.rglob("*")])
            assert env.shell("id -u").stdout.strip() == str(env.user.uid)
            assert env.confinement.cgroup is None or env.confinement.cgroup.path != before.cgroup
            assert env.netns is None or env.netns.path != before.netns
        assert env.windows.find("probe")  # the task's app, started on the new desktop
        log = json.loads((tmp_path / "ep1" / "logs" / "desktop.json").read_text())
        assert log["display"] == env.display.name and "pool_wait_s" in log


def test_the_next_desktop_is_started_while_an_episode_runs_and_the_reset_takes_it(tmp_path):
    task = xterm_task(tmp_path)
    with LocalEnvironment(400, 300, pool=2, network="isolated") as env:
        env.reset(task, tmp_path / "ep0")
        (spare,) = wait_for(env.spares, what="a spare desktop")
        # before the next reset is asked for: its X server answers, its bus and window manager run
        assert spare.display.alive() and spare.display.name != env.display.name
        assert (X_SOCKET_DIR / f"X{spare.display.number}").exists()
        running = {psutil.Process(p).name() for p in marked(spare.folder)}
        assert {"Xvfb", "dbus-daemon", "openbox"} <= running, running
        assert "probe" not in str(spare.display.env)  # nothing of the task's
        env.end_episode()
        env.reset(task, tmp_path / "ep1")
        assert env.display is spare.display and env._prepared is spare
        assert env.windows.find("probe")


def test_an_episode_with_its_own_variables_gets_a_desktop_started_with_them_and_the_spare_waits(tmp_path):
    task = xterm_task(tmp_path)
    with LocalEnvironment(400, 300, pool=2) as env:
        env.reset(task, tmp_path / "ep0")
        (spare,) = wait_for(env.spares, what="a spare desktop")
        env.end_episode()
        env.extra_env = {"EPISODE_SINK": "http://127.0.0.1:9/sink"}
        env.reset(task, tmp_path / "ep1")
        assert env._prepared is not spare and env.spares() == [spare]
        window_manager = [psutil.Process(p) for p in marked(env._prepared.folder) if psutil.Process(p).name() == "openbox"]
        assert window_manager and window_manager[0].environ()["EPISODE_SINK"] == "http://127.0.0.1:9/sink"
        env.end_episode()
        env.extra_env = {}
        env.reset(task, tmp_path / "ep2")
        assert env._prepared is spare


def test_a_bad_pool_size_names_the_key():
    with pytest.raises(UserError, match=r"env\.pool=0"):
        LocalEnvironment(400, 300, pool=0)


def test_close_leaves_no_desktop_of_the_pool(tmp_path):
    env = LocalEnvironment(400, 300, pool=3, network="isolated")
    try:
        env.reset(xterm_task(tmp_path), tmp_path / "ep0")
        spares = wait_for(lambda: len(env.spares()) == 2 and env.spares(), what="two spare desktops")
        desktops = [Traces.of(d) for d in [env._prepared, *spares]]
        assert all(d.pids for d in desktops)
    finally:
        env.close()
    assert [d.left() for d in desktops] == [[]] * 3
    assert not env.workroot.exists()


# a harness that holds a pooled desktop and its spare, says where they are, then waits to be stopped
HOLDER = """
import json, sys, time
from pathlib import Path
from mcpworld.core.task import Task
from mcpworld.env.local.environment import LocalEnvironment
tmp = Path(sys.argv[1])
(tmp / "task").mkdir(exist_ok=True)
task = Task(id="t/pool", app="xterm", instruction="-", dir=tmp / "task", source=tmp / "task" / "task.yaml",
            setup=[{"launch": {"command": ["xterm", "-T", "probe"], "window": "probe"}}])
with LocalEnvironment(400, 300, pool=2, network="isolated") as env:
    env.reset(task, tmp / "ep")
    while not env.spares():
        time.sleep(0.02)
    desktops = [env._prepared, *env.spares()]
    print(json.dumps({"workroot": str(env.workroot), "desktops": [
        {"folder": str(d.folder), "number": d.display.number,
         "cgroup": str(d.confinement.cgroup.path) if d.confinement.cgroup else None,
         "netns": str(d.netns.path) if d.netns else None} for d in desktops]}), flush=True)
    while True:
        time.sleep(1)
"""


def hold_desktops(tmp_path: Path) -> tuple[subprocess.Popen, dict, list[Traces]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"the holder exited with {proc.wait()}"
    held = json.loads(line)
    traces = [
        Traces(
            Path(d["folder"]),
            X_SOCKET_DIR / f"X{d['number']}",
            d["cgroup"] and Path(d["cgroup"]),
            d["netns"] and Path(d["netns"]),
            marked(Path(d["folder"])),
        )
        for d in held["desktops"]
    ]
    assert all(t.pids and t.folder.is_dir() and t.socket.exists() for t in traces)
    return proc, held, traces


def test_ctrl_c_leaves_no_desktop_of_the_pool(tmp_path):
    proc, held, traces = hold_desktops(tmp_path)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) != 0
    assert [t.left() for t in traces] == [[]] * len(traces)
    assert not Path(held["workroot"]).exists()


def test_after_kill_9_the_sweep_removes_the_pools_desktops(tmp_path):
    proc, held, traces = hold_desktops(tmp_path)
    proc.kill()
    proc.wait(timeout=10)
    assert all(t.left() for t in traces), "a killed holder should leave its desktops (else this tests nothing)"
    leftovers.reap()  # (another run's sweep on this machine may get there first: what counts is that they are gone)
    assert not [f for f in [*(str(t.folder) for t in traces), held["workroot"]] if Path(f).exists()]
    assert [t.left() for t in traces] == [[]] * len(traces)
    assert not list(NETNS_DIR.glob(f"mcpworld-{proc.pid}-*"))
