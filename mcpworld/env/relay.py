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
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from pathlib import Path
from typing import Callable

log = logging.getLogger(__name__)

CHUNK = 1 << 16
Connect = Callable[[], socket.socket]


def pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until both sides have finished sending; closes both. Blocks."""
    def one_way(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(CHUNK):
                dst.sendall(data)
        except OSError:
            pass
        try:
            dst.shutdown(socket.SHUT_WR)  # the peer sees the end, the other way goes on
        except OSError:
            pass

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
            sock.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                         f"Authorization: Bearer {token}\r\n\r\n".encode())
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
    """Accepts on ``listener`` and pipes each connection to a fresh one from ``connect``, until closed."""

    def __init__(self, listener: socket.socket, connect: Connect, name: str):
        self.listener, self._connect, self.name = listener, connect, name
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
        try:
            upstream = self._connect()
        except OSError as exc:
            log.info("relay %s: %s", self.name, exc)
            client.close()
            return
        upstream.settimeout(None)
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
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._path:
            Path(self._path).unlink(missing_ok=True)
