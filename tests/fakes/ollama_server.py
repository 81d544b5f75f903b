"""A real local HTTP server that speaks Ollama's native model-management API and, through
``FakeOpenAIServer``, its OpenAI-compatible ``/v1`` chat API.

Usage::

    with FakeOllamaServer(models=[tag_entry("qwen3-vl:32b")], loaded=[ps_entry("llama3:latest")],
                          pull_script=None, chat_script=[{"text": "hi"}], context_length=8192) as server:
        provider = OllamaProvider(base_url=server.base_url, model="qwen3-vl:32b")
        ...
        server.calls      # every request: Call(method, path, body) in order, chat included
        server.tags       # what /api/tags lists now; server.loaded: what /api/ps lists now

Routes:

- ``GET /api/tags``: ``{"models": tags}``. ``GET /api/ps``: ``{"models": loaded}``.
  ``GET /api/version``: ``{"version": ...}``.
- ``POST /api/pull``: streams ``pull_script`` (default: a realistic manifest/download/success run) as
  NDJSON, one flushed line at a time. A run that ends without an ``{"error"}`` line adds the model
  to the tags; a line ``{"status": 500, "error": ...}`` answers that HTTP error instead of streaming.
- ``POST /api/generate`` (load/unload only, as a prompt-less call is): ``keep_alive`` 0 removes the
  model from ``loaded``; anything else loads it (a ps entry with ``size_vram`` and, when
  ``context_length`` is given, ``context_length``). An unknown model is a 404 like Ollama's.
- ``POST /api/show``: the model's ``details``, ``model_info`` (``<family>.context_length``: what it was
  trained for, ``trained_context``), ``capabilities`` and ``parameters`` (the Modelfile's lines: ``num_ctx``
  when given); an unknown model is a 404.
- ``/v1/chat/completions`` and ``/v1/models``: ``FakeOpenAIServer``'s own handler, unchanged, driven
  by ``chat_script``.
"""

from __future__ import annotations

import io
import json
import time
from typing import Any, NamedTuple

from tests.fakes.openai_server import FakeOpenAIServer

VERSION = "0.12.0"
DIGEST = "sha256:" + "ab" * 32


class Call(NamedTuple):
    method: str
    path: str
    body: Any  # parsed JSON, or None for a request without a body


def tag_entry(
    name: str,
    *,
    digest: str = DIGEST,
    size: int = 20_000_000_000,
    quantization: str = "Q4_K_M",
    parameter_size: str = "33.4B",
    family: str = "qwen3vl",
    **extra: Any,
) -> dict[str, Any]:
    """An ``/api/tags`` entry shaped like a real Ollama's."""
    return {
        "name": name,
        "model": name,
        "modified_at": "2025-10-01T12:00:00Z",
        "size": size,
        "digest": digest,
        "details": {
            "parent_model": "",
            "format": "gguf",
            "family": family,
            "families": [family],
            "parameter_size": parameter_size,
            "quantization_level": quantization,
        },
        **extra,
    }


def ps_entry(name: str, *, size_vram: int = 24_000_000_000, context_length: int | None = None, **tag: Any) -> dict[str, Any]:
    """An ``/api/ps`` entry; ``tag`` is forwarded to ``tag_entry`` for the shared fields."""
    t = tag_entry(name, **tag)
    entry = {
        "name": name,
        "model": name,
        "size": t["size"] + 2_000_000_000,
        "digest": t["digest"],
        "details": t["details"],
        "expires_at": "2099-01-01T00:00:00Z",
        "size_vram": size_vram,
    }
    if context_length is not None:
        entry["context_length"] = context_length
    return entry


def default_pull(digest: str = DIGEST) -> list[dict[str, Any]]:
    total = 4_000_000
    return [
        {"status": "pulling manifest"},
        *(
            {"status": f"pulling {digest[7:19]}", "digest": digest, "total": total, "completed": c}
            for c in (0, total // 2, total)
        ),
        {"status": "verifying sha256 digest"},
        {"status": "writing manifest"},
        {"status": "success"},
    ]


def latest(name: str) -> str:
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


class FakeOllamaServer(FakeOpenAIServer):
    """``FakeOpenAIServer`` whose handler also answers Ollama's ``/api/*`` routes."""

    def __init__(
        self,
        models: list[dict[str, Any]] | None = None,
        loaded: list[dict[str, Any]] | None = None,
        pull_script: list[dict[str, Any]] | None = None,
        chat_script: list[dict[str, Any]] | None = None,
        context_length: int | None = None,
        *,
        model: str | None = None,
        size_vram: int = 24_000_000_000,
        num_ctx: int | None = None,
        trained_context: int = 262_144,
    ):
        tags = [dict(m) for m in models or []]
        super().__init__(chat_script, model=model or (tags[0]["name"] if tags else "fake-model"))
        self.tags = tags
        self.loaded = [dict(m) for m in loaded or []]
        self.pull_script = pull_script
        self.context_length = context_length
        self.size_vram = size_vram
        self.num_ctx = num_ctx
        self.trained_context = trained_context
        self.calls: list[Call] = []
        self.url = f"http://127.0.0.1:{self.port}"
        # Compose: the OpenAI handler serves /v1; ours intercepts /api first.
        self._httpd.RequestHandlerClass = _make_handler(self, self._httpd.RequestHandlerClass)

    def paths(self, method: str | None = None) -> list[str]:
        return [c.path for c in self.calls if method is None or c.method == method]

    def bodies(self, path: str) -> list[Any]:
        return [c.body for c in self.calls if c.path == path]

    def _find(self, models: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
        return next((m for m in models if latest(m["name"]) == latest(name)), None)

    def _show(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        name = str(body.get("model") or body.get("name") or "")
        with self._lock:
            tag = self._find(self.tags, name)
        if tag is None:
            return 404, {"error": f"model '{name}' not found"}
        details = tag.get("details") or {}
        family = details.get("family") or "llama"
        lines = [f"num_ctx                        {self.num_ctx}"] if self.num_ctx else []
        lines.append('stop                           "<|im_end|>"')
        return 200, {
            "license": "",
            "modelfile": f"FROM {tag['name']}\n",
            "parameters": "\n".join(lines),
            "template": "{{ .Prompt }}",
            "details": details,
            "model_info": {
                "general.architecture": family,
                "general.parameter_count": 8_000_000_000,
                f"{family}.context_length": self.trained_context,
            },
            "capabilities": ["completion", "vision", "tools"],
            "modified_at": tag.get("modified_at"),
        }

    def _generate(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        name = str(body.get("model") or "")
        with self._lock:
            tag = self._find(self.tags, name)
            if tag is None:
                return 404, {"error": f"model '{name}' not found"}
            self.loaded = [m for m in self.loaded if latest(m["name"]) != latest(tag["name"])]
            unload = body.get("keep_alive") in (0, "0", "0s")
            if not unload:
                entry = ps_entry(tag["name"], size_vram=self.size_vram, context_length=self.context_length)
                entry.update(digest=tag.get("digest", entry["digest"]), details=tag.get("details", entry["details"]))
                self.loaded.append(entry)
        reply = {
            "model": tag["name"],
            "created_at": "2025-10-01T12:00:00Z",
            "response": "",
            "done": True,
            "done_reason": "unload" if unload else "load",
        }
        return 200, reply


def _make_handler(server: FakeOllamaServer, base: type) -> type:
    class Handler(base):  # type: ignore[misc, valid-type]
        def do_GET(self) -> None:
            self._log(None)
            route = self.path.rstrip("/")
            with server._lock:
                answers = {
                    "/api/tags": {"models": list(server.tags)},
                    "/api/ps": {"models": list(server.loaded)},
                    "/api/version": {"version": VERSION},
                }
            if route in answers:
                self.send_json(200, answers[route])
            elif route.startswith("/api/"):
                self.send_json(404, {"error": f"no route {self.path}"})
            else:
                super().do_GET()

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = None
            self._log(body)
            route = self.path.rstrip("/")
            if not route.startswith("/api/"):
                self.rfile = io.BytesIO(raw)  # hand the body, unread, to FakeOpenAIServer's handler
                super().do_POST()
            elif body is None:
                self.send_json(400, {"error": "invalid JSON body"})
            elif route == "/api/generate":
                self.send_json(*server._generate(body))
            elif route == "/api/show":
                self.send_json(*server._show(body))
            elif route == "/api/pull":
                self._pull(str(body.get("model") or body.get("name") or ""))
            else:
                self.send_json(404, {"error": f"no route {self.path}"})

        def _log(self, body: Any) -> None:
            with server._lock:
                server.calls.append(Call(self.command, self.path, body))

        def _pull(self, name: str) -> None:
            script = server.pull_script if server.pull_script is not None else default_pull()
            if script and isinstance(script[0].get("status"), int):
                self.send_json(script[0]["status"], {"error": script[0].get("error", "scripted error")})
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            failed = False
            try:
                for event in script:
                    failed = failed or "error" in event
                    self.write_chunk(json.dumps(event).encode() + b"\n")
                    time.sleep(0.001)  # separate network writes, so the client really reads a stream
                self.write_chunk(b"")
            except (BrokenPipeError, ConnectionResetError):
                return
            if not failed:
                with server._lock:
                    if server._find(server.tags, name) is None:
                        server.tags.append(tag_entry(latest(name)))

    return Handler
