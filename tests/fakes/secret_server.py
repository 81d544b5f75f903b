"""A host service that answers every GET with a secret, as a shared MLflow, Ollama or model server
would: the isolation tests read it from inside a desktop and must find nothing. It answers 200, so an
error status can never be mistaken for a fence (the tests' earlier 501 counted as "blocked")."""

from __future__ import annotations

import http.server
import secrets
import threading


class SecretServer:
    def __init__(self, host: str = "127.0.0.1", secret: str | None = None) -> None:
        self.secret = secret or secrets.token_hex(8)
        self.hits: list[str] = []
        body, hits = self.secret.encode(), self.hits

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
