"""Where a desktop's processes run: its cgroup, its network namespace, its account.

Every process a local desktop starts (X server, bus, window manager, apps, setup commands, the
agent's shell, MCP servers run as the desktop's account) goes through ``Confinement.command``.
Joining a cgroup and entering a namespace need root, so when either applies the command starts as
the harness's user and drops to the desktop's account last (``setpriv``), after both.

The network namespace holds the desktop account's processes only. The X server stays the
harness's and in the host's network: X display numbers are claimed by binding an abstract socket,
which is per namespace, so a server inside one would take a display number already in use and
replace the other server's socket file in /tmp/.X11-unix. Clients inside reach it through that
socket file (libxcb falls back to it when the abstract socket is not there).

With ``env.files=hidden`` the account's processes also enter the desktop's mount namespace
(``mountns.MountNamespace``): the same ``nsenter`` enters both, and starts the command in its working
directory as the namespace shows it (``--wdns``: a directory opened on the host's side would be a way
out of the namespace's view).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from mcpworld.env.local.cgroup import DesktopCgroup
from mcpworld.env.local.desktop_user import DesktopUser, PopenAccount

if TYPE_CHECKING:
    from mcpworld.env.local.mountns import MountNamespace
    from mcpworld.env.local.netns import NetNamespace


@dataclass(frozen=True)
class Confinement:
    cgroup: DesktopCgroup | None = None
    netns: NetNamespace | None = None
    mountns: MountNamespace | None = None

    def command(
        self, argv: Sequence[str], user: DesktopUser | None, cwd: str | os.PathLike[str] | None = None
    ) -> tuple[list[str], PopenAccount]:
        """``argv`` and the ``Popen`` account arguments that start it confined, as ``user`` (and in
        the namespaces only then: the harness's own processes keep the host's network and files);
        ``cwd``: where it starts (Popen's ``cwd`` too), which a mount namespace needs said again."""
        inner = [str(a) for a in argv]
        if self.cgroup is None and self.netns is None and self.mountns is None:
            return inner, (user.popen_kwargs() if user else {})
        if user:
            inner = user.wrap(inner)
        if user and (self.netns or self.mountns):
            enter = [f"--net={self.netns.path}"] if self.netns else []
            if self.mountns:
                enter += [self.mountns.enter(), f"--wdns={os.fspath(cwd) if cwd else '/'}"]
            inner = [shutil.which("nsenter") or "nsenter", *enter, "--", *inner]
        if self.cgroup:
            inner = self.cgroup.wrap(inner)
        return inner, {}

    def files_open(self) -> Confinement:
        """The same cgroup and network, the host's files: for a task's own preprocess code, which runs
        from its task folder before the agent starts (Toolathlon's ``python -m tasks.….preprocess.main``)."""
        return replace(self, mountns=None)

    def wrap(self, argv: Sequence[str], user: DesktopUser | None) -> list[str]:
        """``argv`` confined and as ``user``, for launchers that take a bare command (MCP's stdio)."""
        inner, account = self.command(argv, user)
        return user.wrap(inner) if user and account else inner

    def kill(self) -> None:
        """Kill everything left in the desktop's cgroup (a no-op without one)."""
        if self.cgroup:
            self.cgroup.kill()
