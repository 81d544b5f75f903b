"""Desktops left behind by a run that was killed (kill -9, a crashed host process).

Each local desktop's work folder (``/dev/shm/mcpworld-*``) holds ``owner.json`` naming the process
that made it. A later run finds folders whose owner is gone, kills the processes still marked with
that desktop (Xvfb, D-Bus, the window manager, apps) and removes the folder and the X server's
socket (a killed Xvfb leaves it; the folder's ``display`` file names it); then it kills and
removes the cgroups and deletes the network namespaces whose owner is gone (their names carry the
owner's pid and start time). A live owner's desktops are never touched, so parallel runs on one
host are safe.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import psutil

from mcpworld.env.local import cgroup, mountns, netns
from mcpworld.env.local.display import MARKER, remove_stale_lock
from mcpworld.env.local.processes import kill_marked

OWNER_FILE = "owner.json"
DISPLAY_FILE = "display"  # the number of the X server the desktop runs: its socket outlives a kill -9
PREFIX = "mcpworld-"


WORK_BASE_VARIABLE = "MCPWORLD_WORK_BASE"  # another folder for the work folders (a bigger or a test disk)


def work_bases() -> list[Path]:
    """Where desktop work folders are made: ``$MCPWORLD_WORK_BASE`` when set, else /dev/shm when
    writable, else the temp dir (all of them are reaped)."""
    bases = [Path(tempfile.gettempdir())]
    if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK):
        bases.insert(0, Path("/dev/shm"))
    chosen = os.environ.get(WORK_BASE_VARIABLE)
    if chosen:
        bases.insert(0, Path(chosen))
    return bases


def claim(workroot: Path) -> None:
    """Record this process as the owner of ``workroot``."""
    me = psutil.Process()
    (workroot / OWNER_FILE).write_text(json.dumps({"pid": me.pid, "started": me.create_time()}))


def record_display(workroot: Path, number: int | None) -> None:
    """Note the desktop's display number, so that a reaper removes its X socket."""
    if number is not None:
        (workroot / DISPLAY_FILE).write_text(str(number))


def owner_alive(workroot: Path) -> bool:
    """True when the folder's owner still runs (an unreadable owner file may be mid-write: alive)."""
    try:
        owner = json.loads((workroot / OWNER_FILE).read_text())
        proc = psutil.Process(int(owner["pid"]))
        return abs(proc.create_time() - float(owner["started"])) < 1.0  # not a recycled pid
    except psutil.NoSuchProcess:
        return False
    except (OSError, ValueError, KeyError, TypeError, psutil.Error):
        return True


def reap(bases: list[Path] | None = None) -> list[Path]:
    """Kill the processes and remove the folders, cgroups and network namespaces of desktops whose
    owner died; the folders reaped."""
    reaped = []
    for base in bases or work_bases():
        for workroot in sorted(base.glob(PREFIX + "*")):
            try:
                if not (workroot / OWNER_FILE).is_file() or owner_alive(workroot):
                    continue
            except PermissionError:  # another account's folder (root's /dev/shm/mcpworld-users): not ours to reap
                continue
            kill_marked(MARKER, str(workroot))
            with contextlib.suppress(OSError, ValueError):
                remove_stale_lock(int((workroot / DISPLAY_FILE).read_text()))
            shutil.rmtree(workroot, ignore_errors=True)
            reaped.append(workroot)
    cgroup.sweep()
    netns.sweep()
    mountns.sweep()
    return reaped
