"""The rule itself (mcpworld.core.listener): which Host names a listener answers to, how the token
is kept and chosen, and the stand-in for OSWorld's VM server (browser checks only)."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from pathlib import Path

import pytest

from mcpworld.core.errors import UserError
from mcpworld.core.listener import Guard, GuardedApp, host_allowed, listen_token, write_token

T = "a-token-of-thirty-two-characters-xx"


def test_a_loopback_listener_answers_to_loopback_names_on_its_own_port_only() -> None:
    bound = ("127.0.0.1", 8765)
    for host in ("127.0.0.1:8765", "localhost:8765", "LOCALHOST:8765", "[::1]:8765", "127.0.0.2:8765"):
        assert host_allowed(host, bound), host
    for host in (
        "127.0.0.1:8766",
        "127.0.0.1",
        "attacker.example:8765",
        "10.0.0.1:8765",
        f"{socket.gethostname()}:8765",
        "",
        "127.0.0.1:80x",
        "[::1:8765",
        None,
    ):
        assert not host_allowed(host, bound), host


def test_a_listener_on_all_addresses_answers_to_ip_addresses_and_this_machines_name() -> None:
    bound = ("0.0.0.0", 9401)
    for host in ("10.1.2.3:9401", "[fe80::1]:9401", f"{socket.gethostname()}:9401", "localhost:9401"):
        assert host_allowed(host, bound), host
    for host in ("attacker.example:9401", "10.1.2.3:9402"):  # a rebound name; another port
        assert not host_allowed(host, bound), host


def test_a_unix_socket_listener_answers_to_its_names_on_any_port_and_connect_names_its_target() -> None:
    assert host_allowed("desktop", "/run/x.sock", names=("desktop",))
    assert host_allowed("127.0.0.1:9222", "/run/x.sock", method="CONNECT")
    assert not host_allowed("attacker.example", "/run/x.sock", names=("desktop",))
    assert host_allowed("127.0.0.1:9222", ("127.0.0.1", 5000), method="CONNECT")  # the tunnel's target's port
    assert not host_allowed("attacker.example:9222", ("127.0.0.1", 5000), method="CONNECT")


def headers(**values: str) -> dict[str, str]:
    return {"host": "127.0.0.1:1234", **{k.replace("_", "-"): v for k, v in values.items()}}


def test_the_checks_come_in_order_and_the_token_only_as_bearer() -> None:
    guard, bound = Guard(T), ("127.0.0.1", 1234)
    assert guard.check("POST", "/", headers(authorization=f"Bearer {T}", content_type="application/json"), bound) is None
    assert (
        guard.check("POST", "/", headers(authorization=f"bearer {T}", content_type="application/json; charset=utf-8"), bound)
        is None
    )
    refusal = guard.check("POST", "/", headers(origin="http://a.example", content_type="text/plain"), bound)
    assert refusal is not None and refusal.status == 403  # a browser's request is told nothing of the token
    refusal = guard.check("POST", "/", headers(content_type="text/plain"), bound)
    assert refusal is not None and refusal.status == 401 and T not in refusal.message
    assert ("WWW-Authenticate", "Bearer") in refusal.headers()
    assert guard.check("GET", f"/?token={T}", headers(), bound).status == 401  # type: ignore[union-attr]
    assert Guard(T, query_token=True).check("GET", f"/x?a=1&token={T}", headers(), bound) is None
    refusal = guard.check("POST", "/", headers(authorization=f"Bearer {T}", content_length="3"), bound)
    assert refusal is not None and refusal.status == 415  # a body that does not say it is JSON
    assert guard.check("POST", "/", headers(authorization=f"Bearer {T}", content_length="0"), bound) is None


def test_the_asgi_wrapper_refuses_before_the_app_and_passes_other_scopes() -> None:
    called: list[str] = []

    async def app(scope, receive, send) -> None:
        called.append(scope["type"])

    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {}

    wrapped = GuardedApp(app, Guard(T))
    base = {"server": ("127.0.0.1", 1234), "path": "/", "query_string": b"", "method": "GET"}
    asyncio.run(wrapped({**base, "type": "http", "headers": [(b"host", b"127.0.0.1:1234")]}, receive, send))
    assert called == [] and sent[0]["status"] == 401
    asyncio.run(
        wrapped(
            {
                **base,
                "type": "websocket",
                "headers": [
                    (b"host", b"127.0.0.1:1234"),
                    (b"authorization", f"Bearer {T}".encode()),
                    (b"origin", b"http://a.example"),
                ],
            },
            receive,
            send,
        )
    )
    assert called == [] and sent[-1] == {"type": "websocket.close", "code": 1008}
    asyncio.run(
        wrapped(
            {**base, "type": "http", "headers": [(b"host", b"127.0.0.1:1234"), (b"authorization", f"Bearer {T}".encode())]},
            receive,
            send,
        )
    )
    asyncio.run(wrapped({"type": "lifespan"}, receive, send))
    assert called == ["http", "lifespan"]


def test_the_token_file_is_0600_whatever_was_there_and_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "served" / "token"
    path.parent.mkdir()
    path.write_text("old")
    path.chmod(0o644)
    old = os.umask(0)
    try:
        write_token(path, T)
    finally:
        os.umask(old)
    assert path.read_text() == T and stat.S_IMODE(path.stat().st_mode) == 0o600
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("keep")
    path.unlink()
    path.symlink_to(elsewhere)  # a link laid where the token goes is replaced, never written through
    write_token(path, T)
    assert elsewhere.read_text() == "keep" and not path.is_symlink()


def test_a_token_is_fresh_on_loopback_the_researchers_when_set_and_required_elsewhere(monkeypatch) -> None:
    monkeypatch.delenv("MCPWORLD_TEST_TOKEN", raising=False)
    first, second = listen_token("127.0.0.1", "MCPWORLD_TEST_TOKEN"), listen_token("localhost", "MCPWORLD_TEST_TOKEN")
    assert first != second and len(first) >= 32
    with pytest.raises(UserError, match="MCPWORLD_TEST_TOKEN") as refused:
        listen_token("0.0.0.0", "MCPWORLD_TEST_TOKEN", 8765)
    assert "\n" not in str(refused.value) and "ssh -L 8765:127.0.0.1:8765" in str(refused.value)
    monkeypatch.setenv("MCPWORLD_TEST_TOKEN", T)
    assert listen_token("0.0.0.0", "MCPWORLD_TEST_TOKEN") == T == listen_token("127.0.0.1", "MCPWORLD_TEST_TOKEN")


def test_the_osworld_vm_stand_in_refuses_what_a_browser_sends(tmp_path: Path) -> None:
    """It speaks OSWorld's server's API, token-less and with form bodies as that server takes them, so
    it gets the browser checks alone: a cross-site POST to /execute runs nothing."""
    pytest.importorskip("flask")
    from tests.fakes.osworld_vm import make_app

    client = make_app(tmp_path, {"PATH": os.environ["PATH"]}, "osworld").test_client()
    marker = tmp_path / "pwned"
    command = {"command": ["touch", str(marker)], "shell": False}
    assert client.post("/execute", json=command, headers={"Origin": "http://attacker.example"}).status_code == 403
    assert client.post("/execute", data="x", headers={"Host": "attacker.example"}).status_code == 403
    assert not marker.exists()
    assert client.post("/execute", json=command).status_code == 200 and marker.exists()  # its own client's request
