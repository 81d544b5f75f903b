"""A real local HTTP server that speaks the Anthropic Messages protocol, driven by a script.

Tests talk to it over a socket, so the provider is exercised exactly as against api.anthropic.com:
the same SSE events (``event: <type>`` / ``data: <json>``), error bodies and request checks.

Usage::

    with FakeAnthropicServer([
        {"text": "Let me click."},
        {"tool_uses": [{"name": "computer", "input": {"action": "left_click", "coordinate": [1, 2]}}]},
        {"status": 529, "error_type": "overloaded_error"},
    ]) as server:
        provider = AnthropicProvider(base_url=server.base_url, model="claude-fake", ...)
        ...
        server.requests   # every POST body received, parsed JSON, in order
        server.headers    # the matching request headers (dict, lower-case names)

Each scripted reply is a dict; every key is optional:

- ``text``: assistant text, streamed as several ``text_delta`` events.
- ``tool_uses``: ``[{"name": str, "input": dict | str, "id": str (optional)}]``; the input JSON is
  split over several ``input_json_delta`` events. A ``str`` is sent verbatim (malformed JSON).
- ``stop_reason``: defaults to ``"tool_use"`` when there are tool uses, else ``"end_turn"``.
- ``status``: answer this HTTP error instead, with Anthropic's body
  ``{"type": "error", "error": {"type": error_type, "message": error}}``.
- ``error`` / ``error_type``: the message and type for ``status`` or ``overloaded``.
- ``headers``: extra response headers (e.g. ``retry-after``).
- ``cut``: close the connection abruptly after this many events (no ``message_stop``);
  with ``cut_clean`` the HTTP body is ended properly instead, so only ``message_stop`` is missing.
- ``overloaded``: send an ``event: error`` (``overloaded_error``) after ``message_start`` and end.
- ``usage``: ``False`` omits usage; a dict (``input_tokens``, ``output_tokens``,
  ``cache_creation_input_tokens``, ``cache_read_input_tokens``) overrides the defaults (chars/4).
- ``ignore_stream``: answer a plain JSON message even when the request asked to stream.
- ``delay_first_s`` / ``chunk_delay_s``: sleep before the first event / between events.
- ``thinking``: a thinking block first (``thinking_delta`` events, then a ``signature_delta`` with a
  signature this server issues); ``redacted_thinking``: the ``data`` of a redacted block sent before it.

With ``thinking`` enabled in the request, the server checks what the real API checks: ``budget_tokens``
of at least 1024 and below ``max_tokens`` (unless the interleaved-thinking beta is on), no temperature
other than 1, the last assistant turn starting with a thinking block, and every thinking block sent back
carrying the signature issued for exactly its text (a redacted block, exactly its data).

``GET /v1/models/{id}`` describes ``model`` (id, display name, release date, ``max_input_tokens``,
``max_tokens``); another id is a 404 ``not_found_error``. With ``api_key`` set, a request without
that ``x-api-key`` is a 401 ``authentication_error``, as the real API answers a missing or wrong key.

Each POST consumes one scripted reply; when the script runs out the reply is the text ``"done"``.
Like the real API, a request that breaks the protocol (no ``anthropic-version`` header, no
``max_tokens``, roles not alternating, empty text blocks, a ``tool_use`` not answered by a
``tool_result`` in the next message) is answered 400 ``invalid_request_error`` without consuming
the script; it is still recorded.
"""

from __future__ import annotations

import json
import re
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

from tests.fakes.scripted_server import ScriptedHandler, ScriptedServer

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class FakeAnthropicServer(ScriptedServer):
    """Scripted Anthropic Messages server on 127.0.0.1 (random port) in a background thread."""

    def __init__(
        self,
        script: list[dict[str, Any]] | None = None,
        *,
        model: str = "claude-fake",
        api_key: str | None = None,
        max_input_tokens: int = 200_000,
    ):
        super().__init__(script, model, _make_handler)
        self.api_key = api_key
        self.max_input_tokens = max_input_tokens
        self.gets: list[tuple[str, dict[str, str]]] = []  # every GET: path and lower-case headers
        self.issued: dict[str, str] = {}  # signature (or redacted data) -> the thinking it was issued for


def _make_handler(server: FakeAnthropicServer) -> type[BaseHTTPRequestHandler]:
    class Handler(ScriptedHandler):
        def do_GET(self) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            server.gets.append((self.path, headers))
            if server.api_key is not None and headers.get("x-api-key") != server.api_key:
                message = "invalid x-api-key" if headers.get("x-api-key") else "x-api-key header is required"
                self._error(401, message)
            elif "anthropic-version" not in headers:
                self._error(400, "anthropic-version: header is required")
            elif not self.path.startswith("/v1/models/"):
                self._error(404, f"no route {self.path}")
            elif unquote(self.path.removeprefix("/v1/models/")) != server.model:
                self._error(404, f"model: {unquote(self.path.removeprefix('/v1/models/'))}")
            else:
                self._send_json(
                    200,
                    {
                        "type": "model",
                        "id": server.model,
                        "display_name": "Claude Fake",
                        "created_at": "2025-02-19T00:00:00Z",
                        "max_input_tokens": server.max_input_tokens,
                        "max_tokens": 64_000,
                    },
                )

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/") != "/v1/messages":
                self._error(404, f"no route {self.path}")
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._error(400, "request body is not JSON")
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            problem = validate(body, headers) or validate_thinking(body, headers, server.issued)
            reply = server._record(body, headers, problem is None)
            try:
                if problem is not None:
                    self._error(400, problem)
                elif reply.get("status"):
                    status = int(reply["status"])
                    self._error(
                        status, reply.get("error") or f"scripted error {status}", reply.get("error_type"), reply.get("headers")
                    )
                elif body.get("stream") and not reply.get("ignore_stream"):
                    self._stream(body, reply)
                else:
                    self._send_json(200, _message(body, reply, server.model, server.issued), reply.get("headers"))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up; nothing to do

        def _error(self, status: int, message: str, kind: str | None = None, extra: dict[str, str] | None = None) -> None:
            kind = kind or ERROR_TYPES.get(status, "api_error")
            self._send_json(status, {"type": "error", "error": {"type": kind, "message": message}}, extra)

        def _send_json(self, status: int, data: Any, extra: dict[str, str] | None = None) -> None:
            self.send_json(status, data, {"request-id": f"req_{uuid.uuid4().hex[:16]}", **(extra or {})})

        def _stream(self, body: dict[str, Any], reply: dict[str, Any]) -> None:
            frames = [
                f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode()
                for e in _events(body, reply, server.model, server.issued)
            ]
            self.send_stream(reply, frames, content_type="text/event-stream; charset=utf-8")

    return Handler


# -------------------------------------------------------------------- protocol checks


TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")


def validate(body: dict[str, Any], headers: dict[str, str]) -> str | None:
    """The first reason the real API would reject this request with 400, else None."""
    if "anthropic-version" not in headers:
        return "anthropic-version: header is required"
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if messages[0].get("role") != "user":
        return 'messages: first message must use the "user" role'
    for i, m in enumerate(messages):
        if i and m.get("role") == messages[i - 1].get("role"):
            return f'messages.{i}: roles must alternate between "user" and "assistant"'
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not blocks:
            return f"messages.{i}: all messages must have non-empty content"
        for j, b in enumerate(_all_blocks(blocks)):
            if b.get("type") == "text" and not str(b.get("text", "")).strip():
                return f"messages.{i}.content.{j}: text content blocks must contain non-whitespace text"
        wanted = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        if wanted:
            following = messages[i + 1]["content"] if i + 1 < len(messages) else []
            answered = [b.get("tool_use_id") for b in following if isinstance(b, dict) and b.get("type") == "tool_result"]
            if set(answered) != set(wanted) or (following and following[0].get("type") != "tool_result"):
                return (
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                    f"after: {', '.join(sorted(set(wanted) - set(answered))) or 'order'}"
                )
    for b in body.get("system") or []:
        if not str(b.get("text", "")).strip():
            return "system: text content blocks must be non-empty"
    for i, tool in enumerate(body.get("tools") or []):
        if not TOOL_NAME.fullmatch(str(tool.get("name", ""))):
            return f"tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
        if "type" not in tool and (tool.get("input_schema") or {}).get("type") != "object":
            return f"tools.{i}.custom.input_schema.type: Input should be 'object'"
    return None


INTERLEAVED = "interleaved-thinking-2025-05-14"


def validate_thinking(body: dict[str, Any], headers: dict[str, str], issued: dict[str, str]) -> str | None:
    """Extended thinking's 400s: the request's thinking settings and the thinking blocks sent back."""
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget, betas = thinking.get("budget_tokens"), headers.get("anthropic-beta", "").split(",")
        if not isinstance(budget, int) or budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if budget >= body.get("max_tokens", 0) and INTERLEAVED not in betas:
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
        if body.get("temperature", 1) != 1:
            return "`temperature` may only be set to 1 when thinking is enabled"
        assistant = [m for m in body.get("messages") or [] if m.get("role") == "assistant"]
        first = (assistant[-1].get("content") or [{}])[0] if assistant else {}
        if assistant and isinstance(first, dict) and first.get("type") not in ("thinking", "redacted_thinking"):
            return (
                "messages: Expected `thinking` or `redacted_thinking`, but found "
                f"`{first.get('type')}`. When `thinking` is enabled, a final `assistant` message must start "
                "with a thinking block"
            )
    for i, m in enumerate(body.get("messages") or []):
        for j, b in enumerate(m.get("content") if isinstance(m.get("content"), list) else []):
            if b.get("type") == "thinking" and issued.get(str(b.get("signature"))) != b.get("thinking"):
                return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
            if b.get("type") == "redacted_thinking" and issued.get(str(b.get("data"))) != "":
                return f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block"
    return None


def _signature(thinking: str, issued: dict[str, str]) -> str:
    import base64
    import hashlib

    signature = base64.b64encode(hashlib.sha256(b"fake-signature:" + thinking.encode()).digest()).decode()
    issued[signature] = thinking
    return signature


def _all_blocks(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for b in blocks:
        out.append(b)
        if b.get("type") == "tool_result" and isinstance(b.get("content"), list):
            out.extend(b["content"])
    return out


# -------------------------------------------------------------------- payloads


def _tool_uses(reply: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"id": tu.get("id") or f"toolu_{uuid.uuid4().hex[:20]}", "name": tu["name"], "input": tu.get("input", {})}
        for tu in reply.get("tool_uses") or []
    ]


def _input_text(value: dict[str, Any] | str) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _usage(body: dict[str, Any], reply: dict[str, Any]) -> dict[str, int] | None:
    if reply.get("usage") is False:
        return None
    given = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
    out_chars = len(reply.get("text") or "") + sum(len(_input_text(t.get("input", {}))) for t in reply.get("tool_uses") or [])
    return {
        "input_tokens": len(json.dumps(body.get("messages", []))) // 4,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": out_chars // 4 + 1,
        **given,
    }


def _stop_reason(reply: dict[str, Any]) -> str:
    return reply.get("stop_reason") or ("tool_use" if reply.get("tool_uses") else "end_turn")


def _split(text: str, parts: int) -> list[str]:
    """Split into ``parts`` non-empty pieces (fewer if the text is short)."""
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _message(body: dict[str, Any], reply: dict[str, Any], model: str, issued: dict[str, str]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.get("redacted_thinking"):
        issued[reply["redacted_thinking"]] = ""
        content.append({"type": "redacted_thinking", "data": reply["redacted_thinking"]})
    if reply.get("thinking"):
        content.append({"type": "thinking", "thinking": reply["thinking"], "signature": _signature(reply["thinking"], issued)})
    if reply.get("text"):
        content.append({"type": "text", "text": reply["text"]})
    content += [{"type": "tool_use", **tu} for tu in _tool_uses(reply)]
    data = {
        "id": f"msg_{uuid.uuid4().hex[:20]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _stop_reason(reply),
        "stop_sequence": None,
    }
    usage = _usage(body, reply)
    if usage is not None:
        data["usage"] = usage
    return data


def _events(body: dict[str, Any], reply: dict[str, Any], model: str, issued: dict[str, str]) -> list[dict[str, Any]]:
    """The event sequence the real API streams: message_start, ping, blocks, message_delta, message_stop."""
    usage = _usage(body, reply)
    start_usage = {k: v for k, v in (usage or {}).items() if k != "output_tokens"}
    message = {
        "id": f"msg_{uuid.uuid4().hex[:20]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
    }
    if usage is not None:
        message["usage"] = {**start_usage, "output_tokens": 1}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}, {"type": "ping"}]
    if reply.get("overloaded"):
        message_text = reply.get("error") or "Overloaded"
        kind = reply.get("error_type") or "overloaded_error"
        return [*events, {"type": "error", "error": {"type": kind, "message": message_text}}]
    index = 0
    if reply.get("redacted_thinking"):
        issued[reply["redacted_thinking"]] = ""
        events += [
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "redacted_thinking", "data": reply["redacted_thinking"]},
            },
            {"type": "content_block_stop", "index": index},
        ]
        index += 1
    if reply.get("thinking"):
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            }
        )
        events += [
            {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": piece}}
            for piece in _split(reply["thinking"], 3)
        ]
        events += [
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "signature_delta", "signature": _signature(reply["thinking"], issued)},
            },
            {"type": "content_block_stop", "index": index},
        ]
        index += 1
    if reply.get("text"):
        events.append({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
        events += [
            {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}
            for piece in _split(reply["text"], 3)
        ]
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    for tu in _tool_uses(reply):
        block = {"type": "tool_use", "id": tu["id"], "name": tu["name"], "input": {}}
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events += [
            {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}
            for piece in _split(_input_text(tu["input"]), 3)
        ]
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    delta: dict[str, Any] = {"type": "message_delta", "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None}}
    if usage is not None:
        delta["usage"] = {"output_tokens": usage["output_tokens"]}
    return [*events, delta, {"type": "message_stop"}]
