"""A network namespace per local desktop (``env.network=isolated``).

Measured before: an agent on env=local fetched a secret a host service served on 127.0.0.1. In
its own namespace a desktop has a loopback of its own, so the host's loopback services and other
episodes' apps are out of reach. The harness still reaches the desktop's apps (Chromium's
DevTools, VLC's HTTP …) on the same ``127.0.0.1:<port>`` as before: ``forward`` listens there on
the host and connects inside the namespace (a socket keeps the namespace it was made in, so one
thread enters it with ``setns`` just long enough to make the socket). The other way round,
``expose`` opens one host port inside the namespace (the episode's own event sink, a site the task
names on the host's loopback). Outbound traffic goes through ``slirp4netns`` when it is installed
(user-space NAT with the host's loopback disabled); without it the desktop has no outside network,
said once in the log. With outbound traffic, the namespace's own firewall (set by root; the
desktop's account cannot change it) rejects the host's other addresses and the subnets of its
local bridges (docker's, other VMs'), so a service bound to 0.0.0.0 is out of reach as well.

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
from pathlib import Path
from typing import Callable, TypeVar

import psutil

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
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)


class NetNamespace:
    """One desktop's namespace: ``wrap`` starts a command in it; ``forward`` and ``expose`` pass
    single loopback ports between it and the host; ``close`` deletes it."""

    def __init__(self, name: str):
        self.name = name
        self.path = NETNS_DIR / name
        self.outbound = False  # slirp4netns gives it the outside network
        self._slirp: subprocess.Popen[bytes] | None = None
        self._exit_write = -1
        self._listeners: dict[tuple[str, int], socket.socket] = {}
        self._open: set[socket.socket] = set()
        self._guard = threading.Lock()

    @classmethod
    def create(cls, outbound: bool = True) -> NetNamespace | None:
        """A new namespace with its loopback up (and the outside through slirp4netns when asked and
        installed); None, with one warning, where the machine allows none (not root, no ``ip``)."""
        me = psutil.Process()
        with _lock:
            n = next(_sequence)
        name = f"{PREFIX}{me.pid}-{int(me.create_time() * 1000)}-{n}"
        why = None
        if os.geteuid() != 0:
            why = "the harness is not root"
        elif not shutil.which("ip") or not shutil.which("nsenter"):
            why = "`ip` (iproute2) or `nsenter` (util-linux) is not installed"
        else:
            made = _ip("netns", "add", name)
            if made.returncode != 0:
                why = f"`ip netns add` failed: {made.stderr.strip()[-200:]}"
            elif (up := _ip("-n", name, "link", "set", "lo", "up")).returncode != 0:
                _ip("netns", "delete", name)
                why = f"its loopback did not come up: {up.stderr.strip()[-200:]}"
        if why:
            _warn_once("create", "env.network=isolated: no network namespace for the desktop (%s); its apps share "
                       "the host's network, host loopback services included (env.network_effective=host)", why)
            return None
        ns = cls(name)
        if outbound:
            ns._start_outbound()
        return ns

    def _start_outbound(self) -> None:
        slirp = shutil.which("slirp4netns")
        if slirp is None:
            _warn_once("slirp", "env.network=isolated: slirp4netns is not installed, so desktops have no outside "
                       "network (web sites fail); `apt-get install slirp4netns` gives them one")
            return
        read_end, write_end = os.pipe()
        # slirp4netns exits when this pipe closes: with the namespace, or with this process if it is killed
        exit_read, self._exit_write = os.pipe()
        try:
            self._slirp = subprocess.Popen(
                [slirp, "--configure", "--mtu=65520", "--disable-host-loopback", "--netns-type=path",
                 f"--ready-fd={write_end}", f"--exit-fd={exit_read}", str(self.path), "tap0"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                pass_fds=(write_end, exit_read), start_new_session=True)
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
            self._fence_host()
            return
        err = b""
        if self._slirp.poll() is not None and self._slirp.stderr:
            err = self._slirp.stderr.read()
        self._stop_slirp()
        _warn_once("slirp-failed", "env.network=isolated: slirp4netns did not start (%s); desktops have no outside "
                   "network", err.decode(errors="replace").strip()[-200:] or "no reason given")

    def _fence_host(self) -> None:
        """Reject, inside the namespace, the host's own addresses and its local bridges' subnets
        (slirp4netns would otherwise connect to them from the host)."""
        targets = fenced_targets()
        tools = {4: shutil.which("iptables")}
        if not tools[4]:
            _warn_once("iptables", "env.network=isolated: iptables is not installed, so a desktop reaches host services "
                       "bound to 0.0.0.0 through the host's own addresses (%s)", ", ".join(t for t, _ in targets))
            return
        for target, family in targets:
            tool = tools.get(family)
            if tool is None:
                continue
            done = subprocess.run(self.wrap([tool, "-w", "-A", "OUTPUT", "-d", target, "-j", "REJECT"]),
                                  capture_output=True, text=True, timeout=10)
            if done.returncode != 0:
                _warn_once("fence", "env.network=isolated: could not fence the host address %s off the desktop: %s",
                           target, done.stderr.strip()[-200:])

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
        """What the desktop got, for ``env.network_effective``."""
        return "isolated" if self.outbound else "isolated_offline"

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started inside the namespace (the wrapper must run as root)."""
        return [shutil.which("nsenter") or "nsenter", f"--net={self.path}", "--", *argv]

    def socket_inside(self) -> socket.socket:
        return inside(self.path, lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))

    # --- single ports across the boundary ---------------------------------------------------------
    def forward(self, port: int) -> None:
        """The host's ``127.0.0.1:port`` leads to the namespace's (the harness reaches an app)."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listen(listener, port, ("forward", port), lambda: self._connect_inside(port))

    def expose(self, port: int) -> None:
        """The namespace's ``127.0.0.1:port`` leads to the host's (a host service the desktop may use)."""
        if ("expose", port) in self._listeners:
            return
        self._listen(self.socket_inside(), port, ("expose", port),
                     lambda: socket.create_connection((LOOPBACK, port), timeout=5))

    def unexpose(self, port: int) -> None:
        self._close_listener(("expose", port))

    def _connect_inside(self, port: int) -> socket.socket:
        sock = self.socket_inside()
        sock.settimeout(5)
        try:
            sock.connect((LOOPBACK, port))
        except OSError:
            sock.close()
            raise
        return sock

    def _listen(self, listener: socket.socket, port: int, key: tuple[str, int],
                connect: Callable[[], socket.socket]) -> None:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((LOOPBACK, port))
        except OSError:
            listener.close()
            raise
        listener.listen(64)
        with self._guard:
            self._listeners[key] = listener
        threading.Thread(target=self._accept, args=(listener, connect), daemon=True,
                         name=f"netns-{key[0]}-{port}").start()

    def _accept(self, listener: socket.socket, connect: Callable[[], socket.socket]) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._relay, args=(client, connect), daemon=True).start()

    def _relay(self, client: socket.socket, connect: Callable[[], socket.socket]) -> None:
        try:
            upstream = connect()
        except OSError:  # nothing listens on the other side (yet): the caller sees a closed connection
            client.close()
            return
        upstream.settimeout(None)
        for sock in (client, upstream):  # a relay must not add Nagle's delay to small requests
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._guard:
            self._open.update((client, upstream))
        back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
        back.start()
        _pump(client, upstream)
        back.join()
        with self._guard:
            self._open.difference_update((client, upstream))
        client.close()
        upstream.close()

    def _close_listener(self, key: tuple[str, int]) -> None:
        with self._guard:
            listener = self._listeners.pop(key, None)
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes its accept()
            except OSError:
                pass
            listener.close()

    def close_ports(self) -> None:
        """Stop every forward, expose and relay: the host's ports are free again (a desktop pool's
        next namespace forwards the same ones while this one is deleted in the background)."""
        for key in list(self._listeners):
            self._close_listener(key)
        with self._guard:
            for sock in self._open:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

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


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def owner_alive(name: str) -> bool:
    try:
        pid, started, _ = name.removeprefix(PREFIX).split("-")
        return abs(psutil.Process(int(pid)).create_time() * 1000 - int(started)) < 1000
    except psutil.NoSuchProcess:
        return False
    except (ValueError, psutil.Error):
        return True  # not ours to judge


def sweep() -> list[str]:
    """Delete the namespaces of desktops whose owning process is gone; their names."""
    if not NETNS_DIR.is_dir() or os.geteuid() != 0:
        return []
    removed = []
    for path in sorted(NETNS_DIR.glob(PREFIX + "*")):
        if not owner_alive(path.name) and _ip("netns", "delete", path.name).returncode == 0:
            removed.append(path.name)
    return removed
