"""A network namespace per local desktop (``env.network=isolated``, ``isolated_unfenced``).

Measured before: an agent on env=local fetched a secret a host service served on 127.0.0.1. In
its own namespace a desktop has a loopback of its own, so the host's loopback services and other
episodes' apps are out of reach. The harness still reaches the desktop's apps (Chromium's
DevTools, VLC's HTTP …) on the same ``127.0.0.1:<port>`` as before: ``forward`` listens there on
the host, admits the harness's own uid only (``relay.PeerGate``: another user of the machine must
not drive the episode's browser), and connects inside the namespace (a socket keeps the namespace
it was made in, so one thread enters it with ``setns`` just long enough to make the socket). The
other way round, ``expose`` opens one host port inside the namespace (the episode's own event
sink, a site the task names on the host's loopback). Outbound traffic goes through ``slirp4netns``
when it is installed (user-space NAT with the host's loopback disabled); without it the desktop has
no outside network, said once in the log. With outbound traffic, the namespace's own firewall (set
by root; the desktop's account cannot change it) rejects the host's other addresses and the subnets
of its local bridges (docker's, other VMs'), so a service bound to 0.0.0.0 is out of reach as well:
the fence (``fence``). ``env.network=isolated`` refuses a desktop it cannot fence (no root, no
iptables), with one line, and ``require_fence`` says so before any desktop starts;
``isolated_unfenced`` runs it without, warned once.

The namespace's name carries the owning process's pid and start time (as the desktops' cgroups
do), so a later run deletes the namespaces of a killed one (``sweep``).
"""

from __future__ import annotations

import ctypes
import ipaddress
import logging
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import psutil

from mcpworld.core.errors import UserError
from mcpworld.env.local import relay
from mcpworld.env.local.owner import maker_alive

logger = logging.getLogger(__name__)

NETNS_DIR = Path("/run/netns")  # where `ip netns` keeps its named namespaces
PREFIX = "mcpworld-"
CLONE_NEWNET = 0x40000000
LOOPBACK = "127.0.0.1"
T = TypeVar("T")
_warned: set[str] = set()
_sequence = iter(range(1, 1 << 62))
_lock = threading.Lock()


def _warn_once(key: str, message: str, *args: object) -> None:
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    logger.warning(message, *args)


_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def inside(path: Path, make: Callable[[], T]) -> T:
    """``make()`` run by this thread while it is inside the namespace at ``path`` (what it creates,
    a socket, stays there); the thread returns to its own namespace afterwards."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(path, os.O_RDONLY)
        try:
            _setns(target)
        finally:
            os.close(target)
        try:
            return make()
        finally:
            _setns(own)  # cannot fail for a namespace we came from (we hold its fd)
    finally:
        os.close(own)


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10, start_new_session=True)


def _make(name: str) -> str | None:
    """Make the namespace ``name`` with its loopback up; why not, where it cannot be made."""
    if os.geteuid() != 0:
        return "the harness is not root"
    if not shutil.which("ip") or not shutil.which("nsenter"):
        return "`ip` (iproute2) or `nsenter` (util-linux) is not installed"
    made = _ip("netns", "add", name)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()[-200:]}"
    if (up := _ip("-n", name, "link", "set", "lo", "up")).returncode != 0:
        _ip("netns", "delete", name)
        return f"its loopback did not come up: {up.stderr.strip()[-200:]}"
    return None


def refusal(problem: str) -> str:
    """The one line an ``env.network=isolated`` job fails with when its desktops cannot be fenced."""
    return (
        f"env.network=isolated: {problem}, so the desktop's network cannot be fenced off the host "
        "(docs/isolation.md): run as root with iptables installed (`make apt`), or set "
        "env.network=isolated_unfenced to run without the fence (warned), or env.network=host"
    )


def fence_tools() -> list[str]:
    """The iptables commands to try for the fence, by preference: the system's ``iptables`` (the
    nf_tables backend on Debian 12), then the other backend, for a kernel that lacks the first."""
    found: dict[str, str] = {}  # by the binary it runs (iptables and iptables-nft are one): the name to call
    for name in ("iptables", "iptables-legacy", "iptables-nft"):
        path = shutil.which(name)
        if path:
            found.setdefault(os.path.realpath(path), path)
    return list(found.values())


def fence(path: Path, targets: list[tuple[str, int]] | None = None) -> tuple[str | None, str | None]:
    """Reject, inside the namespace at ``path`` (its OUTPUT chain, which only root can change), every
    address of this host and the subnets of its local bridges (slirp4netns would otherwise connect
    to them from the host). (the iptables that holds the fence, None) or (None, why none could)."""
    targets = fenced_targets() if targets is None else targets
    tools = fence_tools()
    if not tools:
        return None, "iptables is not installed"
    enter = [shutil.which("nsenter") or "nsenter", f"--net={path}", "--"]
    failed = ""
    for tool in tools:
        for target, _ in targets:  # (IPv4 only: slirp4netns gives the namespace no IPv6)
            done = subprocess.run(
                [*enter, tool, "-w", "-A", "OUTPUT", "-d", target, "-j", "REJECT"],
                capture_output=True,
                text=True,
                timeout=10,
                start_new_session=True,
            )
            if done.returncode != 0:
                failed = (
                    f"`{os.path.basename(tool)} -A OUTPUT -d {target} -j REJECT` failed in the namespace: "
                    f"{' '.join(done.stderr.split())[-200:]}"
                )
                subprocess.run([*enter, tool, "-w", "-F", "OUTPUT"], capture_output=True, timeout=10, start_new_session=True)
                break
        else:
            return tool, None
    return None, failed


_fence_checked: list[str | None] = []  # once per process: why the fence cannot hold here (None: it can)
_check_lock = threading.Lock()


def fence_problem() -> str | None:
    """Why an isolated desktop could not be fenced on this machine, found once per process by making
    a scratch namespace and fencing it (None: it can). Nothing needs fencing without slirp4netns:
    such a namespace has no way out at all."""
    with _check_lock:
        if _fence_checked:
            return _fence_checked[0]
        me = psutil.Process()
        name = f"{PREFIX}{me.pid}-{int(me.create_time() * 1000)}-0"  # (0: no desktop's; swept like theirs)
        problem = _make(name)
        if problem:
            problem = f"no network namespace can be made for the desktop ({problem})"
        elif shutil.which("slirp4netns"):
            try:
                problem = fence(NETNS_DIR / name, [("192.0.2.1", 4)])[1]  # TEST-NET-1: any address will do
            finally:
                _ip("netns", "delete", name)
        else:
            _ip("netns", "delete", name)
        _fence_checked.append(problem)
        return problem


def require_fence() -> None:
    """Fail, before any desktop starts, when ``env.network=isolated`` cannot be honoured here."""
    problem = fence_problem()
    if problem:
        raise UserError(refusal(problem))


class NetNamespace:
    """One desktop's namespace: ``wrap`` starts a command in it; ``forward`` and ``expose`` pass
    single loopback ports between it and the host; ``close`` deletes it."""

    def __init__(self, name: str):
        self.name = name
        self.path = NETNS_DIR / name
        self.outbound = False  # slirp4netns gives it the outside network
        self.fence_tool: str | None = None  # the iptables that holds its fence (None: no fence)
        self._slirp: subprocess.Popen[bytes] | None = None
        self._exit_write = -1
        self._relays: dict[tuple[str, int], relay.Relay] = {}
        self._guard = threading.Lock()

    @classmethod
    def create(cls, outbound: bool = True, unfenced_ok: bool = False) -> NetNamespace | None:
        """A new namespace with its loopback up, and the outside through slirp4netns when asked and
        installed, behind the fence (``fence``). Where the machine allows no namespace (not root,
        no ``ip``) or no fence (no iptables): a ``UserError`` saying how to fix it, or, with
        ``unfenced_ok`` (``env.network=isolated_unfenced``), one warning, and None (no namespace)
        or a namespace without the fence."""
        me = psutil.Process()
        with _lock:
            n = next(_sequence)
        name = f"{PREFIX}{me.pid}-{int(me.create_time() * 1000)}-{n}"
        why = _make(name)
        if why:
            if not unfenced_ok:
                raise UserError(refusal(f"no network namespace can be made for the desktop ({why})"))
            _warn_once(
                "create",
                "env.network=isolated_unfenced: no network namespace for the desktop (%s); its "
                "apps share the host's network, host loopback services included (network_effective=host)",
                why,
            )
            return None
        ns = cls(name)
        if outbound:
            try:
                ns._start_outbound(unfenced_ok)
            except BaseException:
                ns.close()
                raise
        return ns

    def _start_outbound(self, unfenced_ok: bool) -> None:
        slirp = shutil.which("slirp4netns")
        if slirp is None:
            _warn_once(
                "slirp",
                "env.network=isolated: slirp4netns is not installed, so desktops have no outside "
                "network (web sites fail); `apt-get install slirp4netns` gives them one",
            )
            return
        # the fence first: nothing may leave the namespace before it holds
        self.fence_tool, problem = fence(self.path)
        if problem:
            if not unfenced_ok:
                raise UserError(refusal(problem))
            _warn_once(
                "fence",
                "env.network=isolated_unfenced: %s, so a desktop reaches host services bound to "
                "0.0.0.0 through the host's own addresses (%s) (network_effective=isolated_unfenced)",
                problem,
                ", ".join(t for t, _ in fenced_targets()),
            )
        read_end, write_end = os.pipe()
        # slirp4netns exits when this pipe closes: with the namespace, or with this process if it is killed
        exit_read, self._exit_write = os.pipe()
        try:
            self._slirp = subprocess.Popen(
                [
                    slirp,
                    "--configure",
                    "--mtu=65520",
                    "--disable-host-loopback",
                    "--netns-type=path",
                    f"--ready-fd={write_end}",
                    f"--exit-fd={exit_read}",
                    str(self.path),
                    "tap0",
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(write_end, exit_read),
                start_new_session=True,
            )
            os.close(write_end)
            write_end = -1
            ready = os.read(read_end, 1) == b"1"  # slirp4netns writes "1" once tap0 is configured
        finally:
            os.close(read_end)
            os.close(exit_read)
            if write_end >= 0:
                os.close(write_end)
        if ready:
            self.outbound = True
            return
        err = b""
        if self._slirp.poll() is not None and self._slirp.stderr:
            err = self._slirp.stderr.read()
        self._stop_slirp()
        _warn_once(
            "slirp-failed",
            "env.network=isolated: slirp4netns did not start (%s); desktops have no outside network",
            err.decode(errors="replace").strip()[-200:] or "no reason given",
        )

    def rules(self) -> list[str]:
        """The fence as the namespace's firewall holds it (``iptables -S OUTPUT``); empty without one."""
        if not self.fence_tool:
            return []
        done = subprocess.run(self.wrap([self.fence_tool, "-w", "-S", "OUTPUT"]), capture_output=True, text=True, timeout=10)
        return [line for line in done.stdout.splitlines() if line.startswith("-A ")]

    def _stop_slirp(self) -> None:
        if self._exit_write >= 0:
            os.close(self._exit_write)
            self._exit_write = -1
        if self._slirp is not None:
            self._slirp.kill()
            self._slirp.wait()
            if self._slirp.stderr:
                self._slirp.stderr.close()
            self._slirp = None

    @property
    def effective(self) -> str:
        """What the desktop got, for ``network_effective``: ``isolated`` (the outside, behind the
        fence), ``isolated_unfenced`` (the outside, and the host's own addresses too),
        ``isolated_offline`` (no way out at all: slirp4netns is missing)."""
        if not self.outbound:
            return "isolated_offline"
        return "isolated" if self.fence_tool else "isolated_unfenced"

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started inside the namespace (the wrapper must run as root)."""
        return [shutil.which("nsenter") or "nsenter", f"--net={self.path}", "--", *argv]

    def socket_inside(self) -> socket.socket:
        return inside(self.path, lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))

    # --- single ports across the boundary ---------------------------------------------------------
    def forward(self, port: int, connect: relay.Connect | None = None) -> None:
        """The host's ``127.0.0.1:port`` leads to the namespace's (the harness reaches an app), or to
        ``connect`` (an app serving on a unix socket). Only the harness's own processes get through:
        on a shared machine another user's would otherwise drive the desktop's apps."""
        gate = relay.PeerGate(relay.harness_uids(), f"port {port} of the desktop in {self.name}")
        self._add(("forward", port), relay.listen_tcp(port), connect or (lambda: self._connect_inside(port)), gate)

    def expose(self, port: int) -> None:
        """The namespace's ``127.0.0.1:port`` leads to the host's (a host service the desktop may use)."""
        if ("expose", port) in self._relays:
            return
        self._add(("expose", port), inside(self.path, lambda: relay.listen_tcp(port)), relay.to_tcp(port, LOOPBACK))

    def serve_unix(self, port: int, path: Path) -> None:
        """The namespace's ``127.0.0.1:port`` leads to the unix socket ``path`` (code-server serves on
        one: the desktop's own window onto it connects by TCP). Only the desktop's processes live in
        the namespace, so no gate."""
        self._add(("unix", port), inside(self.path, lambda: relay.listen_tcp(port)), relay.to_unix(path))

    def unexpose(self, port: int) -> None:
        self._close_relay(("expose", port))

    def _connect_inside(self, port: int) -> socket.socket:
        sock = self.socket_inside()
        sock.settimeout(5)
        try:
            sock.connect((LOOPBACK, port))
        except OSError:
            sock.close()
            raise
        return sock

    def _add(
        self, key: tuple[str, int], listener: socket.socket, connect: relay.Connect, admit: relay.Admit | None = None
    ) -> None:
        made = relay.Relay(listener, connect, f"netns-{key[0]}-{key[1]}", admit)
        with self._guard:
            self._relays[key] = made

    def _close_relay(self, key: tuple[str, int]) -> None:
        with self._guard:
            made = self._relays.pop(key, None)
        if made is not None:
            made.close()

    def close_ports(self) -> None:
        """Stop every forward, expose and relay: the host's ports are free again (a desktop pool's
        next namespace forwards the same ones while this one is deleted in the background)."""
        for key in list(self._relays):
            self._close_relay(key)

    def close(self) -> None:
        """Stop every relay and delete the namespace (its processes must be gone: the cgroup's job)."""
        self.close_ports()
        self._stop_slirp()
        done = _ip("netns", "delete", self.name)
        if done.returncode != 0 and self.path.exists():
            logger.warning("could not delete network namespace %s: %s", self.name, done.stderr.strip()[-200:])


def fenced_targets() -> list[tuple[str, int]]:
    """(address or subnet, IP version) an isolated desktop must not reach through slirp4netns:
    every IPv4 address of this host, and the whole subnet of each interface but the one the
    default route leaves by (a bridge of containers or VMs, other episodes' among them). IPv6 needs
    none: slirp4netns gives the namespace none."""
    default = _ip("route", "show", "default").stdout.split()
    uplink = default[default.index("dev") + 1] if "dev" in default else None
    targets: list[tuple[str, int]] = []
    for name, addresses in psutil.net_if_addrs().items():
        for address in addresses:
            if address.family != socket.AF_INET:
                continue
            try:
                iface = ipaddress.ip_interface(f"{address.address}/{address.netmask or '255.255.255.255'}")
            except ValueError:
                continue
            if iface.ip.is_loopback or iface.ip.is_link_local:
                continue
            whole = name != uplink and iface.network.prefixlen < iface.ip.max_prefixlen
            targets.append((str(iface.network if whole else iface.ip), 4))
    return list(dict.fromkeys(targets))


def owner_alive(name: str) -> bool:
    """The process named in a namespace's name (``<prefix><pid>-<start ms>-<n>``) still runs."""
    return maker_alive(name.removeprefix(PREFIX).split("-"))


def sweep() -> list[str]:
    """Delete the namespaces of desktops whose owning process is gone; their names."""
    if not NETNS_DIR.is_dir() or os.geteuid() != 0:
        return []
    removed = []
    for path in sorted(NETNS_DIR.glob(PREFIX + "*")):
        if not owner_alive(path.name) and _ip("netns", "delete", path.name).returncode == 0:
            removed.append(path.name)
    return removed
