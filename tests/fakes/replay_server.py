"""A real local HTTP server that answers with recorded bodies byte for byte: real servers' wire
formats (SSE streams, JSON bodies, error envelopes) replayed to the real providers.

Usage::

    with ReplayServer([Recorded(b"...429 body...", status=429, headers={"retry-after": "0"}),
                       Recorded(sse_bytes)]) as server:
        provider = OpenAICompatProvider(base_url=server.base_url, model="m")
        ...
        server.requests   # every POST body received, parsed JSON, in order
        server.paths      # the matching request paths

Each POST consumes the next recorded answer; the last one is repeated when the list runs out (so
a retried failure fails again). ``chunk`` splits the body into HTTP chunks of that many bytes, so
an SSE line, a ``<think>`` tag or a multi-byte character can arrive in pieces, as over a network.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.scripted_server import ScriptedHandler, ScriptedServer


@dataclass
class Recorded:
    """One recorded answer: the body, its status and content type, extra headers, transport chunking."""

    body: bytes
    status: int = 200
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)
    chunk: int = 0  # 0: the whole body in one HTTP chunk


class ReplayServer(ScriptedServer):
    """Replays ``Recorded`` answers on 127.0.0.1 (random port) in a background thread."""

    def __init__(self, answers: list[Recorded]):
        if not answers:
            raise ValueError("ReplayServer needs at least one recorded answer")
        self.answers = list(answers)
        self.paths: list[str] = []
        super().__init__([], "replay", _make_handler)

    def next_answer(self, body: dict[str, Any], headers: dict[str, str], path: str) -> Recorded:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.paths.append(path)
            return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def _make_handler(server: ReplayServer) -> type[BaseHTTPRequestHandler]:
    class Handler(ScriptedHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_raw": raw.decode(errors="replace")}
            answer = server.next_answer(body, {k.lower(): v for k, v in self.headers.items()}, self.path)
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")  # one answer per connection: no idle keep-alive reads
                self.close_connection = True
                for k, v in answer.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                size = answer.chunk or max(1, len(answer.body))
                for i in range(0, len(answer.body), size):
                    self.write_chunk(answer.body[i : i + size])
                self.write_chunk(b"")
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler
