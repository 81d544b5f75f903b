"""What the fake model servers share: a real HTTP server on 127.0.0.1 in a background thread that
answers each request with the next scripted reply and records what it was sent."""

from __future__ import annotations

import socket
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

DONE_TEXT = "done"


def free_port() -> int:
    """A port nothing listens on (bound, then closed again)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ScriptedServer:
    """Base for the fakes; ``make_handler(self)`` builds the protocol's request handler class."""

    def __init__(self, script: list[dict[str, Any]] | None, model: str,
                 make_handler: Callable[[Any], type[BaseHTTPRequestHandler]]):
        self.model = model
        self.script: deque[dict[str, Any]] = deque(script or [])
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(self))
        self._httpd.daemon_threads = True
        self.port: int = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread: threading.Thread | None = None

    def start(self):  # noqa: ANN201 (returns the subclass)
        # A short poll interval keeps stop() (and so every test) fast.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self):  # noqa: ANN204
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def push(self, *replies: dict[str, Any]) -> None:
        with self._lock:
            self.script.extend(replies)

    def _record(self, body: dict[str, Any], headers: dict[str, str], consume: bool = True) -> dict[str, Any]:
        """Log the request; the next scripted reply (text "done" once the script has run out)."""
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if not consume:
                return {}
            return self.script.popleft() if self.script else {"text": DONE_TEXT}
