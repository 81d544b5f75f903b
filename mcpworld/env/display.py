"""An Xvfb display with its own D-Bus session and a light window manager."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from Xlib import display as xdisplay
from Xlib import error as xerror

from mcpworld.env.processes import ProcessSet
from mcpworld.errors import InfraError, UserError

X_SOCKET_DIR = Path("/tmp/.X11-unix")
# GTK apps join the AT-SPI bus by themselves; Chromium and Qt only when asked to.
A11Y_ENV = {"ACCESSIBILITY_ENABLED": "1", "QT_ACCESSIBILITY": "1", "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1"}


def require_binary(name: str, package: str | None = None) -> str:
    path = shutil.which(name)
    if not path:
        raise UserError(f"'{name}' is not installed: run `apt-get install -y {package or name}` "
                        f"(or `make setup`)")
    return path


def free_display_number(start: int = 90, end: int = 600) -> int:
    """First display number with neither a lock file nor a socket (claimed by Xvfb on start)."""
    for n in range(start, end):
        if not Path(f"/tmp/.X{n}-lock").exists() and not (X_SOCKET_DIR / f"X{n}").exists():
            return n
    raise InfraError(f"no free X display number in {start}..{end}")


class VirtualDisplay:
    """Xvfb + dbus-daemon + window manager, all stopped by ``stop``."""

    def __init__(self, width: int, height: int, window_manager: str = "openbox",
                 start_timeout_s: float = 10.0):
        self.width, self.height = width, height
        self.window_manager = window_manager
        self.start_timeout_s = start_timeout_s
        self.number: int | None = None
        self.name = ""
        self.env: dict[str, str] = {}
        self.procs: ProcessSet | None = None

    def start(self, base_env: dict[str, str]) -> None:
        require_binary("Xvfb", "xvfb")
        require_binary("dbus-daemon", "dbus")
        if self.window_manager:
            require_binary(self.window_manager)
        for _ in range(5):  # another process may grab the same number between check and start
            self.number = free_display_number()
            self.name = f":{self.number}"
            self.procs = ProcessSet(marker=("DISPLAY", self.name))
            xvfb = self.procs.spawn(
                ["Xvfb", self.name, "-screen", "0", f"{self.width}x{self.height}x24",
                 "-noreset", "-nolisten", "tcp", "-dpi", "96"], env=base_env)
            if self._wait_ready(xvfb):
                break
            self.procs.stop()
        else:
            raise InfraError("Xvfb failed to start on 5 display numbers")
        self.env = dict(base_env, DISPLAY=self.name, **A11Y_ENV)
        bus = self.procs.spawn(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
                               env=self.env, stdout=subprocess.PIPE, text=True)
        address = bus.stdout.readline().strip()
        if not address:
            self.stop()
            raise InfraError("dbus-daemon did not print a session address")
        self.env["DBUS_SESSION_BUS_ADDRESS"] = address
        if self.window_manager:
            self.procs.spawn([self.window_manager], env=self.env)
            self._wait_window_manager()

    def _wait_ready(self, xvfb: subprocess.Popen) -> bool:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if xvfb.poll() is not None:
                return False
            try:
                xdisplay.Display(self.name).close()
                return True
            except (xerror.DisplayError, ConnectionError, OSError):
                time.sleep(0.02)
        return False

    def _wait_window_manager(self) -> None:
        """EWMH window managers announce themselves via _NET_SUPPORTING_WM_CHECK on the root."""
        d = xdisplay.Display(self.name)
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
        if self.number is not None:  # Xvfb killed hard leaves its lock and socket behind
            for stale in (Path(f"/tmp/.X{self.number}-lock"), X_SOCKET_DIR / f"X{self.number}"):
                try:
                    stale.unlink()
                except (FileNotFoundError, PermissionError):
                    pass
