"""An Xvfb display with its own D-Bus session and a light window manager.

The display number is chosen by the X server itself (``-displayfd``): it takes the first number
whose lock it can create and writes it to a pipe once it accepts connections, so two episodes
starting at once can never share a display, and a server that exited never counts as started.
Every process of the desktop carries ``MARKER=<desktop id>`` in its environment, so teardown
(and the reaping of a killed run's leftovers) kills exactly this desktop's processes.

The X server admits only clients with its cookie (``-auth``, env/local/xauth.py): the desktop's processes
find it through ``XAUTHORITY`` in ``env``, the harness through its own process's ``XAUTHORITY``;
another local user has neither (docs/isolation.md).

openbox runs with the system's configuration plus GNOME's terminal key: ctrl+alt+t opens a
terminal titled "Terminal" in the home folder, as on the suites' Ubuntu machines (OSWorld's setups
press it, then activate "Terminal" and type into it). The terminal is the desktop's ``xterm``
command: the xterm shim, which keeps the log that ``vm_terminal_output`` reads.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from xml.sax.saxutils import escape as xml_escape

from mcpworld.core.errors import InfraError
from mcpworld.env.context import require_binary
from mcpworld.env.local.confine import Confinement
from mcpworld.env.local.desktop_user import DesktopUser
from mcpworld.env.local.processes import ProcessSet
from mcpworld.env.local.xauth import DisplayCookie
from mcpworld.env.local.xconnection import open_display

X_SOCKET_DIR = Path("/tmp/.X11-unix")
# GTK apps join the AT-SPI bus by themselves; Chromium and Qt only when asked to.
MARKER = "MCPWORLD_DESKTOP"  # environment variable naming the desktop a process belongs to
A11Y_ENV = {"ACCESSIBILITY_ENABLED": "1", "QT_ACCESSIBILITY": "1", "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1"}

OPENBOX_SYSTEM_RC = Path("/etc/xdg/openbox/rc.xml")
# GNOME's terminal key. The title stays "Terminal" whatever the shell's prompt writes (a suite's
# step finds the terminal by it); the shell starts in the home folder, as GNOME Terminal's does.
TERMINAL_KEY = "C-A-t"
TERMINAL_COMMAND = """sh -c 'cd "$HOME" && exec xterm -T Terminal -xrm "XTerm*allowTitleOps: false"'"""


def openbox_config(system_rc: Path = OPENBOX_SYSTEM_RC) -> str:
    """The system's openbox configuration (its window keys: alt+tab, alt+F4 …) with the terminal key
    added; only the terminal key where the system has no configuration."""
    bind = (
        f'<keybind key="{TERMINAL_KEY}"><action name="Execute"><command>{xml_escape(TERMINAL_COMMAND)}'
        "</command></action></keybind>\n"
    )
    text = system_rc.read_text() if system_rc.is_file() else ""
    at = text.rfind("</keyboard>")
    if at < 0:
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n<openbox_config xmlns="http://openbox.org/3.4/rc">'
            f"<keyboard>{bind}</keyboard></openbox_config>\n"
        )
    return text[:at] + bind + text[at:]


class VirtualDisplay:
    """Xvfb + dbus-daemon + window manager, all stopped by ``stop``."""

    def __init__(
        self,
        width: int,
        height: int,
        window_manager: str = "openbox",
        start_timeout_s: float = 10.0,
        desktop_id: str = "",
        confinement: Confinement | None = None,
    ):
        self.width, self.height = width, height
        self.window_manager = window_manager
        self.start_timeout_s = start_timeout_s
        self.desktop_id = desktop_id or f"pid{os.getpid()}-{id(self)}"
        self.number: int | None = None
        self.name = ""
        self.env: dict[str, str] = {}
        self.procs: ProcessSet | None = None
        self.confinement = confinement  # the desktop's cgroup and network (confine.py)
        self._xvfb: subprocess.Popen | None = None
        self._own_rc: Path | None = None  # a window manager configuration written outside the runtime folder
        self._cookie: DisplayCookie | None = None  # the X server's cookie and its files (xauth.py)

    def start(self, base_env: dict[str, str], user: DesktopUser | None = None) -> None:
        """Start the desktop. The X server stays the harness's (an agent cannot kill it); the bus and
        the window manager are ``user``'s, like the apps (a session bus only admits its own user)."""
        require_binary("Xvfb", "xvfb")
        require_binary("dbus-daemon", "dbus")
        if self.window_manager:
            require_binary(self.window_manager)
        base_env = dict(base_env, **{MARKER: self.desktop_id})
        procs = self.procs = ProcessSet(marker=(MARKER, self.desktop_id), confinement=self.confinement)
        cookie = self._cookie = DisplayCookie()
        self.number = self._start_xvfb(procs, base_env, cookie.write_server_file())
        self.name = f":{self.number}"
        try:
            authority = cookie.give(self.number, base_env.get("XDG_RUNTIME_DIR"), user)
        except BaseException:
            self.stop()
            raise
        self.env = dict(base_env, DISPLAY=self.name, XAUTHORITY=str(authority), **A11Y_ENV)
        # the bus socket in the desktop's own runtime folder: a killed daemon leaves nothing in /tmp
        where = [f"--address=unix:dir={base_env['XDG_RUNTIME_DIR']}"] if base_env.get("XDG_RUNTIME_DIR") else []
        bus = procs.spawn(
            ["dbus-daemon", "--session", "--nofork", "--print-address=1", *where],
            env=self.env,
            stdout=subprocess.PIPE,
            text=True,
            user=user,
        )
        assert bus.stdout is not None  # stdout=PIPE
        address = bus.stdout.readline().strip()
        if not address:
            self.stop()
            raise InfraError("dbus-daemon did not print a session address")
        self.env["DBUS_SESSION_BUS_ADDRESS"] = address
        if self.window_manager:
            procs.spawn([self.window_manager, *self._window_manager_args(base_env)], env=self.env, user=user)
            self._wait_window_manager()

    def _window_manager_args(self, env: dict[str, str]) -> list[str]:
        """openbox's configuration (``openbox_config``), written where the desktop's account reads it:
        its runtime folder (emptied with each desktop), else a file of this desktop's own in /tmp."""
        if Path(self.window_manager).name != "openbox":
            return []
        folder = env.get("XDG_RUNTIME_DIR")
        if folder and Path(folder).is_dir():
            rc = Path(folder) / "openbox-rc.xml"
            rc.write_text(openbox_config())
        else:
            fd, name = tempfile.mkstemp(prefix="mcpworld-openbox-", suffix=".xml")
            with os.fdopen(fd, "w") as out:
                out.write(openbox_config())
            rc = self._own_rc = Path(name)
        rc.chmod(0o644)
        return ["--config-file", str(rc)]

    def _start_xvfb(self, procs: ProcessSet, env: dict[str, str], authority: Path) -> int:
        """Start Xvfb and return the display number it claimed, once it accepts connections;
        ``authority``: the server's cookie file (``-auth``)."""
        read_end, write_end = os.pipe()
        try:
            self._xvfb = xvfb = procs.spawn(
                [
                    "Xvfb",
                    "-displayfd",
                    str(write_end),
                    "-auth",
                    str(authority),
                    "-screen",
                    "0",
                    f"{self.width}x{self.height}x24",
                    "-noreset",
                    "-nolisten",
                    "tcp",
                    "-dpi",
                    "96",
                ],
                env=env,
                pass_fds=(write_end,),
                stderr=subprocess.PIPE,
            )
            os.close(write_end)
            write_end = -1
            text = b""
            deadline = time.monotonic() + self.start_timeout_s
            while not text.endswith(b"\n") and time.monotonic() < deadline:
                ready, _, _ = select.select([read_end], [], [], max(0.0, deadline - time.monotonic()))
                chunk = os.read(read_end, 32) if ready else b""
                if not chunk:
                    break
                text += chunk
        finally:
            os.close(read_end)
            if write_end >= 0:
                os.close(write_end)
        assert xvfb.stderr is not None  # stderr=PIPE
        if text.strip().isdigit():
            xvfb.stderr.close()  # never read again: Xvfb must not block on a full pipe
            return int(text.strip())
        exited = xvfb.poll() is not None
        if not exited:
            xvfb.kill()
        err = xvfb.stderr.read().decode(errors="replace").strip()[-300:] if exited else ""
        procs.stop()
        self._forget_cookie()
        why = f"exited with {xvfb.returncode}" if exited else f"did not start within {self.start_timeout_s:.0f}s"
        raise InfraError(f"Xvfb {why}" + (f": {err}" if err else ""))

    def alive(self) -> bool:
        """The X server is still running (an episode whose display died is an infra error)."""
        return self._xvfb is not None and self._xvfb.poll() is None

    def _wait_window_manager(self) -> None:
        """EWMH window managers announce themselves via _NET_SUPPORTING_WM_CHECK on the root."""
        d = open_display(self.name)
        try:
            atom = d.intern_atom("_NET_SUPPORTING_WM_CHECK")
            deadline = time.monotonic() + self.start_timeout_s
            while time.monotonic() < deadline:
                if d.screen().root.get_full_property(atom, 0):
                    return
                time.sleep(0.02)
            raise InfraError(f"window manager {self.window_manager} did not start on {self.name}")
        finally:
            d.close()

    def stop(self) -> None:
        if self.procs:
            self.procs.stop()
            self.procs = None
        self._xvfb = None
        if self._own_rc is not None:
            self._own_rc.unlink(missing_ok=True)
            self._own_rc = None
        self._forget_cookie()
        if self.number is not None:  # Xvfb killed hard leaves its lock and socket behind
            remove_stale_lock(self.number)
            self.number = None

    def _forget_cookie(self) -> None:
        if self._cookie is not None:
            self._cookie.remove()
            self._cookie = None


def remove_stale_lock(number: int) -> None:
    """Remove display ``number``'s lock file and socket unless a live X server still holds them."""
    lock = Path(f"/tmp/.X{number}-lock")
    try:
        pid = int(lock.read_text().strip())
        os.kill(pid, 0)
        return  # its server lives on (it is not ours any more)
    except (OSError, ValueError):
        pass
    if socket_answers(X_SOCKET_DIR / f"X{number}"):
        return  # another desktop's server took the number meanwhile (-displayfd writes no lock): its
        # socket file is the only way in for clients in a network namespace (netns.py)
    for stale in (lock, X_SOCKET_DIR / f"X{number}"):
        with contextlib.suppress(FileNotFoundError, PermissionError):
            stale.unlink()


def socket_answers(path: Path) -> bool:
    """A server accepts connections on the unix socket file ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
            return True
        except OSError:
            return False
