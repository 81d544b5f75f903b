"""Provider for the Anthropic Messages API (``POST {base_url}/messages``), with native computer use.

The loop speaks the OpenAI chat format; this module translates it to Messages (top-level
``system``, ``tool_use``/``tool_result`` blocks, strictly alternating roles) and maps the
``computer`` and ``bash`` tools onto Anthropic's versioned tool types, whose actions the local
tools already implement. Replies are streamed so time-to-first-token can be measured; a stream
cut before ``message_stop`` or an ``overloaded_error`` event is retried like an HTTP 529.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import NotRequired, TypeAlias, TypedDict, Unpack

import httpx

from mcpworld.agent.messages import Content, JSONObject, Message, ToolSchema, WireToolCall, as_int, as_list, as_object
from mcpworld.agent.providers.base import ModelInfo, Reply, ToolCall, Usage, parse_arguments
from mcpworld.agent.providers.http import HttpOptions, HttpProvider, Retryable, estimate_tokens, excerpt, sse_payloads
from mcpworld.core.errors import InfraError, UserError

DEFAULT_MAX_TOKENS = 4096  # the API requires max_tokens
CACHE = {"type": "ephemeral"}
# Stream error events that mean "try again" (the HTTP equivalents are 429/500/529).
RETRYABLE_ERRORS = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}
CACHED_TURNS = 3  # the reference agent's breakpoints: the system prompt and the 3 latest user turns (4 allowed)
MIN_THINKING_BUDGET = 1024  # the API's minimum budget_tokens
INTERLEAVED_THINKING = "interleaved-thinking-2025-05-14"  # lets budget_tokens exceed max_tokens (Claude 4)
REASONING_TYPES = ("thinking", "redacted_thinking")

# A Messages content block (text, image, tool_use, thinking) or tool definition, sent as JSON.
Block: TypeAlias = dict[str, object]


class ToolResult(TypedDict):
    """A ``tool_result`` block: its content grows as the screenshots after it are attached."""

    type: str
    tool_use_id: str
    content: NotRequired[list[Block]]
    is_error: NotRequired[bool]  # (always set: after content, where the reference puts it)
    cache_control: NotRequired[dict[str, str]]


class Turn(TypedDict):
    """One Messages ``messages`` entry (roles alternate)."""

    role: str
    content: list[Block | ToolResult]


class AnthropicProvider(HttpProvider):
    """Anthropic Messages over HTTP with retries; see module docstring."""

    def __init__(
        self,
        *,
        model: str,
        temperature: float | None = None,
        max_tokens: int | None = None,
        display_size: tuple[int, int] = (1024, 768),
        computer_tool: str | None = None,
        bash_tool: str | None = None,
        betas: list[str] | None = None,
        prompt_caching: bool = True,
        api_version: str = "2023-06-01",
        label: str = "anthropic",
        thinking_budget: int | None = None,
        enable_zoom: bool | None = None,
        **http: Unpack[HttpOptions],
    ):
        super().__init__(label=label, **http)
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens or DEFAULT_MAX_TOKENS
        self.display_size = (int(display_size[0]), int(display_size[1]))
        self.computer_tool = computer_tool
        self.bash_tool = bash_tool
        self.betas = list(betas or [])
        self.prompt_caching = prompt_caching
        self.api_version = api_version
        self.thinking_budget = thinking_budget or None
        # computer_20251124's zoom action is offered only when the tool definition enables it
        self.enable_zoom = computer_tool == "computer_20251124" if enable_zoom is None else enable_zoom
        if self.thinking_budget:
            check_thinking(self.thinking_budget, self.max_tokens, temperature, self.betas)

    async def preflight(self) -> ModelInfo:
        """A key is set and the model exists for it (GET /v1/models/{id}; costs no tokens)."""
        from mcpworld.agent.providers.served import check_anthropic

        return await check_anthropic(self)

    async def complete(self, messages: list[Message], tools: list[ToolSchema], *, temperature: float | None = None) -> Reply:
        payload = self.payload(messages, tools)
        if temperature is not None:
            payload["temperature"] = temperature
        reply = await self.with_retries(lambda: self._attempt(payload))
        if reply.usage.estimated:
            reply.usage.input_tokens = estimate_tokens(_request_text(payload))
        return reply

    # ------------------------------------------------------------------ request

    def payload(self, messages: list[Message], tools: list[ToolSchema]) -> dict[str, object]:
        """The Messages request body for OpenAI-format ``messages`` and function ``tools``."""
        system, converted = to_anthropic_messages(messages)
        body: dict[str, object] = {"model": self.model, "max_tokens": self.max_tokens}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if system:
            body["system"] = system
        body["messages"] = converted
        anthropic_tools = [self._tool(t) for t in tools]
        if anthropic_tools:
            body["tools"] = anthropic_tools
        if self.thinking_budget:
            body["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        if self.prompt_caching:
            cache_breakpoints(system or anthropic_tools, converted)
        body["stream"] = True
        return body

    def _tool(self, schema: ToolSchema) -> Block:
        inner = schema.get("function")
        fn = inner if isinstance(inner, dict) and inner else schema
        name = fn.get("name", "")
        if name == "computer" and self.computer_tool:
            w, h = self.display_size
            computer: Block = {"type": self.computer_tool, "name": name, "display_width_px": w, "display_height_px": h}
            return {**computer, "enable_zoom": True} if self.enable_zoom else computer
        if name == "bash" and self.bash_tool:
            return {"type": self.bash_tool, "name": name}
        tool: Block = {"name": name}
        if fn.get("description"):
            tool["description"] = fn["description"]
        tool["input_schema"] = fn.get("parameters") or {"type": "object", "properties": {}}
        return tool

    def _headers(self) -> dict[str, str]:
        headers = {
            "anthropic-version": self.api_version,
            "content-type": "application/json",
            "accept": "text/event-stream, application/json",
        }
        if self.api_key:
            headers["x-api-key"] = self.api_key
        if self.betas:
            headers["anthropic-beta"] = ",".join(self.betas)
        return headers

    async def _attempt(self, payload: dict[str, object]) -> Reply:
        return await self.post("messages", payload, self._headers(), self._read_stream, self._read_json)

    # ------------------------------------------------------------------ responses

    def stream_events(self, resp: httpx.Response) -> AsyncIterator[str]:
        """Each stream event's JSON text. Bedrock overrides this: it frames the same events as AWS
        event-stream messages instead of SSE (agent/providers/bedrock.py)."""
        return sse_payloads(resp)

    async def _read_stream(self, resp: httpx.Response, start: float) -> Reply:
        blocks: dict[int, JSONObject] = {}
        usage: JSONObject = {}
        ttft: float | None = None
        stop_reason: str | None = None
        stop_details: JSONObject = {}
        async for data in self.stream_events(resp):
            try:
                event = json.loads(data)
            except json.JSONDecodeError:
                continue
            if not isinstance(event, dict):
                continue
            kind = event.get("type")
            got_token = False
            if kind == "message_start":
                usage.update(as_object(as_object(event.get("message")).get("usage")))
            elif kind == "content_block_start":
                block = dict(as_object(event.get("content_block")))
                if block.get("type") not in REASONING_TYPES:  # those are sent back as they came
                    block.setdefault("text", "")
                    block["partial_json"] = ""
                blocks[as_int(event.get("index", len(blocks)))] = block
                got_token = block.get("type") == "tool_use"  # the name is generated output
            elif kind == "content_block_delta":
                block = blocks.setdefault(as_int(event.get("index", 0)), {"type": "text", "text": "", "partial_json": ""})
                delta = as_object(event.get("delta"))
                if delta.get("type") == "text_delta":
                    block["text"] = _text(block, "text") + _text(delta, "text")
                    got_token = bool(delta.get("text"))
                elif delta.get("type") == "input_json_delta":
                    block["partial_json"] = _text(block, "partial_json") + _text(delta, "partial_json")
                    got_token = True
                elif delta.get("type") == "signature_delta":  # closes a thinking block; checked when sent back
                    block["signature"] = _text(block, "signature") + _text(delta, "signature")
                elif delta.get("type") == "thinking_delta":  # thinking is output too, as in openai_compat
                    block["thinking"] = _text(block, "thinking") + _text(delta, "thinking")
                    got_token = True
            elif kind == "message_delta":
                delta = as_object(event.get("delta"))
                stop_reason = _text(delta, "stop_reason") or stop_reason
                stop_details = as_object(delta.get("stop_details")) or stop_details
                usage.update({k: v for k, v in as_object(event.get("usage")).items() if v is not None})
            elif kind == "error":
                raise self._stream_error(as_object(event.get("error")))
            elif kind == "message_stop":
                break
            if got_token and ttft is None:
                ttft = time.perf_counter() - start
        else:
            msg = f"{self.label} stream from {resp.request.url} ended before message_stop"
            raise Retryable(InfraError(self.scrub(msg)))
        for block in blocks.values():
            if block.get("type") == "tool_use" and block.get("partial_json"):
                block["input"] = block["partial_json"]
        reply = _reply([blocks[i] for i in sorted(blocks)], usage, stop_reason, stop_details)
        reply.ttft_s = ttft
        return reply

    def _read_json(self, resp: httpx.Response) -> Reply:
        body = self.json_body(resp)
        if body.get("type") == "error":
            raise self._stream_error(as_object(body.get("error")))
        content = [as_object(b) for b in as_list(body.get("content"))]
        return _reply(
            content, as_object(body.get("usage")), _text(body, "stop_reason") or None, as_object(body.get("stop_details"))
        )

    def _stream_error(self, error: JSONObject) -> Exception:
        kind = error.get("type", "error")
        exc = InfraError(self.scrub(f"{self.label} stream error: {kind}: {excerpt(error.get('message', ''))}"))
        return Retryable(exc) if kind in RETRYABLE_ERRORS else exc


# ---------------------------------------------------------------------- translation


def to_anthropic_messages(messages: list[Message]) -> tuple[list[Block], list[Turn]]:
    """OpenAI chat messages → (system blocks, Messages ``messages``) with alternating roles.

    Tool results become ``tool_result`` blocks in one user turn (``is_error`` set as the reference
    agent sets it); the screenshots the loop sends right after them go inside the results, each into
    the result of the call that took it (the tool message's ``images`` count; else all into the last),
    where the model expects the action's observation. An assistant turn starts with its thinking
    blocks, sent back unchanged.
    """
    system: list[Block] = []
    out: list[Turn] = []
    results: list[tuple[ToolResult, int]] = []  # this user turn's tool results and their image counts
    for m in messages:
        content = _blocks(m["content"])
        if m["role"] == "system":
            system.extend(b for b in content if b["type"] == "text")
        elif m["role"] == "tool":
            result: ToolResult = {"type": "tool_result", "tool_use_id": m["tool_call_id"] or ""}
            if content:
                result["content"] = content
            result["is_error"] = bool(m.get("is_error"))
            if not (out and out[-1]["role"] == "user"):
                results = []
            results.append((result, int(m.get("images") or 0)))
            _append(out, "user", [result])
        elif m["role"] == "assistant":
            reasoning: list[Block | ToolResult] = [dict(b) for b in m.get("reasoning_blocks") or []]
            _append(out, "assistant", [*reasoning, *content, *(_tool_use(tc) for tc in m.get("tool_calls") or [])])
        else:
            last: Block | ToolResult = out[-1]["content"][-1] if out and out[-1]["role"] == "user" else {}
            if content and last.get("type") == "tool_result" and all(b["type"] == "image" for b in content):
                _attach_images(results, content)
            else:
                _append(out, "user", content)
    return system, out


def _attach_images(results: list[tuple[ToolResult, int]], images: list[Block]) -> None:
    """Each call's images into its own tool_result, in order; what no count claims goes to the last."""
    rest = list(images)
    for result, count in results:
        if count and rest:
            result.setdefault("content", []).extend(rest[:count])
            rest = rest[count:]
    if rest:
        results[-1][0].setdefault("content", []).extend(rest)


def cache_breakpoints(prefix: list[Block], messages: list[Turn]) -> None:
    """Prompt-cache breakpoints where the reference agent puts them: the end of the static prefix
    (the system prompt, which caches the tools before it) and the last block of the latest
    ``CACHED_TURNS`` user turns, so each request reads the previous one's prefix from the cache."""
    if prefix:
        prefix[-1]["cache_control"] = dict(CACHE)
    turns = [m for m in messages if m["role"] == "user" and m["content"]]
    for message in turns[-CACHED_TURNS:]:
        message["content"][-1]["cache_control"] = dict(CACHE)


def check_thinking(budget: int, max_tokens: int, temperature: float | None, betas: list[str]) -> None:
    """Extended thinking's constraints (Anthropic's extended-thinking documentation), before any request."""
    if budget < MIN_THINKING_BUDGET:
        raise UserError(
            f"model.thinking_budget={budget} is below the API's minimum of {MIN_THINKING_BUDGET} tokens: "
            f"set model.thinking_budget>={MIN_THINKING_BUDGET} (or null for no thinking)"
        )
    if budget >= max_tokens and INTERLEAVED_THINKING not in betas:
        raise UserError(
            f"model.thinking_budget={budget} must be below model.max_tokens={max_tokens} (the budget is "
            f"part of the output): raise model.max_tokens, or lower the budget"
        )
    if temperature is not None and temperature != 1.0:
        raise UserError(
            f"model.temperature={temperature:g} cannot be used with extended thinking (the API allows "
            f"only temperature 1 with thinking): set model.temperature=1.0"
        )


def _append(out: list[Turn], role: str, blocks: Sequence[Block | ToolResult]) -> None:
    """Merge into the previous message when the role repeats; drop empty messages."""
    if not blocks:
        return
    if out and out[-1]["role"] == role:
        out[-1]["content"].extend(blocks)
    else:
        out.append({"role": role, "content": list(blocks)})


def _blocks(content: Content | None) -> list[Block]:
    """Text and image content blocks; empty text is dropped (the API rejects it)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    blocks: list[Block] = []
    for part in content:
        if part["type"] == "text" and part["text"].strip():
            blocks.append({"type": "text", "text": part["text"]})
        elif part["type"] == "image_url":
            blocks.append({"type": "image", "source": _image_source(part["image_url"]["url"])})
    return blocks


def _image_source(url: str) -> dict[str, str]:
    if not url.startswith("data:"):
        return {"type": "url", "url": url}
    header, _, data = url.partition(",")
    return {"type": "base64", "media_type": header[5:].split(";")[0] or "image/png", "data": data}


def _tool_use(tc: WireToolCall) -> Block:
    fn = tc["function"]
    return {"type": "tool_use", "id": tc["id"] or "", "name": fn["name"] or "", "input": parse_arguments(fn["arguments"] or "")}


def _text(obj: JSONObject, key: str) -> str:
    """``obj[key]`` as text ("" when absent or null): the pieces a stream adds up."""
    value = obj.get(key)
    return "" if value is None else str(value)


def _reply(blocks: list[JSONObject], usage: JSONObject, stop_reason: str | None, stop_details: JSONObject | None = None) -> Reply:
    text = "".join(_text(b, "text") for b in blocks if b.get("type") == "text")
    calls = []
    for i, b in enumerate(b for b in blocks if b.get("type") == "tool_use"):
        raw = b.get("input")
        args = raw if isinstance(raw, dict) else parse_arguments(str(raw or ""))
        calls.append(ToolCall(id=_text(b, "id") or f"toolu_{i}", name=_text(b, "name"), arguments=args))
    if usage:
        # Cached prefix tokens are billed and read separately but are still input the model read.
        tokens_in = sum(as_int(usage.get(k)) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        counted = Usage(
            input_tokens=tokens_in,
            output_tokens=as_int(usage.get("output_tokens")),
            cached_input_tokens=as_int(usage.get("cache_read_input_tokens")),
        )
    else:
        out_text = text + "".join(c.name + json.dumps(c.arguments) for c in calls)
        counted = Usage(output_tokens=estimate_tokens(out_text), estimated=True)
    reasoning = "".join(_text(b, "thinking") for b in blocks if b.get("type") == "thinking")
    refusal = _refusal(text, stop_details or {}) if stop_reason == "refusal" else ""
    return Reply(
        text=text or refusal,
        tool_calls=calls,
        usage=counted,
        finish_reason=stop_reason,
        reasoning=reasoning,
        refusal=refusal,
        reasoning_blocks=[_reasoning_block(b) for b in blocks if b.get("type") in REASONING_TYPES],
    )


def _reasoning_block(block: JSONObject) -> JSONObject:
    """A thinking block as the API wants it back: its text and signature (a redacted one: its data)."""
    if block.get("type") == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.get("data") or ""}
    return {"type": "thinking", "thinking": block.get("thinking") or "", "signature": block.get("signature") or ""}


def _refusal(text: str, details: JSONObject) -> str:
    """What a ``refusal`` stop says: the server's explanation (``stop_details``) when it gave one,
    else the text streamed before the stop, else that the model declined; never empty, so the
    trace shows the refusal even when the stream carried no text."""
    why = str(details.get("explanation") or "").strip()
    category = f" ({details['category']})" if details.get("category") else ""
    if why:
        return f"{why}{category}"
    return text or f"The model declined (stop_reason: refusal){category}."


def _request_text(body: Mapping[str, object]) -> str:
    """Text the model reads, for estimating input tokens; base64 image data is skipped."""

    def objects(value: object) -> list[Mapping[str, object]]:
        return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []

    parts = [str(b.get("text", "")) for b in objects(body.get("system"))]

    def walk(blocks: object) -> None:
        for b in objects(blocks):
            if b.get("type") == "text":
                parts.append(str(b.get("text", "")))
            elif b.get("type") == "tool_use":
                parts.append(str(b.get("name", "")) + json.dumps(b.get("input")))
            elif b.get("type") == "tool_result":
                walk(b.get("content"))

    for m in objects(body.get("messages")):
        walk(m.get("content"))
    if body.get("tools"):
        parts.append(json.dumps(body["tools"]))
    return "".join(parts)
