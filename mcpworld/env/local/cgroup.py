"""A cgroup v2 per desktop: the one handle on its processes that none of them can drop.

Teardown used to find a desktop's strays by ``MCPWORLD_DESKTOP`` in ``/proc/<pid>/environ``, but a
process may rewrite its environment block (Chromium does, for its process titles), leave its
session and be reparented to PID 1. Membership of a cgroup survives all of that and is inherited
by every child, so each desktop's processes start inside ``<v2 mount>/mcpworld/<desktop>`` (a
small ``sh`` writes its own pid to ``cgroup.procs``, then execs the command) and teardown writes
``cgroup.kill``. The folder's name carries the owning process's pid and start time, so a later run
removes the cgroups of a run that was killed (``sweep``). Where no cgroup can be made (no v2
mount, not root), ``create`` says so once and the caller keeps the environment marker alone.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import threading
import time
from pathlib import Path

import psutil

from mcpworld.env.local.owner import maker_alive

logger = logging.getLogger(__name__)

PARENT = "mcpworld"  # all desktops' cgroups live in <v2 mount>/mcpworld
# the child joins the cgroup ("$0" is its cgroup.procs) before it becomes the command
JOIN = 'echo $$ > "$0" && exec "$@"'
_warned = threading.Event()
_sequence = iter(range(1, 1 << 62))
_sequence_lock = threading.Lock()


def v2_mount(mounts: str | None = None) -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup on pure v2, .../unified on hybrid)."""
    if mounts is None:
        try:
            mounts = Path("/proc/mounts").read_text()
        except OSError:
            return None
    found = [
        Path(fields[1]) for fields in (line.split() for line in mounts.splitlines()) if len(fields) > 2 and fields[2] == "cgroup2"
    ]
    return next((p for p in found if p == Path("/sys/fs/cgroup")), found[0] if found else None)


def parent_dir() -> Path | None:
    mount = v2_mount()
    return mount / PARENT if mount else None


class DesktopCgroup:
    """One desktop's cgroup: ``wrap`` a command to start it inside, ``kill`` everything in it."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def create(cls, label: str) -> DesktopCgroup | None:
        """A new cgroup for a desktop of this process (``label``: a readable hint, e.g. its work
        folder's name); None, with one warning per process, where the machine allows none."""
        parent = parent_dir()
        why = None
        if parent is None:
            why = "no cgroup v2 hierarchy is mounted"
        else:
            me = psutil.Process()
            with _sequence_lock:
                n = next(_sequence)
            path = parent / f"{me.pid}.{int(me.create_time() * 1000)}.{n}.{_safe(label)}"
            try:
                parent.mkdir(exist_ok=True)
                path.mkdir()
                if not (path / "cgroup.procs").exists() or not os.access(path / "cgroup.procs", os.W_OK):
                    raise PermissionError(errno.EACCES, "cgroup.procs is not writable", str(path))
                return cls(path)
            except OSError as exc:
                why = f"cannot create {path}: {exc.strerror or exc}"
                with contextlib.suppress(OSError):
                    path.rmdir()
        if not _warned.is_set():
            _warned.set()
            logger.warning(
                "desktop processes get no cgroup (%s): teardown falls back to the environment "
                "marker, which a process that rewrites its environment (Chromium) escapes; "
                "run as root on a host with cgroup v2 for a teardown nothing escapes",
                why,
            )
        return None

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started inside this cgroup (the wrapper must run as root: it moves itself)."""
        return ["/bin/sh", "-c", JOIN, str(self.path / "cgroup.procs"), *argv]

    def pids(self) -> list[int]:
        try:
            return [int(line) for line in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def populated(self) -> bool:
        try:
            return "populated 1" in (self.path / "cgroup.events").read_text()
        except FileNotFoundError:
            return False

    def kill(self, timeout_s: float = 5.0) -> bool:
        """Kill every process in the cgroup (and in cgroups below it) and wait until none is left;
        False if some survived ``timeout_s`` (a process stuck in the kernel)."""
        if not self.path.is_dir():
            return True
        kill_file = self.path / "cgroup.kill"
        deadline = time.monotonic() + timeout_s
        while self.populated():
            if kill_file.exists():  # Linux ≥ 5.14: one write kills them all, forks included
                kill_file.write_text("1")
            else:
                for pid in self.pids():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                return not self.populated()
            time.sleep(0.005)
        return True

    def remove(self, timeout_s: float = 5.0) -> bool:
        """Kill what is left and remove the cgroup; False (and it stays for a later sweep) if it
        could not be emptied."""
        if not self.kill(timeout_s):
            logger.warning("processes %s of %s survived SIGKILL; left for a later sweep", self.pids(), self.path)
            return False
        try:
            self.path.rmdir()
        except FileNotFoundError:
            pass
        except OSError as exc:
            logger.warning("could not remove %s: %s", self.path, exc)
            return False
        return True


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in label)[-60:] or "desktop"


def owner_alive(name: str) -> bool:
    """The process named in a cgroup folder's name (``<pid>.<start ms>.…``) still runs."""
    return maker_alive(name.split("."))


def sweep(parent: Path | None = None) -> list[Path]:
    """Kill and remove the cgroups of desktops whose owning process is gone; the ones removed."""
    parent = parent or parent_dir()
    if parent is None or not parent.is_dir():
        return []
    removed = []
    for path in sorted(p for p in parent.iterdir() if p.is_dir()):
        if not owner_alive(path.name) and DesktopCgroup(path).remove(timeout_s=2.0):
            removed.append(path)
    return removed
