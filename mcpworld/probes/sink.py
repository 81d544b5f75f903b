"""The per-episode event sink app probes report to: a Socket.IO endpoint on 127.0.0.1.

PC-Canary's IPC probes (its VS Code extension) speak this protocol: on connect the sink sends the
task's hook source (``inject``), the app sends ``send`` events (``{event_type, message, data}``),
and at completion the sink emits ``evaluate`` and waits for the app's ``evaluate_on_completion``.
Unlike PC-Canary's fixed port 5000, each episode's sink has a free port and a token of its own, so
episodes side by side never see each other's events. The token keeps other desktops and other local
users out; the episode's own agent runs as the account the app runs as, so it is not a secret from
the agent. The sink takes ``mcpworld.core.listener``'s rule in front of Socket.IO (``GuardedApp``):
the WebSocket handshake must carry ``Authorization: Bearer <token>`` (our extension sends it as
socket.io-client's ``extraHeaders``, which Node's client puts on the handshake), the Host must be
``127.0.0.1:<port>`` and no Origin but its own; WebSocket only (Engine.IO's long-polling posts
``text/plain`` bodies, which the rule refuses). It binds 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from mcpworld.core.listener import Guard, GuardedApp, new_token

log = logging.getLogger(__name__)

COMPLETION = "evaluate_on_completion"
READY = "start_success"  # PC-Canary's probes say this once they run inside the app


class EventSink:
    """``on_event(message)`` is called (on the sink's thread) for every app event but ``start_success``."""

    def __init__(self, on_event: Callable[[dict[str, Any]], None], hook_source: str = ""):
        import socketio
        import uvicorn

        self.token = new_token()
        self.hook_source = hook_source
        self._on_event = on_event
        self._sessions: list[str] = []
        self._ready = threading.Event()  # a probe said start_success
        self._completed = threading.Event()  # a probe answered evaluate
        self._sio = socketio.AsyncServer(
            async_mode="asgi", cors_allowed_origins=[], logger=False, engineio_logger=False, transports=["websocket"]
        )
        self._sio.on("connect", self._connect)
        self._sio.on("disconnect", self._disconnect)
        self._sio.on("send", self._send)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        app = GuardedApp(socketio.ASGIApp(self._sio), Guard(self.token))  # token, Host, Origin: before Socket.IO
        config = uvicorn.Config(app, log_level="warning", lifespan="off", ws="websockets-sansio", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._serve, name=f"event-sink-{self.port}", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """What a probe inside the app needs to find this sink (given to the desktop's programs)."""
        return {"MCPWORLD_SINK_URL": self.url, "MCPWORLD_SINK_TOKEN": self.token}

    def start(self) -> EventSink:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self._server.started:
            raise RuntimeError(f"the event sink did not start on 127.0.0.1:{self.port}")
        return self

    def _serve(self) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._server.serve(sockets=[self._sock]))
        pending = [t for t in asyncio.all_tasks(self._loop) if not t.done()]  # the sessions' pings and waits
        for task in pending:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.close()

    async def _connect(self, sid: str, environ: dict[str, Any], auth: Any = None) -> bool:
        self._sessions.append(sid)  # its handshake carried the token (GuardedApp refuses any other)
        if self.hook_source:  # once the connection is acknowledged: a client takes no event before that
            self._sio.start_background_task(self._sio.emit, "inject", self.hook_source, to=sid)
        return True

    async def _disconnect(self, sid: str, *_: Any) -> None:
        if sid in self._sessions:
            self._sessions.remove(sid)

    async def _send(self, sid: str, message: Any) -> None:
        if not isinstance(message, dict):
            message = {"event_type": "message", "message": message}
        kind = message.get("event_type")
        if kind == READY:
            self._ready.set()
            return
        try:
            self._on_event(message)
        except Exception:  # a consumer's bug must not take the sink down with it
            log.exception("event sink %s: an event could not be delivered", self.port)
        if kind == COMPLETION:
            self._completed.set()

    @property
    def connected(self) -> int:
        return len(self._sessions)

    def wait_ready(self, timeout_s: float) -> bool:
        """True once a probe has connected and said it runs (``start_success``)."""
        return self._ready.wait(timeout_s)

    def evaluate(self, timeout_s: float = 10.0) -> bool:
        """Ask every connected probe for the final state (``evaluate``); True once one answered with
        ``evaluate_on_completion`` (PC-Canary waits 10 s the same way)."""
        if not self._sessions or self._loop is None:
            return False
        self._completed.clear()
        for sid in list(self._sessions):
            asyncio.run_coroutine_threadsafe(self._sio.emit("evaluate", to=sid), self._loop).result(5)
        return self._completed.wait(timeout_s)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=5)
        self._sock.close()
