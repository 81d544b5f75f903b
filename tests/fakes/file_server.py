"""A file host on 127.0.0.1 that speaks what real ones do for downloads (Content-Length, ETag,
Range → 206), with faults a test can script: a status for the next N requests, or a connection
that drops after some bytes (as a flaky CDN does)."""

from __future__ import annotations

import hashlib
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class FileServer:
    def __init__(self, files: dict[str, bytes] | None = None):
        self.files: dict[str, bytes] = dict(files or {})  # URL path ("/a/b.xlsx") -> content
        self.statuses: dict[str, list[int]] = defaultdict(list)  # path -> statuses for the next requests
        self.cut_after: dict[str, int] = {}  # path -> bytes sent before the next response drops
        self.requests: list[tuple[str, str | None]] = []  # (path, Range header)
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                with server._lock:
                    server.requests.append((path, self.headers.get("Range")))
                    status = server.statuses[path].pop(0) if server.statuses[path] else None
                    cut = server.cut_after.pop(path, None)
                body = server.files.get(path)
                if status is None and body is None:
                    status = 404
                if status is not None:
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                start = 0
                ranged = self.headers.get("Range")
                if ranged and ranged.startswith("bytes="):
                    start = int(ranged[6:].split("-")[0])
                    if start >= len(body):
                        self.send_response(416)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                self.send_response(206 if start else 200)
                self.send_header("Content-Length", str(len(body) - start))
                self.send_header("ETag", hashlib.md5(body).hexdigest())
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.end_headers()
                self.wfile.write(body[start : start + cut] if cut is not None else body[start:])
                if cut is not None:
                    self.wfile.flush()
                    self.close_connection = True

        return Handler

    def count(self, path: str) -> int:
        return sum(1 for p, _ in self.requests if p == path)

    def __enter__(self) -> FileServer:
        threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@contextmanager
def serve_folder(root: Path) -> Iterator[str]:
    """A plain static web site of ``root`` on 127.0.0.1 (its base URL), quiet, for pages a browser loads."""
    handler = partial(SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
