"""Byte relays between sockets: how the host and a desktop container on a network of its own
(``env.network=isolated``) reach the few loopback ports each must reach of the other.

- Host → container: each app control port (Chromium's DevTools, VLC's HTTP, OBS's websocket,
  code-server) gets a port on the host's 127.0.0.1; each connection to it is carried through the
  desktop service's unix socket as an HTTP ``CONNECT`` to that port on the container's own loopback.
- Container → host: the episode's event sink is served on the container's loopback by the desktop
  service and carried through a unix socket in the work folder to the sink on the host's loopback.

Only these ports cross. The container reaches nothing else of the host's loopback, and the host's
other programs reach the container only through the ports it publishes (noVNC). Standard library
only: the desktop service imports this inside the image.

Who may use a relayed app port is checked here, for every relay that listens on a loopback TCP
port (``PeerGate``): the kernel says which uid made the socket at the other end of a loopback
connection (``/proc/net/tcp``, the row whose addresses are the accepted connection's, swapped), so
another local user's process (a shared SLURM node) is refused before a byte is relayed: it could
otherwise drive the episode's browser through DevTools or open a shell through code-server.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import socket
import struct
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

log = logging.getLogger(__name__)

CHUNK = 1 << 16
Connect = Callable[[], socket.socket]
Admit = Callable[[socket.socket], bool]
PROC_NET = Path("/proc/thread-self/net")  # the calling thread's namespace (a thread may have entered another)
TIME_WAIT, LISTEN = "06", "0A"  # /proc/net/tcp states whose rows name no live socket's owner (uid 0 in TIME_WAIT)


def _proc_forms(host: str, port: int) -> tuple[str | None, str]:
    """``host:port`` as /proc/net/tcp writes it (None for an IPv6 address) and as /proc/net/tcp6 does
    (an IPv4 address as ::ffff:a.b.c.d): each 32-bit word of the address in the host's byte order."""
    address = ipaddress.ip_address(host.split("%", 1)[0])
    v4 = address if isinstance(address, ipaddress.IPv4Address) else address.ipv4_mapped
    v6 = ipaddress.IPv6Address(f"::ffff:{v4}") if v4 is not None else address

    def words(packed: bytes) -> str:
        return "".join(f"{w:08X}" for w in struct.unpack(f"={len(packed) // 4}I", packed))

    return (f"{words(v4.packed)}:{port:04X}" if v4 is not None else None), f"{words(v6.packed)}:{port:04X}"


def peer_uid(conn: socket.socket, proc_net: Path = PROC_NET) -> int | None:
    """The uid that owns the socket at the other end of ``conn``, a TCP connection this host made to
    itself (its own network namespace's loopback): the row of ``/proc/net/tcp{,6}`` whose local
    address is ``conn``'s remote one and whose remote address is ``conn``'s local one. None when there
    is none: the peer is gone already, or is not on this host and namespace."""
    try:
        local, remote = conn.getsockname(), conn.getpeername()
    except OSError:  # the peer has gone already
        return None
    ours = _proc_forms(local[0], local[1])
    theirs = _proc_forms(remote[0], remote[1])
    for table, index in (("tcp", 0), ("tcp6", 1)):
        want_local, want_remote = theirs[index], ours[index]
        if want_local is None or want_remote is None:
            continue
        try:
            with open(proc_net / table) as rows:
                next(rows, None)  # the heading
                for row in rows:
                    fields = row.split()
                    if (
                        len(fields) > 7
                        and fields[1] == want_local
                        and fields[2] == want_remote
                        and fields[3] not in (TIME_WAIT, LISTEN)
                    ):
                        return int(fields[7])
        except OSError:  # no IPv6 on this kernel
            continue
    return None


def harness_uids(*more: int | None) -> frozenset[int]:
    """The harness's own uid, and ``more`` (a desktop account that must reach the port too)."""
    return frozenset([os.getuid(), *(uid for uid in more if uid is not None)])


class PeerGate:
    """Admits a connection to a loopback relay only from a process of one of ``uids`` (the harness,
    and the desktop's account where its own programs use the port). A refusal is logged once per uid
    and gate, as a warning naming the user."""

    def __init__(self, uids: Iterable[int], what: str, proc_net: Path = PROC_NET):
        self.uids, self.what, self._proc_net = frozenset(uids), what, proc_net
        self._refused: set[int | None] = set()
        self._lock = threading.Lock()

    def __call__(self, conn: socket.socket) -> bool:
        uid = peer_uid(conn, self._proc_net)
        if uid is not None and uid in self.uids:
            return True
        with self._lock:
            first = uid not in self._refused
            self._refused.add(uid)
        if first:
            log.warning(
                "%s: refused a connection from %s: only %s may use it (docs/isolation.md)",
                self.what,
                _who(uid) if uid is not None else "a process whose socket was not found",
                ", ".join(_who(u) for u in sorted(self.uids)),
            )
        return False


def _who(uid: int) -> str:
    try:
        import pwd

        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (KeyError, ImportError):
        return f"uid {uid}"


def pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until both sides have finished sending; closes both. Blocks."""

    def one_way(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(CHUNK):
                dst.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)  # the peer sees the end, the other way goes on

    back = threading.Thread(target=one_way, args=(b, a), daemon=True, name="relay-back")
    back.start()
    one_way(a, b)
    back.join()
    a.close()
    b.close()


def listen_tcp(port: int = 0, prefer: int | None = None, host: str = "127.0.0.1") -> socket.socket:
    """A listening TCP socket on ``host``: on port ``prefer`` when it is free (the same number on both
    sides of a relay spares readers a translation), else ``port`` (0: any)."""
    for candidate in ([prefer] if prefer else []) + [port]:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, candidate))
        except OSError:
            sock.close()
            if candidate == port:
                raise
            continue
        sock.listen(64)
        return sock
    raise AssertionError("unreachable")


def listen_unix(path: Path, mode: int = 0o600) -> socket.socket:
    """A listening unix socket at ``path`` (a stale one is replaced); who may connect is decided
    by ``mode`` and the folder it is in."""
    path.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    os.chmod(path, mode)
    sock.listen(64)
    return sock


def to_tcp(port: int, host: str = "127.0.0.1") -> Connect:
    return lambda: socket.create_connection((host, port), timeout=10)


def to_unix(path: Path) -> Connect:
    def connect() -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(10)
        sock.connect(str(path))
        return sock

    return connect


def through_service(service_socket: Path, token: str, port: int) -> Connect:
    """A connection to ``port`` on the container's loopback, tunnelled by the desktop service."""

    def connect() -> socket.socket:
        sock = to_unix(service_socket)()
        try:
            sock.sendall(
                f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
            )
            head = b""
            while b"\r\n\r\n" not in head:  # byte by byte: nothing after the reply's head is consumed
                byte = sock.recv(1)
                if not byte:
                    raise ConnectionError(f"the desktop service closed the tunnel to port {port}")
                head += byte
            status = head.split(b"\r\n", 1)[0]
            if b" 200 " not in status + b" ":
                raise ConnectionError(f"the desktop service refused a tunnel to port {port}: {status.decode(errors='replace')}")
        except BaseException:
            sock.close()
            raise
        return sock

    return connect


class Relay:
    """Accepts on ``listener`` and pipes each connection to a fresh one from ``connect``, until closed;
    ``admit`` (a ``PeerGate``) decides first whether the connection may go through at all."""

    def __init__(self, listener: socket.socket, connect: Connect, name: str, admit: Admit | None = None):
        self.listener, self._connect, self.name, self._admit = listener, connect, name, admit
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._path = listener.getsockname() if listener.family == socket.AF_UNIX else None
        self.port = 0 if self._path else int(listener.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True, name=f"relay-{name}").start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True, name=f"relay-{self.name}").start()

    def _serve(self, client: socket.socket) -> None:
        if self._admit is not None and not self._admit(client):
            client.close()
            return
        try:
            upstream = self._connect()
        except OSError as exc:  # nothing listens there (yet): the caller sees a closed connection
            log.debug("relay %s: %s", self.name, exc)
            client.close()
            return
        upstream.settimeout(None)
        for sock in (client, upstream):  # a relay must not add Nagle's delay to small requests
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            if self._closed:
                client.close()
                upstream.close()
                return
            self._open |= {client, upstream}
        try:
            pipe(client, upstream)
        finally:
            with self._lock:
                self._open -= {client, upstream}

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets = list(self._open)
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._path:
            Path(self._path).unlink(missing_ok=True)
