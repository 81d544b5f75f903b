"""The relays an isolated desktop container is reached through, with the real desktop service on a
unix socket: an app port tunnelled by CONNECT (token checked, loopback only), the sink's way back
through a unix socket, bytes both ways with half-closes, and a closed relay ending its connections."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import httpx
import pytest

from mcpworld.env.docker.service import DesktopService, UnixHTTPServer, host_paths, make_handler
from mcpworld.env.local.relay import Relay, listen_tcp, listen_unix, through_service, to_tcp, to_unix

TOKEN = "t0ken"


@pytest.fixture
def echo():
    """A TCP server on 127.0.0.1 that sends back what it gets, upper-cased, until the peer half-closes."""
    server = listen_tcp()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(4096):
                    conn.sendall(data.upper())

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


@pytest.fixture
def service(tmp_path):
    """The desktop service (no desktop started) on a unix socket, as in a container."""
    path = Path(tmp_path) / "service.sock"
    server = UnixHTTPServer(
        str(path), make_handler(DesktopService({"workroot": str(tmp_path), "host_paths": host_paths()}), TOKEN)
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield path
    server.shutdown()
    server.server_close()


def exchange(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(payload)
        conn.shutdown(socket.SHUT_WR)  # the far side sees the end and answers in full
        got = b""
        while data := conn.recv(4096):
            got += data
        return got


def test_an_app_port_is_reached_through_the_service_and_only_with_its_token(service, echo):
    relay = Relay(listen_tcp(), through_service(service, TOKEN, echo), "app")
    try:
        payload = b"devtools " * 20_000  # more than a socket buffer each way
        assert exchange(relay.port, payload) == payload.upper()
        assert exchange(relay.port, b"again") == b"AGAIN"  # a connection each time
    finally:
        relay.close()
    with pytest.raises(ConnectionError, match="401"):
        through_service(service, "wrong", echo)()
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(service))) as http:
        reply = http.get("http://desktop/health", headers={"Authorization": f"Bearer {TOKEN}"})
    assert reply.status_code == 200 and reply.json()["pid"]  # the service's own calls share the socket


def test_the_tunnel_goes_to_the_containers_loopback_only(service, echo):
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(str(service))
        conn.sendall(
            f"CONNECT 192.0.2.1:{echo} HTTP/1.1\r\nHost: 127.0.0.1:{echo}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode()
        )
        assert conn.recv(200).startswith(b"HTTP/1.1 400")
    with socket.socket(socket.AF_UNIX) as conn:  # its Host names the target too (mcpworld.core.listener)
        conn.connect(str(service))
        conn.sendall(
            f"CONNECT 192.0.2.1:{echo} HTTP/1.1\r\nHost: 192.0.2.1:{echo}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode()
        )
        assert conn.recv(200).startswith(b"HTTP/1.1 403")
    with pytest.raises(ConnectionError, match="502"):  # nothing listens there
        through_service(service, TOKEN, listen_tcp().getsockname()[1])()


def test_the_sink_is_reached_from_inside_through_a_unix_socket(tmp_path, echo):
    host_side = Relay(listen_unix(tmp_path / "sink.sock"), to_tcp(echo), "host")
    inside = Relay(listen_tcp(), to_unix(tmp_path / "sink.sock"), "inside")
    try:
        assert exchange(inside.port, b"send theme_changed") == b"SEND THEME_CHANGED"
    finally:
        inside.close()
        host_side.close()
    assert not (tmp_path / "sink.sock").exists()


def test_a_closed_relay_ends_its_open_connections_and_stops_listening(echo):
    relay = Relay(listen_tcp(), to_tcp(echo), "app")
    conn = socket.create_connection(("127.0.0.1", relay.port), timeout=5)
    conn.sendall(b"x")
    assert conn.recv(10) == b"X"
    relay.close()
    assert conn.recv(10) == b""  # ended, not left hanging
    conn.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", relay.port), timeout=5)


def test_the_same_port_number_is_taken_when_it_is_free():
    taken = listen_tcp()
    port = taken.getsockname()[1]
    other = listen_tcp(prefer=port)  # busy here: any other
    taken.close()
    same = listen_tcp(prefer=port)
    try:
        assert other.getsockname()[1] != port and same.getsockname()[1] == port
    finally:
        other.close()
        same.close()
