"""``python -m mcpworld.evaluation.server --home DIR``: the /evaluate HTTP service.

``POST /evaluate`` with an OSWorld/WAA task JSON (optionally ``"final_action": "FAIL"``) grades the
environment this service is attached to (a home directory) and answers
``{success, score, actual, expected, metrics}``. Bad JSON or a bad task → 400 with the reason.
Binds 127.0.0.1 unless told otherwise: it runs shell getters, so never expose it.
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from mcpworld.core.errors import UserError
from mcpworld.evaluation.standalone import grade
from mcpworld.tasks.osworld import load_osworld

MAX_BODY = 5_000_000


def make_server(home: Path, host: str = "127.0.0.1", port: int = 0, threshold: float = 1.0) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path.rstrip("/") != "/evaluate":
                return self._reply(404, {"error": f"unknown path {self.path}; use POST /evaluate"})
            length = int(self.headers.get("Content-Length") or 0)
            if length <= 0 or length > MAX_BODY:
                return self._reply(400, {"error": f"body must be a task JSON of 1..{MAX_BODY} bytes"})
            try:
                data = json.loads(self.rfile.read(length))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                return self._reply(400, {"error": f"body is not valid JSON: {exc}"})
            if not isinstance(data, dict):
                return self._reply(400, {"error": "body must be a JSON object (an OSWorld/WAA task)"})
            final_action = data.pop("final_action", "DONE")
            try:
                task = load_osworld(Path.cwd() / "request.json", data)
                verdict = grade(task, home, final_action, threshold)
            except UserError as exc:
                return self._reply(400, {"error": str(exc)})
            self._reply(200, verdict)

        def _reply(self, status: int, body: dict[str, Any]) -> None:
            payload = json.dumps(body, default=str).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return ThreadingHTTPServer((host, port), Handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcpworld.evaluation.server", description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="the environment's home directory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--threshold", type=float, default=1.0)
    args = parser.parse_args(argv)
    if not args.home.is_dir():
        print(f"mcpworld.evaluation.server: error: --home {args.home} is not a directory", file=sys.stderr)
        return 2
    server = make_server(args.home, args.host, args.port, args.threshold)
    print(f"serving POST http://{args.host}:{server.server_address[1]}/evaluate for {args.home}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
