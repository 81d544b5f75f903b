"""Processes an episode starts, and their reliable teardown.

Apps fork helpers that leave the process group (D-Bus activations, crash handlers), so teardown
kills each started group, then the desktop's cgroup (``env.local.cgroup``: nothing started inside can
leave it), then every process whose environment still names the desktop (the fallback where no
cgroup could be made).

Every process a desktop starts, its short helpers too (rsync, ip, iptables, mount, unshare), runs in a
session of its own: a terminal's Ctrl-C or a scheduler's SIGTERM reaches the whole process group, and
a helper it killed would fail its episode as infra_error before the job had marked the run as stopping;
the job alone decides when the desktops stop (run/interrupt.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

from mcpworld.env.base import ShellResult
from mcpworld.env.local.confine import Confinement
from mcpworld.env.local.desktop_user import DesktopUser

# Only these variables of the harness reach the desktop and the agent's shell: no secrets.
PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


def reachable_by_all(folder: str) -> bool:
    """Every folder on the way can be entered by any account (an unprivileged desktop user
    cannot run, say, root's ~/.pyenv/shims/python: its PermissionError would fail the step)."""
    path = Path(folder)
    try:  # a folder this account cannot even look into (root's, after su) is no one's to use
        if not path.is_absolute() or not path.is_dir():
            return False
        return all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents])
    except OSError:
        return False


def scrubbed_env(home: Path, runtime_dir: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    env["PATH"] = ":".join(p for p in env.get("PATH", "").split(":") if reachable_by_all(p)) or "/usr/local/bin:/usr/bin:/bin"
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        HOME=str(home),
        USER="user",
        LOGNAME="user",
        SHELL="/bin/bash",
        TERM="xterm-256color",
        XDG_RUNTIME_DIR=str(runtime_dir),
        PWD=str(home),
    )
    return env


class ProcessSet:
    def __init__(self, marker: tuple[str, str] | None = None, confinement: Confinement | None = None):
        self.procs: list[subprocess.Popen] = []
        self.marker = marker  # (ENV_NAME, value) that identifies our processes, e.g. ("DISPLAY", ":7")
        self.confinement = confinement or Confinement()  # the desktop's cgroup (and network), if any

    def spawn(
        self,
        argv: Sequence[str],
        env: dict[str, str],
        cwd: str | None = None,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        user: DesktopUser | None = None,
        **kw,
    ) -> subprocess.Popen:
        """Start ``argv`` in a session of its own (as ``user`` when given), inside the desktop's
        cgroup and network."""
        command, account = self.confinement.command(argv, user, cwd)
        proc = subprocess.Popen(
            command,
            env=env,
            cwd=cwd,
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            **account,
            **kw,
        )
        self.procs.append(proc)
        return proc

    def stop(self, grace_s: float = 1.0) -> None:
        """Terminate every group started (newest first), then everything left in the desktop's
        cgroup, then anything still marked as ours."""
        for proc in reversed(self.procs):
            _signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=2)
            _signal_group(proc.pid, signal.SIGKILL)  # stragglers left in the group
        self.procs.clear()
        self.confinement.kill()
        if self.marker:
            kill_marked(*self.marker)


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def kill_marked(name: str, value: str) -> int:
    """Kill processes whose environment has ``name=value`` (escapees of our process groups)."""
    me = os.getpid()
    victims = []
    for proc in psutil.process_iter(["pid"]):
        if proc.pid == me:
            continue
        try:
            if proc.environ().get(name) == value:
                victims.append(proc)
        except (psutil.Error, OSError):
            continue
    for proc in victims:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(victims, timeout=2)
    return len(victims)


def run_bounded(
    argv: Sequence[str],
    env: dict[str, str],
    cwd: Path,
    timeout: float,
    max_output: int,
    user: DesktopUser | None = None,
    confinement: Confinement | None = None,
) -> ShellResult:
    """Run to completion in its own process group (as ``user`` when given, inside the desktop's
    cgroup and network when given); on timeout kill the group. What it left running in the
    background dies with the desktop's cgroup at teardown."""
    command, account = (confinement or Confinement()).command(argv, user, cwd)
    proc = subprocess.Popen(
        command,
        env=env,
        cwd=str(cwd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        **account,
    )
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _signal_group(proc.pid, signal.SIGKILL)
        try:
            out, err = proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:  # a process that left the group (`setsid cmd &`) holds the pipes
            for pipe in (proc.stdout, proc.stderr):
                if pipe:
                    pipe.close()
            proc.wait()
            out, err = b"", b"(output lost: a background process kept it open)"
    stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
    truncated = len(stdout) > max_output or len(stderr) > max_output
    return ShellResult(-9 if timed_out else proc.returncode, stdout[:max_output], stderr[:max_output], timed_out, truncated)
