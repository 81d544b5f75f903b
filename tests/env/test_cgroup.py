"""A desktop's cgroup: a process that drops every trace the marker sweep looks for (its
environment, its session, its parent) still dies at teardown; a killed run's cgroups are swept."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from mcpworld.env.local import cgroup, desktop_user
from mcpworld.env.local.cgroup import DesktopCgroup
from mcpworld.env.local.confine import Confinement
from mcpworld.env.local.processes import ProcessSet, run_bounded, scrubbed_env

MARKER = "MCPWORLD_DESKTOP"

# forks, leaves the session, forks again (the grandchild is reparented away from us) and becomes
# `sleep` with an empty environment, as Chromium's rewritten environ block hides its marker
ESCAPE = """
import os, sys
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
os.execve("/bin/sleep", ["sleep", "600"], {})
"""


@pytest.fixture
def group(tmp_path):
    made = DesktopCgroup.create(tmp_path.name)
    if made is None:
        pytest.skip("this machine gives no cgroup v2 (not root, or no v2 mount)")
    yield made
    made.remove()


def escaped_pid(pidfile: Path) -> psutil.Process:
    for _ in range(500):
        if pidfile.exists() and pidfile.read_text():
            proc = psutil.Process(int(pidfile.read_text()))
            for _ in range(500):
                if proc.name() == "sleep":
                    return proc
                time.sleep(0.01)
        time.sleep(0.01)
    raise AssertionError("the escaping process never started")


def spawn_escapee(procs: ProcessSet, tmp_path: Path, user: desktop_user.DesktopUser | None = None) -> psutil.Process:
    pidfile = tmp_path / "pid"
    env = {**scrubbed_env(tmp_path, tmp_path), MARKER: "desktop-under-test"}
    procs.spawn([sys.executable, "-c", ESCAPE, str(pidfile)], env=env, user=user).wait(timeout=30)
    escapee = escaped_pid(pidfile)
    assert MARKER not in escapee.environ()  # the marker sweep cannot see it
    assert escapee.ppid() != os.getpid() and os.getsid(escapee.pid) != os.getsid(0)
    return escapee


def test_a_process_that_rewrites_its_environment_and_double_forks_dies_with_the_cgroup(group, tmp_path):
    procs = ProcessSet(marker=(MARKER, "desktop-under-test"), confinement=Confinement(group))
    escapee = spawn_escapee(procs, tmp_path)
    assert escapee.pid in group.pids()
    started = time.monotonic()
    procs.stop(grace_s=0.2)
    assert not escapee.is_running() or escapee.status() == psutil.STATUS_ZOMBIE
    assert not group.populated() and group.pids() == []
    assert time.monotonic() - started < 3
    assert group.remove() and not group.path.exists()


def test_without_a_cgroup_the_marker_sweep_misses_it(tmp_path):
    """Why the cgroup is needed: the environment marker alone leaves the same process running."""
    procs = ProcessSet(marker=(MARKER, "desktop-under-test"))
    escapee = spawn_escapee(procs, tmp_path)
    try:
        procs.stop(grace_s=0.2)
        assert escapee.is_running()
    finally:
        escapee.kill()


def test_the_desktop_account_runs_inside_the_cgroup_and_cannot_leave_it(group):
    if os.geteuid() != 0:
        pytest.skip("desktop accounts need root")
    slot = desktop_user.acquire()
    assert slot.user is not None
    shared = Path(tempfile.mkdtemp(prefix="mcpworld-test-cgroup-"))
    shared.chmod(0o777)  # the account writes its pid file here
    try:
        confinement = Confinement(group)
        root = cgroup.v2_mount()
        out = run_bounded(
            ["bash", "-c", f"id -u; cat /proc/self/cgroup; echo $$ > {root}/cgroup.procs 2>/dev/null || echo refused"],
            scrubbed_env(shared, shared),
            shared,
            30,
            4000,
            user=slot.user,
            confinement=confinement,
        )
        lines = out.stdout.split()
        assert lines[0] == str(slot.user.uid)
        assert any(line.startswith("0::") and line.endswith(group.path.name) for line in lines)
        assert lines[-1] == "refused"
        escapee = spawn_escapee(ProcessSet(confinement=confinement), shared, user=slot.user)
        assert escapee.uids().real == slot.user.uid
        confinement.kill()
        assert not escapee.is_running() or escapee.status() == psutil.STATUS_ZOMBIE
    finally:
        slot.release()
        shutil.rmtree(shared, ignore_errors=True)


def test_a_shell_command_left_running_in_the_background_dies_at_teardown(group, tmp_path):
    confinement = Confinement(group)
    result = run_bounded(
        ["bash", "-c", "setsid nohup sleep 600 >/dev/null 2>&1 & echo $!"],
        scrubbed_env(tmp_path, tmp_path),
        tmp_path,
        30,
        4000,
        confinement=confinement,
    )
    background = psutil.Process(int(result.stdout.strip()))
    assert background.is_running() and background.pid in group.pids()
    confinement.kill()
    assert not background.is_running() or background.status() == psutil.STATUS_ZOMBIE


def test_a_killed_runs_cgroup_is_swept_and_a_live_ones_is_not(group, tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = DesktopCgroup(group.path.parent / f"{dead.pid}.{int(time.time() * 1000)}.1.stale")
    stale.path.mkdir()
    try:
        leftover = subprocess.Popen(stale.wrap(["sleep", "600"]), start_new_session=True)
        live = subprocess.Popen(group.wrap(["sleep", "600"]), start_new_session=True)
        for _ in range(500):
            if stale.pids() and group.pids():
                break
            time.sleep(0.01)
        assert stale.path in cgroup.sweep()
        assert leftover.wait(timeout=5) == -9
        assert not stale.path.exists()
        assert live.poll() is None and group.path.exists()  # this process's desktop: untouched
        live.kill()
    finally:
        stale.remove()


def test_the_v2_mount_is_found_on_hybrid_and_pure_hosts():
    hybrid = (
        "tmpfs /sys/fs/cgroup tmpfs rw 0 0\ncgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n"
        "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
    )
    assert cgroup.v2_mount(hybrid) == Path("/sys/fs/cgroup/unified")
    assert cgroup.v2_mount("cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n") == Path("/sys/fs/cgroup")
    assert cgroup.v2_mount("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n") is None
