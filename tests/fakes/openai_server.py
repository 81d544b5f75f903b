"""A real local HTTP server that speaks the OpenAI chat-completions protocol, driven by a script.

Tests talk to it over a socket, so providers are exercised exactly as against vLLM/Ollama/OpenAI.

Usage::

    with FakeOpenAIServer([
        {"text": "Let me click."},
        {"tool_calls": [{"name": "click", "arguments": {"x": 1, "y": 2}}]},
        {"status": 500},                       # an error reply instead of a completion
    ]) as server:
        provider = OpenAICompatProvider(base_url=server.base_url, model="fake-model")
        ...
        server.requests   # every POST body received, parsed JSON, in order
        server.headers    # the matching request headers (dict, lower-case names)

Each scripted reply is a dict; every key is optional:

- ``text``: assistant text (streamed over several chunks).
- ``tool_calls``: ``[{"name": str, "arguments": dict, "id": str (optional)}]``; the arguments JSON
  is split over several chunks, like real servers do. A ``str`` is sent verbatim (malformed JSON).
- ``function_call``: ``{"name": str, "arguments": dict | str}``, the legacy single-call field: streamed
  as ``delta.function_call`` (the name first, then the arguments in pieces), or ``message.function_call``.
- ``finish_reason``: defaults to ``"tool_calls"`` when there are tool calls, ``"function_call"`` for a
  legacy ``function_call``, else ``"stop"``.
- ``status``: return this HTTP error code instead (body ``{"error": {"message": ...}}``);
  ``error`` sets the message, ``headers`` adds response headers (e.g. ``Retry-After``).
- ``delay_first_s``: sleep after the response headers, before the first chunk.
- ``chunk_delay_s``: sleep between chunks.
- ``usage``: ``False`` omits the usage chunk; a dict ``{"prompt_tokens", "completion_tokens"}``
  overrides the default counts (chars/4 of the request and of the output); ``prompt_tokens_details``
  (``{"cached_tokens": N}``, OpenAI's prompt-cache hits) is passed through.
- ``ignore_stream``: answer plain JSON even when the request asked to stream.
- ``cut``: stop streaming after this many chunks and drop the connection; with ``cut_clean`` the
  body ends properly but without the finish chunk and ``[DONE]`` (a server that died mid-reply).

Each POST consumes one scripted reply; when the script runs out the reply is the text ``"done"``.
``push(*replies)`` appends more. Streaming follows the request's ``stream`` flag; the usage chunk
(empty ``choices``) is sent only with ``stream_options.include_usage``.

What the server says it serves follows ``flavour``, as each real server answers:

- ``GET /v1/models`` lists ``model`` (and ``GET /v1/models/{id}`` describes it). ``openai``: id,
  ``created``, ``owned_by``. ``vllm``: also ``root`` (the weights loaded; default the model),
  ``parent`` and ``max_model_len`` (``served_name`` lists it under another name, as
  ``--served-model-name`` does), and ``GET /version`` answers ``{"version": ...}``. ``lmstudio``: ids
  only (``owned_by: organization_owner``), and its native ``GET /api/v0/models/{id}`` gives type,
  arch, quantization, state, ``max_context_length`` and ``loaded_context_length``.
- ``models_status``: answer ``GET /v1/models`` with this HTTP status instead (e.g. 401, 404).
"""

from __future__ import annotations

import json
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

from tests.fakes.scripted_server import ScriptedHandler, ScriptedServer


class FakeOpenAIServer(ScriptedServer):
    """Scripted OpenAI-compatible server on 127.0.0.1 (random port) in a background thread."""

    def __init__(
        self,
        script: list[dict[str, Any]] | None = None,
        *,
        model: str = "fake-model",
        flavour: str = "openai",
        max_model_len: int | None = None,
        root: str | None = None,
        served_name: str | None = None,
        loaded_context_length: int | None = None,
        models_status: int | None = None,
        version: str = "0.11.0",
    ):
        super().__init__(script, model, _make_handler)
        self.flavour = flavour
        self.max_model_len = max_model_len
        self.root = root
        self.served_name = served_name
        self.loaded_context_length = loaded_context_length
        self.models_status = models_status
        self.version = version
        self.gets: list[str] = []  # every GET path, in order

    def model_card(self) -> dict[str, Any]:
        """The ``/v1/models`` entry this flavour of server lists."""
        card: dict[str, Any] = {"id": self.served_name or self.model, "object": "model", "created": 1_760_000_000}
        if self.flavour == "vllm":
            perm = {
                "id": "modelperm-0",
                "object": "model_permission",
                "created": 1_760_000_000,
                "allow_create_engine": False,
                "allow_sampling": True,
                "allow_logprobs": True,
                "allow_search_indices": False,
                "allow_view": True,
                "allow_fine_tuning": False,
                "organization": "*",
                "group": None,
                "is_blocking": False,
            }
            return {
                **card,
                "owned_by": "vllm",
                "root": self.root or self.model,
                "parent": None,
                "max_model_len": self.max_model_len,
                "permission": [perm],
            }
        if self.flavour == "lmstudio":
            return {"id": self.model, "object": "model", "owned_by": "organization_owner"}
        return {**card, "owned_by": "system"}

    def lmstudio_model(self) -> dict[str, Any]:
        """LM Studio's native ``/api/v0/models/{id}`` description of the model."""
        loaded = self.loaded_context_length is not None
        return {
            "id": self.model,
            "object": "model",
            "type": "vlm",
            "publisher": "lmstudio-community",
            "arch": "qwen3vl",
            "compatibility_type": "gguf",
            "quantization": "Q4_K_M",
            "state": "loaded" if loaded else "not-loaded",
            "max_context_length": 262144,
            **({"loaded_context_length": self.loaded_context_length} if loaded else {}),
        }


def _make_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(ScriptedHandler):
        def do_GET(self) -> None:
            path = self.path.rstrip("/")
            server.gets.append(path)
            card = server.model_card()
            missing = {"message": f"The model `{path.rsplit('/', 1)[-1]}` does not exist", "type": "NotFoundError", "code": 404}
            if path.startswith("/v1/models") and server.models_status:
                status = server.models_status
                self.send_json(status, {"error": {"message": f"scripted error {status}", "type": "fake_error", "code": status}})
            elif path == "/v1/models":
                self.send_json(200, {"object": "list", "data": [card]})
            elif path.startswith("/v1/models/"):
                found = unquote(path.removeprefix("/v1/models/")) == card["id"]
                self.send_json(200, card) if found else self.send_json(404, {"error": missing})
            elif path == "/version" and server.flavour == "vllm":
                self.send_json(200, {"version": server.version})
            elif path.startswith("/api/v0/models/") and server.flavour == "lmstudio":
                found = unquote(path.removeprefix("/api/v0/models/")) == server.model
                self.send_json(200, server.lmstudio_model()) if found else self.send_json(404, {"error": "Model not found"})
            else:
                self.send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/") != "/v1/chat/completions":
                self.send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self.send_json(400, {"error": {"message": "request body is not JSON", "type": "invalid_request"}})
                return
            reply = server._record(body, {k.lower(): v for k, v in self.headers.items()})
            try:
                if reply.get("status"):
                    status = int(reply["status"])
                    message = reply.get("error") or f"scripted error {status}"
                    err = {"error": {"message": message, "type": "fake_error", "code": status}}
                    self.send_json(status, err, reply.get("headers"))
                elif body.get("stream") and not reply.get("ignore_stream"):
                    self._stream(body, reply)
                else:
                    self.send_json(200, _completion(body, reply, server.model), reply.get("headers"))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (e.g. its read timeout); nothing to do

        def _stream(self, body: dict[str, Any], reply: dict[str, Any]) -> None:
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            frames = [f"data: {json.dumps(c)}\n\n".encode() for c in _chunks(body, reply, server.model, include_usage)]
            self.send_stream(reply, frames, last=b"data: [DONE]\n\n")

    return Handler


# -------------------------------------------------------------------- payloads


def _tool_calls(reply: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "id": tc.get("id") or f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": tc["name"], "arguments": _args_text(tc.get("arguments", {}))},
        }
        for tc in reply.get("tool_calls") or []
    ]


def _args_text(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _usage(body: dict[str, Any], reply: dict[str, Any], calls: list[dict[str, Any]]) -> dict[str, int]:
    given = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
    out_chars = len(reply.get("text") or "") + sum(len(c["function"]["arguments"]) for c in calls)
    if reply.get("function_call"):
        out_chars += len(_args_text(reply["function_call"].get("arguments", {})))
    prompt = int(given.get("prompt_tokens", len(json.dumps(body.get("messages", []))) // 4))
    completion = int(given.get("completion_tokens", out_chars // 4 + 1))
    details = {k: given[k] for k in ("prompt_tokens_details",) if k in given}  # OpenAI's cache hits: {cached_tokens}
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion, **details}


def _finish(reply: dict[str, Any]) -> str:
    if reply.get("finish_reason"):
        return reply["finish_reason"]
    return "tool_calls" if reply.get("tool_calls") else "function_call" if reply.get("function_call") else "stop"


def _split(text: str, parts: int) -> list[str]:
    """Split into ``parts`` non-empty pieces (fewer if the text is short)."""
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _completion(body: dict[str, Any], reply: dict[str, Any], model: str) -> dict[str, Any]:
    calls = _tool_calls(reply)
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("text") or None}
    if calls:
        message["tool_calls"] = calls
    if reply.get("function_call"):
        fc = reply["function_call"]
        message["function_call"] = {"name": fc["name"], "arguments": _args_text(fc.get("arguments", {}))}
    data: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
    }
    if reply.get("usage") is not False:
        data["usage"] = _usage(body, reply, calls)
    return data


def _chunks(body: dict[str, Any], reply: dict[str, Any], model: str, include_usage: bool) -> list[dict[str, Any]]:
    """The SSE chunk sequence a real server sends: role, content pieces, tool-call pieces, finish, usage."""
    cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
    created = int(time.time())

    def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model, "choices": choices, **extra}

    def delta(d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return chunk([{"index": 0, "delta": d, "finish_reason": finish}])

    out = [delta({"role": "assistant", "content": ""})]
    for piece in _split(reply.get("text") or "", 3):
        out.append(delta({"content": piece}))
    calls = _tool_calls(reply)
    for i, call in enumerate(calls):
        name = call["function"]["name"]
        head = {"index": i, "id": call["id"], "type": "function", "function": {"name": name, "arguments": ""}}
        out.append(delta({"tool_calls": [head]}))
        for piece in _split(call["function"]["arguments"], 3):
            out.append(delta({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    if reply.get("function_call"):
        fc = reply["function_call"]
        out.append(delta({"function_call": {"name": fc["name"], "arguments": ""}}))
        for piece in _split(_args_text(fc.get("arguments", {})), 3):
            out.append(delta({"function_call": {"arguments": piece}}))
    out.append(delta({}, _finish(reply)))
    if include_usage and reply.get("usage") is not False:
        out.append(chunk([], usage=_usage(body, reply, calls)))
    return out
