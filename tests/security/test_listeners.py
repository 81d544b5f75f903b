"""Every HTTP listener mcpworld starts takes the one rule (mcpworld.core.listener, docs/security.md):
no token → 401, a body that is not JSON → 415, a foreign Origin or Host → 403, and its own request
with all of them right is served."""

from __future__ import annotations

import json

import httpx
import pytest
import socketio

from tests.security.conftest import FOREIGN_ORIGIN, TASK, Served

REFUSED = {401, 403, 415}


def test_its_own_request_with_everything_right_is_served(listener: Served) -> None:
    reply = listener.send()
    assert reply.status_code not in REFUSED, f"{listener.name}: {reply.status_code} {reply.text[:300]}"
    same_origin = listener.send(origin=f"http://127.0.0.1:{listener.port}")  # a page of its own, were there one
    assert same_origin.status_code not in REFUSED, f"{listener.name}: {same_origin.text[:300]}"


def test_no_token_or_a_wrong_one_is_401(listener: Served) -> None:
    missing = listener.send(token=None)
    assert missing.status_code == 401, f"{listener.name}: {missing.status_code}"
    wrong = listener.send(token="x" + listener.token)
    assert wrong.status_code == 401 and listener.token not in wrong.text
    assert listener.send(token=listener.token[:-1]).status_code == 401  # a prefix is not the token
    basic = listener.send(token=None, extra={"Authorization": f"Basic {listener.token}"})
    assert basic.status_code == 401


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
def test_a_body_that_is_not_json_is_415(listener: Served, content_type: str) -> None:
    """What a browser posts cross-site without asking first (a "simple" request) never reaches a route."""
    reply = listener.send(method="POST", content_type=content_type, body=TASK)
    assert reply.status_code == 415, f"{listener.name}: {reply.status_code} {reply.text[:200]}"
    untyped = listener.send(method="POST", content_type=None, body=TASK)  # a body must say it is JSON
    assert untyped.status_code == 415


def test_a_foreign_origin_is_403(listener: Served) -> None:
    for origin in (FOREIGN_ORIGIN, "null", f"http://127.0.0.1:{listener.port + 1}", f"http://localhost:{listener.port}"):
        reply = listener.send(origin=origin)
        assert reply.status_code == 403, f"{listener.name}: Origin {origin}: {reply.status_code}"
    assert listener.send(extra={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert listener.send(extra={"Sec-Fetch-Site": "same-site"}).status_code == 403  # localhost:3000 → localhost:PORT


def test_a_foreign_host_is_403(listener: Served) -> None:
    """DNS rebinding: a page whose name now resolves to 127.0.0.1 still sends its own name."""
    for host in (
        f"attacker.example:{listener.port}",
        "attacker.example",
        f"127.0.0.1:{listener.port + 1}",
        f"10.0.0.1:{listener.port}",
    ):
        reply = listener.send(host=host)
        assert reply.status_code == 403, f"{listener.name}: Host {host}: {reply.status_code}"
    assert listener.send(host=f"localhost:{listener.port}").status_code not in REFUSED


def test_the_proxy_takes_its_token_in_the_url_too(mcp_proxy: Served) -> None:
    """For an MCP client given only a URL (as Klavis's servers are reached)."""
    url = f"{mcp_proxy.url}/mcp?token={mcp_proxy.token}"
    headers = {**mcp_proxy.headers, "Content-Type": "application/json"}
    assert httpx.post(url, content=json.dumps(mcp_proxy.body), headers=headers).status_code == 200
    assert httpx.post(url + "x", content=json.dumps(mcp_proxy.body), headers=headers).status_code == 401


async def _connect(served: Served, headers: dict[str, str]) -> bool:
    client = socketio.AsyncClient(reconnection=False)
    try:
        await client.connect(served.url, headers=headers, transports=["websocket"], wait_timeout=5)
    except socketio.exceptions.ConnectionError:
        if client.eio.http is not None:
            await client.eio.http.close()
        return False
    await client.disconnect()
    return True


async def test_the_sinks_websocket_handshake_takes_the_rule(event_sink: Served) -> None:
    auth = {"Authorization": f"Bearer {event_sink.token}"}
    assert await _connect(event_sink, auth)
    assert not await _connect(event_sink, {})
    assert not await _connect(event_sink, {"Authorization": "Bearer nope"})
    assert not await _connect(event_sink, {**auth, "Origin": FOREIGN_ORIGIN})  # a page's WebSocket carries its Origin
    assert not await _connect(event_sink, {**auth, "Host": f"attacker.example:{event_sink.port}"})
