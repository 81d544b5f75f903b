"""The unprivileged account a desktop's apps, setup commands and the agent's shell run as.

When the harness runs as root, each local desktop takes one of a pool of system accounts
(``mcpworld-d0`` … ``mcpworld-d63``, created on first use) and holds it with an ``flock`` for the
desktop's lifetime, so concurrent desktops on one host (threads or processes) never share an
account: one agent cannot read another episode's home or signal its apps, and none can read the
harness's environment (``/proc/<pid>/environ`` of another user is closed). A killed run's locks go
with its process. When the harness itself runs unprivileged, everything simply runs as that user.

Nothing here grants sudo: the accounts have no password and are in no group but their own.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from mcpworld.core.errors import InfraError

SLOTS = 64
NAME_PREFIX = "mcpworld-d"
_create_lock = threading.Lock()  # useradd refuses to run while another holds /etc/passwd


class PopenAccount(TypedDict, total=False):
    """``subprocess.Popen``'s arguments that pick the child's account (none: the harness's own)."""

    user: int
    group: int
    extra_groups: list[int]


@dataclass(frozen=True)
class DesktopUser:
    name: str
    uid: int
    gid: int

    def popen_kwargs(self) -> PopenAccount:
        """Arguments that make ``subprocess.Popen`` start the child as this account."""
        return {"user": self.uid, "group": self.gid, "extra_groups": []}

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run as this account, for launchers that cannot switch users themselves."""
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--", *argv]

    def can_use(self, path: str | Path, execute: bool = False) -> bool:
        """True when this account may read ``path`` (and run it, with ``execute``): every folder on
        the way (symlinks followed) is searchable by it, and so is the interpreter a script's ``#!``
        names (a venv whose python lives under /root is closed to it)."""
        return self._can_use(str(path), execute, depth=0)

    def _can_use(self, path: str, execute: bool, depth: int) -> bool:
        found = (shutil.which(path) or path) if execute else path
        real = Path(os.path.realpath(found))
        try:
            if not all(self._allowed(folder.stat(), 0o1) for folder in {*Path(found).parents, *real.parents}):
                return False
            if not self._allowed(real.stat(), 0o5 if execute else 0o4):
                return False
            if not execute or real.is_dir():
                return True
            with open(real, "rb") as f:
                head = f.read(256)
        except OSError:
            return False
        if head.startswith(b"#!") and depth < 3:
            interpreter = head[2:].split(b"\n")[0].split()
            return bool(interpreter) and self._can_use(interpreter[0].decode(errors="replace"), True, depth + 1)
        return True

    def _allowed(self, st: os.stat_result, bits: int) -> bool:
        """The permission ``bits`` (r=4, x=1) for this account: owner's, group's or others' triplet."""
        shift = 6 if st.st_uid == self.uid else 3 if st.st_gid == self.gid else 0
        return (st.st_mode >> shift) & bits == bits

    def own(self, path: Path, *folders: Path) -> None:
        """Give the account ``path`` (recursively) and ``folders`` (themselves only): what the
        harness copied into its home, and the folders it made for it."""
        for folder in folders:
            os.lchown(folder, self.uid, self.gid)
        os.lchown(path, self.uid, self.gid)
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                os.lchown(os.path.join(root, name), self.uid, self.gid)


class UserSlot:
    """One account held for one desktop; ``release`` (or the process ending) frees it."""

    def __init__(self, user: DesktopUser | None, lock_fd: int | None):
        self.user = user
        self._fd = lock_fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def lock_dir() -> Path:
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else Path("/tmp")
    path = base / "mcpworld-users"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def acquire() -> UserSlot:
    """A free account for a new desktop (none to switch to when the harness is not root)."""
    if os.geteuid() != 0:
        return UserSlot(None, None)
    for slot in range(SLOTS):
        fd = os.open(lock_dir() / f"slot-{slot}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            return UserSlot(ensure_account(f"{NAME_PREFIX}{slot}"), fd)
        except BaseException:
            os.close(fd)
            raise
    raise InfraError(f"all {SLOTS} desktop accounts are in use on this host; run fewer desktops at once")


def ensure_account(name: str) -> DesktopUser:
    """The system account ``name``, created (no home, no password, own group) if missing."""
    with _create_lock:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            for _ in range(50):  # another process may hold /etc/passwd's lock (exit 10) for a moment
                proc = subprocess.run(
                    [
                        "useradd",
                        "--system",
                        "--user-group",
                        "--no-create-home",
                        "--home-dir",
                        "/nonexistent",
                        "--shell",
                        "/bin/bash",
                        name,
                    ],
                    capture_output=True,
                    text=True,
                )
                if proc.returncode != 10:
                    break
                time.sleep(0.1)
            if proc.returncode not in (0, 9):  # 9: made meanwhile by another process
                raise InfraError(
                    f"could not create the desktop account {name}: useradd exited {proc.returncode}: {proc.stderr.strip()[-300:]}"
                ) from None  # the KeyError only said the account did not exist yet
            entry = pwd.getpwnam(name)
    return DesktopUser(name, entry.pw_uid, entry.pw_gid)
