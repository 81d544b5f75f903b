"""Each desktop's X server admits only the clients that show its cookie (MIT-MAGIC-COOKIE-1).

Without ``-auth`` an Xvfb takes every local connection: any user of the machine (a shared SLURM
node) could read an episode's screen or type into it. With ``-auth FILE`` holding a cookie, a
client must present that cookie. The Xauthority format is written here (no ``xauth`` needed):
per entry, big-endian ``family, len+address, len+display number, len+name, len+data``.

Three files per display, each with one fresh 16-byte cookie:

- **the server's** (``-auth``), in the harness's private folder (0700, its own). The X server
  re-reads it whenever its mtime changes, and a file it finds *empty* turns local access back on,
  for every user (measured, docs/FACTS.md). So the desktop's account must never be able to write,
  replace or empty it. The server ignores an entry's address and display number, so it is
  written before Xvfb starts, although ``-displayfd`` picks the number later.
- **the desktop's**, ``$XDG_RUNTIME_DIR/Xauthority`` (0600, the desktop account's, in its 0700
  runtime folder): ``XAUTHORITY`` of every process the desktop starts (bus, window manager, apps,
  setup commands, the agent's shell, getters run in it).
- **the harness's**, one per harness process, with an entry for every display that process runs.
  python-xlib and mss (libxcb) read ``XAUTHORITY`` from the process's environment at each
  connection, and one process runs several desktops at once, so the process's ``XAUTHORITY`` is
  set once to this file (``harness_file``) and entries come and go with the displays.

Client entries name the display number. They come in two families: ``FamilyLocal`` with the
host's name, which python-xlib needs (it knows no other family for a unix socket), and
``FamilyWild``, which libXau/libxcb match whatever the host's name.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import shutil
import socket
import struct
import tempfile
import threading
from pathlib import Path

from mcpworld.core.errors import InfraError
from mcpworld.env.local.desktop_user import DesktopUser

SCHEME = b"MIT-MAGIC-COOKIE-1"
FAMILY_LOCAL = 256
FAMILY_WILD = 0xFFFF
DESKTOP_FILE = "Xauthority"  # in the desktop's runtime folder
HARNESS_PREFIX = "mcpworld-xauth-"  # the harness's private folder; leftovers.PREFIX first: a dead owner's is reaped


def new_cookie() -> bytes:
    return secrets.token_bytes(16)


def _field(value: bytes) -> bytes:
    return struct.pack(">H", len(value)) + value


def entry(family: int, address: bytes, number: str, cookie: bytes) -> bytes:
    """One Xauthority entry."""
    return struct.pack(">H", family) + _field(address) + _field(number.encode()) + _field(SCHEME) + _field(cookie)


def client_entries(number: int, cookie: bytes) -> bytes:
    """What a client of display ``number`` looks up: this host's entry, and a wildcard one."""
    return entry(FAMILY_LOCAL, socket.gethostname().encode(), str(number), cookie) + entry(FAMILY_WILD, b"", str(number), cookie)


def server_entries(cookie: bytes) -> bytes:
    """The server's file: the cookie it accepts (it reads neither address nor number)."""
    return entry(FAMILY_WILD, b"", "", cookie)


def write_new(path: Path, data: bytes, user: DesktopUser | None = None) -> None:
    """``data`` in a new file at ``path``, mode 0600, ``user``'s when given. Whatever stood at ``path``
    goes first, and the file is created exclusively: a link planted there (the folder may be the
    account's) is never followed."""
    path.unlink(missing_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError as exc:
        raise InfraError(f"the X cookie file {path} was made by someone else meanwhile") from exc
    try:
        if user is not None:
            os.fchown(fd, user.uid, user.gid)
        os.write(fd, data)
    finally:
        os.close(fd)


class HarnessAuthority:
    """The harness process's own Xauthority file: one entry pair per display it runs. Its folder
    (0700) also holds the servers' files. Rewritten whole (a new file renamed over), so a client
    that reads it meanwhile sees the old or the new, never half."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._folder: Path | None = None
        self._displays: dict[int, bytes] = {}

    def folder(self) -> Path:
        """The private folder, made (and the process's ``XAUTHORITY`` pointed into it) on first use,
        again if something removed it."""
        with self._lock:
            return self._ensure()

    def _ensure(self) -> Path:
        if self._folder is not None and self._folder.is_dir():
            return self._folder
        base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else Path(tempfile.gettempdir())
        folder = Path(tempfile.mkdtemp(prefix=HARNESS_PREFIX, dir=base))  # 0700
        from mcpworld.env.local import leftovers  # (it imports env.display, which imports this)

        leftovers.claim(folder)  # a run killed with -9 leaves it: the next run's leftover sweep removes it
        if self._folder is None:
            atexit.register(self._remove, os.getpid())
        self._folder = folder
        self._write()
        os.environ["XAUTHORITY"] = str(folder / "harness")
        return folder

    def add(self, number: int, cookie: bytes) -> None:
        with self._lock:
            self._displays[number] = cookie
            self._ensure()
            self._write()

    def discard(self, number: int, cookie: bytes) -> None:
        """Forget display ``number``'s entry, if it is still that cookie's."""
        with self._lock:
            if self._displays.get(number) != cookie:
                return
            del self._displays[number]
            if self._folder is not None and self._folder.is_dir():
                self._write()

    def _write(self) -> None:
        assert self._folder is not None
        data = b"".join(client_entries(n, c) for n, c in self._displays.items())
        fd, name = tempfile.mkstemp(dir=self._folder, prefix=".harness-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(name, self._folder / "harness")
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise

    def _remove(self, owner: int) -> None:
        if self._folder is not None and os.getpid() == owner:  # (not a forked child's exit)
            shutil.rmtree(self._folder, ignore_errors=True)


HARNESS = HarnessAuthority()


class DisplayCookie:
    """One display's cookie and its files: ``server_file`` before the server starts, ``give`` once
    its number is known, ``remove`` when it stopped."""

    def __init__(self) -> None:
        self.cookie = new_cookie()
        self.server_file: Path | None = None
        self.client_file: Path | None = None
        self.number: int | None = None

    def write_server_file(self) -> Path:
        fd, name = tempfile.mkstemp(dir=HARNESS.folder(), prefix="server-")  # 0600, in a 0700 folder
        with os.fdopen(fd, "wb") as out:
            out.write(server_entries(self.cookie))
        self.server_file = Path(name)
        return self.server_file

    def give(self, number: int, runtime_dir: str | None, user: DesktopUser | None) -> Path:
        """The cookie for display ``number`` to the harness process and, in ``runtime_dir``, to the
        desktop's processes (``user``'s file); the desktop's file's path (its ``XAUTHORITY``). Without
        a runtime folder (a bare display of a test, run as the harness) it sits in the harness's folder."""
        self.number = number
        HARNESS.add(number, self.cookie)
        if not runtime_dir:
            if user is not None:
                raise InfraError("a desktop run as another account needs XDG_RUNTIME_DIR for its X cookie")
            self.client_file = HARNESS.folder() / f"display-{number}"
            write_new(self.client_file, client_entries(number, self.cookie))
        else:
            self.client_file = Path(runtime_dir) / DESKTOP_FILE
            write_new(self.client_file, client_entries(number, self.cookie), user)
        return self.client_file

    def remove(self) -> None:
        if self.number is not None:
            HARNESS.discard(self.number, self.cookie)
        for path in (self.server_file, self.client_file):
            if path is not None:
                with contextlib.suppress(OSError):  # (a runtime folder removed with its desktop)
                    path.unlink(missing_ok=True)
        self.server_file = self.client_file = None
        self.number = None
