"""What the fake model servers share: a real HTTP server on 127.0.0.1 in a background thread that
answers each request with the next scripted reply and records what it was sent."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DONE_TEXT = "done"


def free_port() -> int:
    """A port nothing listens on (bound, then closed again)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ScriptedServer:
    """Base for the fakes; ``make_handler(self)`` builds the protocol's request handler class."""

    def __init__(
        self, script: list[dict[str, Any]] | None, model: str, make_handler: Callable[[Any], type[BaseHTTPRequestHandler]]
    ):
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

    def start(self):
        # A short poll interval keeps stop() (and so every test) fast.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self):
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


class ScriptedHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 plumbing both protocols use: JSON replies and chunked event streams that a script
    can delay (``delay_first_s``, ``chunk_delay_s``) or cut (``cut`` after N frames: the connection
    drops; with ``cut_clean`` the body ends properly but the reply is incomplete)."""

    disable_nagle_algorithm = True  # headers and body are separate writes: don't wait 40 ms between them
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def send_json(self, status: int, data: Any, extra: dict[str, str] | None = None) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (extra or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(payload)

    def send_stream(
        self, reply: dict[str, Any], frames: list[bytes], last: bytes = b"", content_type: str = "text/event-stream"
    ) -> None:
        """Stream ``frames`` (then ``last`` unless cut) as chunked SSE."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in (reply.get("headers") or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.flush()
        time.sleep(float(reply.get("delay_first_s") or 0))
        gap = float(reply.get("chunk_delay_s") or 0)
        cut = reply.get("cut")
        for i, frame in enumerate(frames):
            if cut is not None and i >= int(cut):
                if not reply.get("cut_clean"):
                    self.close_connection = True
                    return  # no terminating chunk: the client sees an incomplete body
                break
            if i and gap:
                time.sleep(gap)
            self.write_chunk(frame)
        else:
            if last:
                self.write_chunk(last)
        self.write_chunk(b"")  # terminating zero-length chunk

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
