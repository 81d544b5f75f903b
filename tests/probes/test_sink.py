"""The per-episode event sink: token, inject, live events, evaluate, and two sinks side by side."""

from __future__ import annotations

import asyncio

import pytest
import socketio

from mcpworld.probes.live import EventRelay
from mcpworld.probes.sink import EventSink


@pytest.fixture
def sinks():
    made = []

    def make(hook: str = "") -> tuple[EventSink, list]:
        got: list = []
        sink = EventSink(got.append, hook).start()
        made.append(sink)
        return sink, got

    yield make
    for sink in made:
        sink.stop()


async def probe(sink: EventSink, token: str | None = None) -> tuple[socketio.AsyncClient, list]:
    """A client shaped like mcpworld's VS Code probe: it runs what is injected, answers evaluate."""
    client, injected = socketio.AsyncClient(reconnection=False), []

    @client.on("inject")
    async def inject(source):
        injected.append(source)
        await client.emit("send", {"event_type": "start_success", "message": "running"})

    @client.on("evaluate")
    async def evaluate():
        await client.emit("send", {"event_type": "evaluate_on_completion", "data": "Default Light+"})

    try:
        await client.connect(
            sink.url, headers={"Authorization": f"Bearer {token or sink.token}"}, transports=["websocket"], wait_timeout=5
        )
    except socketio.exceptions.ConnectionError:
        if client.eio.http is not None:  # refused at the handshake: the client leaves its session open
            await client.eio.http.close()
        raise
    return client, injected


async def test_a_probe_gets_the_hook_and_its_events_reach_the_episode(sinks):
    sink, got = sinks("socket.on('evaluate', () => {})")
    client, injected = await probe(sink)
    try:
        assert await asyncio.to_thread(sink.wait_ready, 5)
        assert injected == ["socket.on('evaluate', () => {})"]
        await client.emit("send", {"event_type": "theme_changed", "data": "Solarized"})
        assert await asyncio.to_thread(sink.evaluate, 5) is True
        assert got == [
            {"event_type": "theme_changed", "data": "Solarized"},
            {"event_type": "evaluate_on_completion", "data": "Default Light+"},
        ]  # start_success kept apart
    finally:
        await client.disconnect()


async def test_a_connection_without_the_episodes_token_is_refused(sinks):
    sink, _got = sinks()
    other, _ = sinks()
    with pytest.raises(socketio.exceptions.ConnectionError):
        await probe(sink, token=other.token)
    assert sink.connected == 0 and not sink.evaluate(0.1)  # nobody to ask: no answer, at once


async def test_two_episodes_sinks_never_cross_events(sinks):
    (a, got_a), (b, got_b) = sinks(), sinks()
    assert a.port != b.port and a.token != b.token
    client_a, _ = await probe(a)
    client_b, _ = await probe(b)
    try:
        await client_a.emit("send", {"event_type": "saved", "data": "a"})
        await client_b.emit("send", {"event_type": "saved", "data": "b"})
        assert await asyncio.to_thread(a.evaluate, 5) and await asyncio.to_thread(b.evaluate, 5)
        assert [e["data"] for e in got_a] == ["a", "Default Light+"]
        assert [e["data"] for e in got_b] == ["b", "Default Light+"]
    finally:
        await client_a.disconnect()
        await client_b.disconnect()


def test_the_relay_traces_events_holds_them_for_the_handler_and_dates_key_steps():
    traced = []

    class Handler:
        def __init__(self):
            self.seen = []

        def send(self, message):
            self.seen.append(message["n"])
            return [1] if message["n"] == 2 else []

    relay = EventRelay(lambda kind, **data: traced.append((kind, data)))
    relay({"n": 1})  # the app is up before the handler
    handler = Handler()
    relay.attach(handler)
    relay({"n": 2})
    assert handler.seen == [1, 2]
    assert traced == [
        ("app_event", {"message": {"n": 1}}),
        ("app_event", {"message": {"n": 2}}),
        ("key_step", {"index": 1, "via": "handler"}),
    ]
