"""Every HTTP listener mcpworld starts, served here for the security tests (docs/security.md): each
with its token, and how to send it a request that passes the rule."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

TOKEN = "listener-token-for-the-security-tests"
FOREIGN_ORIGIN = "http://attacker.example"
# what an MCP client sends first (the proxy answers it from its cassette's header)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@dataclass
class Served:
    """One listener: where it is, and the request it answers when every check passes."""

    name: str
    url: str  # http://127.0.0.1:PORT
    method: str
    path: str
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)  # what its own clients add (the MCP Accept)
    token: str = TOKEN

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def send(
        self,
        *,
        token: str | None = "own",
        content_type: str | None = "application/json",
        origin: str | None = None,
        host: str | None = None,
        method: str | None = None,
        body: Any = "default",
        extra: dict[str, str] | None = None,
    ) -> httpx.Response:
        """The listener's own request, with one thing changed."""
        headers = dict(self.headers)
        token = self.token if token == "own" else token
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        if origin is not None:
            headers["Origin"] = origin
        if host is not None:
            headers["Host"] = host
        payload = self.body if body == "default" else body
        content = json.dumps(payload).encode() if payload is not None else None
        if content is not None and content_type is not None:
            headers["Content-Type"] = content_type
        headers.update(extra or {})
        return httpx.request(method or self.method, self.url + self.path, content=content, headers=headers, timeout=30)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _thread(server: Any) -> str:
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def _stop(server: Any) -> None:
    server.shutdown()
    server.server_close()


TASK = {
    "id": "count",
    "instruction": "Write 3 into count.txt",
    "config": [],
    "evaluator": {
        "func": "exact_match",
        "result": {"type": "vm_command_line", "command": "cat /home/user/count.txt"},
        "expected": {"type": "rule", "rules": {"expected": "3"}},
    },
}


@pytest.fixture(scope="module")
def home_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    from mcpworld.evaluation.server import make_server

    tmp_path = tmp_path_factory.mktemp("home-server")
    (tmp_path / "home").mkdir()
    server = make_server(tmp_path / "home", TOKEN)
    yield Served("evaluation.server --home", _thread(server), "POST", "/evaluate", TASK)
    _stop(server)


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    from mcpworld.env.local.home import HomeEnvironment
    from mcpworld.evaluation.live import LiveDesktop
    from mcpworld.evaluation.server import make_live_server

    tmp_path = tmp_path_factory.mktemp("live-server")
    (tmp_path / "home").mkdir()
    env = HomeEnvironment(tmp_path / "home")
    server = make_live_server(LiveDesktop(env, tmp_path / "served"), TOKEN)
    yield Served("evaluation.server --live", _thread(server), "POST", "/evaluate", TASK)
    _stop(server)
    env.close()


class StubDesktop:
    """What the desktop service's /health reads, without a desktop (or root's accounts)."""

    env = None
    lock = threading.Lock()

    def info(self) -> dict[str, Any]:
        return {"uid": os.getuid(), "gid": os.getgid(), "user": None, "pid": os.getpid()}


@pytest.fixture(scope="module")
def desktop_service() -> Iterator[Served]:
    from http.server import ThreadingHTTPServer

    from mcpworld.env.docker.service import make_handler

    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(StubDesktop(), TOKEN))  # type: ignore[arg-type]
    server.daemon_threads = True
    yield Served("env.docker.service", _thread(server), "POST", "/health", {})
    _stop(server)


class NoGpus:
    def read(self) -> list:
        return []

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def gpu_agent() -> Iterator[Served]:
    from mcpworld.telemetry.gpu_agent import serve

    server = serve(NoGpus(), TOKEN, "127.0.0.1", 0)  # type: ignore[arg-type]
    yield Served("telemetry.gpu_agent", f"http://127.0.0.1:{server.server_port}", "GET", "/metrics")
    _stop(server)


@pytest.fixture(scope="module")
def event_sink() -> Iterator[Served]:
    from mcpworld.probes.sink import EventSink

    sink = EventSink(lambda message: None).start()  # its token is its own, fresh per episode
    # the Engine.IO handshake's first request (the sink serves WebSocket only, no long-polling)
    yield Served("probes.sink", sink.url, "GET", "/socket.io/?EIO=4&transport=websocket", token=sink.token)
    sink.stop()


@pytest.fixture(scope="module")
def mcp_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("proxy")
    cassette = folder / "empty.jsonl"
    cassette.write_text(json.dumps({"type": "header", "server": {"name": "replayed", "version": "1"}}) + "\n")
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpworld.mcp.proxy",
            "--mode",
            "replay",
            "--cassette",
            str(cassette),
            "--serve",
            "http",
            "--port",
            str(port),
            "--token-file",
            str(folder / "token"),
        ],
        env=dict(os.environ, MCPWORLD_PROXY_TOKEN=TOKEN),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.1)
    yield Served(
        "mcp.proxy --serve http",
        f"http://127.0.0.1:{port}",
        "POST",
        "/mcp",
        INITIALIZE,
        headers={"Accept": "application/json, text/event-stream"},
    )
    proc.terminate()
    proc.wait(timeout=10)


LISTENERS = ["home_server", "live_server", "desktop_service", "gpu_agent", "event_sink", "mcp_proxy"]
# (each served once per test module: every request below is refused or read-only, so none changes it)


@pytest.fixture(params=LISTENERS)
def listener(request: pytest.FixtureRequest) -> Served:
    return request.getfixturevalue(request.param)
