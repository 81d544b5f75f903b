"""A fake Klavis sandbox API: a real HTTP server on 127.0.0.1 speaking the documented
``/local-sandbox`` shape, with in-memory sandboxes whose workspaces are temp folders, its own
"signed" storage URLs (which, like real ones, refuse an Authorization header), the individual
sandboxes of ``/sandbox/{server}`` (acquire, details with ``auth_data``/``metadata``, initialize,
dump, release; a pool that can run dry), scripted failures and a log of every request.
``host_mcp(name, hang=…)`` serves a hosted MCP server for ``name`` (the SDK's, over streamable
HTTP) whose ``echo`` answers and whose ``hang`` tool never does."""

from __future__ import annotations

import json
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcpworld.core.archives import pack, safe_extract
from tests.fakes.scripted_server import ScriptedHandler, ScriptedServer, free_port

OFFERED = {
    "filesystem",
    "git",
    "terminal",
    "desktop-commander",
    "arxiv",
    "excel",
    "word",
    "powerpoint",
    "code-executor",
    "code-runner",
    "pdf-tools",
    "google_cloud",
    "poste_email_toolathlon",
    "canvas",
    "localmemory",
    "playwright",
}
BENCHMARKS = {"MCP_Atlas", "Toolathlon", "MCP_Mark"}
INDIVIDUAL = {
    "github",
    "notion",
    "google_sheets",
    "snowflake",
    "woocommerce",
    "google_calendar",
    "google_forms",
    "huggingface",
    "weights_and_biases",
    "arxiv_latex",
    "scholarly",
    "yahoo_finance",
    "fetch",
    "localmemory",
}
# what each individual sandbox's details hold, shaped as the runner reads them
ACCOUNTS: dict[str, dict[str, dict[str, str]]] = {
    "github": {"auth_data": {"access_token": "ghp_fakeTOKEN0123456789"}, "metadata": {"login": "klavis-test-1"}},
    "woocommerce": {
        "auth_data": {
            "consumer_key": "ck_fake_0001",
            "consumer_secret": "cs_fake_0001",
            "site_url": "http://127.0.0.1:1/store1",
            "admin_username": "admin",
            "admin_password": "pw-fake-0001",
        },
        "metadata": {},
    },
    "snowflake": {
        "auth_data": {
            "SNOWFLAKE_ACCOUNT": "fake-acct",
            "SNOWFLAKE_WAREHOUSE": "COMPUTE_WH",
            "SNOWFLAKE_ROLE": "ACCOUNTADMIN",
            "SNOWFLAKE_USER": "fake_user",
            "SNOWFLAKE_PRIVATE_KEY": "-----BEGIN PRIVATE KEY-----fake",
            "SNOWFLAKE_DATABASE": "DB",
            "SNOWFLAKE_SCHEMA": "PUBLIC",
        },
        "metadata": {},
    },
    "notion": {
        "auth_data": {},
        "metadata": {
            "toolathon_notion_integration_key": "ntn_fake_key_01",
            "toolathon_notion_integration_key_eval": "ntn_fake_eval_01",
            "toolathon_source_notion_page_url": "https://notion.so/src",
            "toolathon_eval_notion_page_url": "https://notion.so/eval",
        },
    },
}

# a hosted MCP server: `echo` answers, `hang` never does (until the server is stopped)
HOSTED_MCP = """
import asyncio, sys
from mcp.server.mcpserver import MCPServer

server = MCPServer(sys.argv[2])

@server.tool(name="echo")
def echo(text: str) -> str:
    \"\"\"Say the text back.\"\"\"
    return text

@server.tool(name="hang")
async def hang(text: str) -> str:
    \"\"\"Never answer.\"\"\"
    await asyncio.Event().wait()
    return text

asyncio.run(server.run_streamable_http_async(port=int(sys.argv[1])))
"""


class FakeKlavisServer(ScriptedServer):
    """In-memory Klavis. ``urls`` (Klavis name -> URL, ``{id}`` replaced by the sandbox id) overrides
    the default ``http://127.0.0.1:<port>/<name>/mcp/?local_sandbox_id=<id>``; ``server_status``
    (Klavis name -> status) scripts e.g. ``"error"`` for one server."""

    def __init__(self, token: str = "test-key", urls: dict[str, str] | None = None, server_status: dict[str, str] | None = None):
        super().__init__(None, "klavis", _make_handler)
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.token = token
        self.urls = dict(urls or {})
        self.server_status = dict(server_status or {})
        self.calls: list[dict[str, Any]] = []  # method, path, query, headers (lower-case), json
        self.sandboxes: dict[str, dict[str, Any]] = {}
        self.uploads: dict[str, bytes] = {}
        self.releases = 0
        self.dump_override: bytes | None = None  # served instead of the packed workspace
        self.signature = secrets.token_hex(8)  # the "signature" of the signed storage URLs
        self._failures: list[tuple[int, str | None]] = []
        self._root = Path(tempfile.mkdtemp(prefix="fake-klavis-"))
        self.accounts = {k: {s: dict(v) for s, v in d.items()} for k, d in ACCOUNTS.items()}
        self.individual: dict[str, dict[str, Any]] = {}  # sandbox id -> server, status, initialized data
        self.dry: set[str] = set()  # individual servers with no idle sandbox left (409, as the real pool)
        self.fixed_workspace: Path | None = None
        self.offered_individual = set(INDIVIDUAL)
        self._hosted: list[subprocess.Popen] = []

    def host_mcp(self, name: str) -> str:
        """A hosted MCP server for Klavis's server ``name`` (its sandboxes' URL from now on): tools
        ``echo`` and ``hang`` (a call that never returns). Stopped with the fake."""
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-c", HOSTED_MCP, str(port), name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self._hosted.append(proc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None:
                raise RuntimeError(f"the hosted MCP server for {name} exited with code {proc.returncode}")
            time.sleep(0.05)
        self.urls[name] = f"http://127.0.0.1:{port}/mcp"
        return self.urls[name]

    def held(self) -> list[str]:
        """Ids of every sandbox (local or individual) acquired and not released."""
        return sorted(
            [sid for sid, box in self.sandboxes.items() if box["status"] != "deleted"]
            + [sid for sid, box in self.individual.items() if box["status"] == "occupied"]
        )

    def stop(self) -> None:
        super().stop()
        for proc in self._hosted:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(self._root, ignore_errors=True)

    def offer_individual(self, *names: str) -> None:
        """Also serve individual sandboxes of ``names`` (beyond the documented ones)."""
        self.offered_individual |= set(names)

    def fail_next(self, status: int = 503, times: int = 1, path: str | None = None) -> None:
        """The next ``times`` requests (whose path starts with ``path``, if given) get ``status``."""
        with self._lock:
            self._failures.extend([(status, path)] * times)

    def workspace(self, sandbox_id: str) -> Path:
        """The sandbox's workspace folder (what ``initialize`` extracted into); ``fixed_workspace``,
        when set, is every sandbox's (a test's MCP server can be rooted there before any exists)."""
        return self.fixed_workspace if self.fixed_workspace is not None else self._root / sandbox_id

    def api_calls(self, method: str | None = None, prefix: str = "/local-sandbox") -> list[dict[str, Any]]:
        return [c for c in self.calls if c["path"].startswith(prefix) and method in (None, c["method"])]

    def _take_failure(self, path: str) -> int | None:
        with self._lock:
            for i, (status, prefix) in enumerate(self._failures):
                if prefix is None or path.startswith(prefix):
                    del self._failures[i]
                    return status
        return None


def _make_handler(server: FakeKlavisServer) -> type[BaseHTTPRequestHandler]:
    class Handler(ScriptedHandler):
        def do_GET(self) -> None:
            self.route("GET")

        def do_POST(self) -> None:
            self.route("POST")

        def do_PUT(self) -> None:
            self.route("PUT")

        def do_DELETE(self) -> None:
            self.route("DELETE")

        def route(self, method: str) -> None:
            parts = urlsplit(self.path)
            path, query = parts.path, parse_qs(parts.query)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            body: Any = None
            if raw and "json" in headers.get("content-type", ""):
                body = json.loads(raw)
            with server._lock:
                server.calls.append({"method": method, "path": path, "query": query, "headers": headers, "json": body})
            failure = server._take_failure(path)
            if failure is not None:
                return self.send_json(failure, {"detail": f"scripted failure {failure}"})
            if path.startswith("/signed/"):
                return self.storage(method, path, query, headers, raw)
            if headers.get("authorization") != f"Bearer {server.token}":
                return self.send_json(401, {"detail": "Invalid API key"})
            seg = [p for p in path.split("/") if p]
            if seg[:1] == ["sandbox"] and len(seg) >= 2:
                return self.individual(method, seg[1], seg[2:], body)
            if seg[:1] != ["local-sandbox"]:
                return self.send_json(404, {"detail": "not found"})
            if method == "POST" and len(seg) == 1:
                return self.create(body or {})
            box = server.sandboxes.get(seg[1]) if len(seg) > 1 else None
            if box is None or box["status"] == "deleted":
                return self.send_json(404, {"detail": "sandbox not found"})
            sid = seg[1]
            action = (method, seg[2] if len(seg) > 2 else "")
            if action == ("GET", ""):
                return self.send_json(200, {k: box[k] for k in ("created_at", "servers", "status")})
            if action == ("DELETE", ""):
                box["status"] = "deleted"
                server.releases += 1
                return self.send_json(200, {"status": "deleted"})
            if action == ("POST", "upload-url"):
                return self.send_json(200, {"upload_url": self.signed("upload", sid), "expires_in_minutes": 15})
            if action == ("POST", "initialize"):
                if sid not in server.uploads:
                    return self.send_json(400, {"detail": "nothing uploaded"})
                safe_extract(server.uploads[sid], server.workspace(sid), label="upload")
                return self.send_json(200, {"sandbox_id": sid, "status": "idle", "message": "initialized"})
            if action == ("GET", "dump"):
                return self.send_json(200, {"download_url": self.signed("download", sid), "expires_in_minutes": 15})
            return self.send_json(404, {"detail": "not found"})

        def create(self, body: dict[str, Any]) -> None:
            names = body.get("server_names")
            bad = [n for n in names or [] if n not in OFFERED] if isinstance(names, list) else ["?"]
            if not names or bad or body.get("benchmark", "Toolathlon") not in BENCHMARKS:
                return self.send_json(422, {"detail": f"invalid request: {bad or body}"})
            sid = secrets.token_hex(8)
            servers = []
            for name in names:
                url = server.urls.get(name, f"http://127.0.0.1:{server.port}/{name}/mcp/?local_sandbox_id={{id}}")
                servers.append(
                    {
                        "id": secrets.token_hex(4),
                        "server_name": name,
                        "mcp_server_url": url.replace("{id}", sid),
                        "status": server.server_status.get(name, "idle"),
                        "benchmark": body.get("benchmark"),
                        "metadata": {},
                        "auth_data": None,
                        "tags": [],
                    }
                )
            server.sandboxes[sid] = {
                "created_at": datetime.now(UTC).isoformat(),
                "servers": servers,
                "status": "idle",
                "ttl_seconds": body.get("ttl_seconds"),
            }
            server.workspace(sid).mkdir(parents=True, exist_ok=True)
            self.send_json(
                200,
                {
                    "local_sandbox_id": sid,
                    "servers": servers,
                    "status": "idle",
                    "benchmark": body.get("benchmark"),
                    "message": "created",
                },
            )

        def individual(self, method: str, name: str, rest: list[str], body: Any) -> None:
            """``/sandbox/{name}[/{id}[/initialize|/dump|/reset]]``, as Klavis's SDK calls them."""
            if name not in server.offered_individual:
                return self.send_json(422, {"detail": f"unknown sandbox server {name!r}"})
            if method == "POST" and not rest:
                if name in server.dry:
                    return self.send_json(409, {"detail": f"no idle {name} sandbox available"})
                if (body or {}).get("benchmark", "Toolathlon") not in BENCHMARKS:
                    return self.send_json(422, {"detail": f"invalid benchmark: {body}"})
                sid = secrets.token_hex(8)
                url = server.urls.get(name, f"http://127.0.0.1:{server.port}/{name}/mcp/?sandbox_id={{id}}")
                server.individual[sid] = {
                    "server": name,
                    "status": "occupied",
                    "initialized": None,
                    "url": url.replace("{id}", sid),
                    "request": body,
                }
                return self.send_json(
                    200,
                    {
                        "sandbox_id": sid,
                        "server_urls": {name: url.replace("{id}", sid)},
                        "server_name": name,
                        "status": "occupied",
                        "message": "acquired",
                    },
                )
            box = server.individual.get(rest[0]) if rest else None
            if box is None or box["server"] != name or box["status"] != "occupied":
                return self.send_json(404, {"detail": "sandbox not found or not occupied"})
            sid, action = rest[0], (method, rest[1] if len(rest) > 1 else "")
            if action == ("GET", ""):
                account = server.accounts.get(name, {})
                return self.send_json(
                    200,
                    {
                        "sandbox_id": sid,
                        "server_url": box["url"],
                        "server_name": name,
                        "status": "occupied",
                        "updated_at": datetime.now(UTC).isoformat(),
                        "auth_data": account.get("auth_data"),
                        "metadata": account.get("metadata"),
                    },
                )
            if action == ("DELETE", ""):
                box["status"] = "idle"
                server.releases += 1
                return self.send_json(200, {"sandbox_id": sid, "status": "idle", "message": "released"})
            if action == ("POST", "initialize"):
                box["initialized"] = body
                return self.send_json(
                    200,
                    {
                        "sandbox_id": sid,
                        "status": "occupied",
                        "message": "initialized",
                        "records_created": {k: len(v) if isinstance(v, list) else 1 for k, v in (body or {}).items()},
                    },
                )
            if action == ("GET", "dump"):
                return self.send_json(
                    200,
                    {
                        "sandbox_id": sid,
                        "server_name": name,
                        "dumped_at": datetime.now(UTC).isoformat(),
                        "data": box["initialized"] or {},
                    },
                )
            return self.send_json(404, {"detail": "not found"})

        def signed(self, kind: str, sid: str) -> str:
            return f"{server.base_url}/signed/{kind}/{sid}?X-Goog-Signature={server.signature}"

        def storage(self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes) -> None:
            """Signed-URL storage: an Authorization header makes a real bucket refuse the request."""
            if "authorization" in headers:
                return self.send_json(400, {"error": "Authorization header not allowed with a signed URL"})
            if query.get("X-Goog-Signature") != [server.signature]:
                return self.send_json(403, {"error": "SignatureDoesNotMatch"})
            kind, _, sid = path.removeprefix("/signed/").partition("/")
            if kind == "upload" and method == "PUT":
                server.uploads[sid] = raw
                return self.send_json(200, {})
            if kind == "download" and method == "GET":
                data = server.dump_override if server.dump_override is not None else pack(server.workspace(sid))
                self.send_response(200)
                self.send_header("Content-Type", "application/gzip")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return None
            return self.send_json(405, {"error": "method not allowed"})

    return Handler
