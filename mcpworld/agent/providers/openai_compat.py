"""Provider for any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, Ollama, llama.cpp).

Streams by default so time-to-first-token can be measured; falls back to a plain JSON body when a
server ignores ``stream``. Endpoint failures become ``InfraError`` (or ``EndpointUnreachable`` when
nothing answers at all) so they are never counted as the agent failing the task.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import TypedDict, Unpack

import httpx

from mcpworld.agent.messages import (
    HARNESS_KEYS,
    JSON,
    JSONObject,
    Message,
    ToolSchema,
    as_int,
    as_list,
    as_object,
    text_of,
)
from mcpworld.agent.providers.base import ModelInfo, Reply, ToolCall, Usage, parse_arguments
from mcpworld.agent.providers.content_calls import calls_in_text
from mcpworld.agent.providers.http import HttpOptions, HttpProvider, Retryable, estimate_tokens, sse_payloads
from mcpworld.core.errors import InfraError


class OpenAICompatProvider(HttpProvider):
    """Chat completions over HTTP with retries; see module docstring."""

    def __init__(
        self,
        *,
        model: str,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        extra_body: Mapping[str, object] | None = None,
        label: str = "openai_compat",
        context_length: int | None = None,
        top_p: float | None = None,
        top_k: int | None = None,
        presence_penalty: float | None = None,
        frequency_penalty: float | None = None,
        **http: Unpack[HttpOptions],
    ):
        super().__init__(label=label, **http)
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        # sampling beyond temperature, sent only when set (a model card's recommended decoding); top_k
        # and presence_penalty are not OpenAI's own but vLLM, SGLang and llama.cpp take them
        self.sampling = {
            k: v
            for k, v in (
                ("top_p", top_p),
                ("top_k", top_k),
                ("presence_penalty", presence_penalty),
                ("frequency_penalty", frequency_penalty),
            )
            if v is not None
        }
        self.extra_body = dict(extra_body or {})
        self.context_length = context_length  # what the model config needs; preflight checks the server gives it

    async def preflight(self) -> ModelInfo:
        """The server answers, serves the model with enough context, and says who it is (served.*)."""
        from mcpworld.agent.providers.served import check_openai_server

        return await check_openai_server(self)

    async def complete(self, messages: list[Message], tools: list[ToolSchema], *, temperature: float | None = None) -> Reply:
        payload = self._payload(messages, tools)
        if temperature is not None:
            payload["temperature"] = temperature
        reply = await self.with_retries(lambda: self._attempt(payload))
        if reply.usage.estimated:
            reply.usage.input_tokens = estimate_tokens(_request_text(messages, tools))
        return reply

    # ------------------------------------------------------------------ request

    def _payload(self, messages: list[Message], tools: list[ToolSchema]) -> dict[str, object]:
        body: dict[str, object] = {
            "model": self.model,
            "messages": wire_messages(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.seed is not None:
            body["seed"] = self.seed
        body.update(self.sampling)
        body.update(self.extra_body)
        return body

    def _headers(self) -> dict[str, str]:
        return {"Accept": "text/event-stream, application/json", **self.auth_headers()}

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    async def _attempt(self, payload: dict[str, object]) -> Reply:
        return await self.post("chat/completions", payload, self._headers(), self._read_stream, self._read_json)

    # ------------------------------------------------------------------ responses

    async def _read_stream(self, resp: httpx.Response, start: float) -> Reply:
        acc = Accumulator()
        ttft: float | None = None
        done = False
        async for data in sse_payloads(resp):
            if data == "[DONE]":
                done = True
                break
            try:
                chunk = json.loads(data)
            except json.JSONDecodeError:
                continue
            if not isinstance(chunk, dict):
                continue
            error = body_error(chunk)
            if error is not None:  # some servers report failures inside an otherwise 200 stream
                raise self.body_error(error)
            if acc.add_chunk(chunk) and ttft is None:
                ttft = time.perf_counter() - start
        if not done and acc.finish is None:  # the body ended mid-reply: a partial answer is not an answer
            raise Retryable(
                InfraError(self.scrub(f"{self.label} stream from {self.base_url} ended before the reply was complete"))
            )
        return acc.reply(ttft, self.text_calls)

    def _read_json(self, resp: httpx.Response) -> Reply:
        body = self.json_body(resp)
        error = body_error(body)
        if error is not None:
            raise self.body_error(error, "error")
        acc = Accumulator()
        choice = as_object((as_list(body.get("choices")) or [{}])[0])
        message = as_object(choice.get("message") or choice.get("delta") or {})
        calls: list[JSON] = [{**as_object(tc), "index": i} for i, tc in enumerate(as_list(message.get("tool_calls")))]
        acc.add_delta({**message, "tool_calls": calls})
        if body.get("usage"):
            acc.usage = _usage(as_object(body["usage"]))
        acc.finish = _finish(choice.get("finish_reason"))
        return acc.reply(None, self.text_calls)


# ---------------------------------------------------------------------- helpers


THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def wire_messages(messages: list[Message]) -> list[Mapping[str, object]]:
    """The conversation as the chat API takes it: without the harness's keys (messages.HARNESS_KEYS)."""
    return [{k: v for k, v in m.items() if k not in HARNESS_KEYS} if HARNESS_KEYS & m.keys() else m for m in messages]


def split_thinking(text: str) -> tuple[str, str]:
    """(answer, reasoning): ``<think>…</think>`` blocks (LM Studio, some vLLM/Ollama setups) are
    reasoning, not answer; a lone ``</think>`` (servers that drop the opening tag) ends reasoning
    that began with the reply, and an unclosed ``<think>`` runs to the end."""
    reasoning: list[str] = []
    close = text.find(THINK_CLOSE)
    if close >= 0 and THINK_OPEN not in text[:close]:
        reasoning.append(text[:close])
        text = text[close + len(THINK_CLOSE) :]
    answer: list[str] = []
    while (start := text.find(THINK_OPEN)) >= 0:
        answer.append(text[:start])
        end = text.find(THINK_CLOSE, start)
        reasoning.append(text[start + len(THINK_OPEN) :] if end < 0 else text[start + len(THINK_OPEN) : end])
        text = "" if end < 0 else text[end + len(THINK_CLOSE) :]
    answer.append(text)
    return "".join(answer).strip() if reasoning else "".join(answer), "\n".join(r.strip() for r in reasoning)


class PendingCall(TypedDict):
    """A tool call as its streamed pieces add up."""

    id: str
    name: str
    arguments: str  # the JSON text so far
    index: JSON  # the server's index for it (None: it sent none)


def _finish(value: JSON) -> str | None:
    """A finish reason as the server wrote it (None: not yet, or none)."""
    return None if value is None else str(value)


class Accumulator:
    """What the deltas of one reply add up to. Every server's quirks are handled here, once, for
    streamed chunks and whole JSON messages alike (a message is one big delta)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, PendingCall] = {}
        self.usage: Usage | None = None
        self.finish: str | None = None

    def add_chunk(self, chunk: JSONObject) -> bool:
        """One streamed chunk; True when it carried generated output (for time to first token)."""
        if chunk.get("usage"):  # the usage chunk, or continuous usage in every chunk (vLLM): the last wins
            self.usage = _usage(as_object(chunk["usage"]))
        got = False
        for choice in as_list(chunk.get("choices")):
            if not isinstance(choice, dict):
                continue
            got = self.add_delta(as_object(choice.get("delta") or choice.get("message") or {})) or got
            if choice.get("finish_reason"):
                self.finish = _finish(choice["finish_reason"])
        return got

    def add_delta(self, delta: JSONObject) -> bool:
        """One delta (or a whole message): answer, reasoning, refusal and tool-call pieces."""
        got = False
        content = delta.get("content")
        if isinstance(content, list):  # content parts (Mistral's thinking parts among them)
            for part in content:
                got = self._add_part(part) or got
        elif content:
            self.text.append(str(content))
            got = True
        # Reasoning is output too: time to first token should not include a model's thinking time.
        # Servers name it differently (vLLM/DeepSeek reasoning_content, Ollama/OpenRouter reasoning);
        # some send the same text under two names, so one is taken.
        thinking = next((v for v in (delta.get(k) for k in REASONING_KEYS) if isinstance(v, str) and v), "")
        if thinking:
            self.reasoning.append(thinking)
            got = True
        if delta.get("refusal"):
            self.refusal.append(str(delta["refusal"]))
            got = True
        for frag in as_list(delta.get("tool_calls")):
            if isinstance(frag, dict):
                merge_tool_fragment(self.calls, frag)
                got = True
        legacy = delta.get("function_call")
        if isinstance(legacy, dict) and not delta.get("tool_calls"):  # the legacy single-call field
            merge_tool_fragment(self.calls, {"index": 0, "function": legacy})
            got = True
        return got

    def _add_part(self, part: JSON) -> bool:
        if isinstance(part, str):
            self.text.append(part)
            return bool(part)
        if not isinstance(part, dict):
            return False
        if part.get("type") in ("thinking", "reasoning"):
            inner = part.get("thinking") or part.get("reasoning") or part.get("text") or ""
            if isinstance(inner, list):
                inner = "".join(str(p.get("text", "")) for p in inner if isinstance(p, dict))
            self.reasoning.append(str(inner))
            return bool(inner)
        if part.get("type") == "refusal":
            self.refusal.append(str(part.get("refusal") or ""))
            return True
        text = part.get("text") if part.get("type") in (None, "text", "output_text") else None
        if isinstance(text, str) and text:
            self.text.append(text)
            return True
        return False

    def reply(self, ttft: float | None, text_calls: bool = True) -> Reply:
        return _reply(
            "".join(self.text),
            "".join(self.reasoning),
            "".join(self.refusal),
            self.calls,
            self.usage,
            self.finish,
            ttft,
            text_calls,
        )


REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")


def body_error(body: JSONObject) -> JSON:
    """The error a 200 body or stream chunk carries, in any server's shape: ``{"error": …}``
    (OpenAI, vLLM, Ollama, OpenRouter) or vLLM's older top-level ``{"object": "error", "message": …}``."""
    if body.get("error"):
        return body["error"]
    if body.get("object") == "error" or body.get("type") == "error":
        return {k: body.get(k) for k in ("message", "type", "code") if body.get(k) is not None}
    return None


def _reply(
    text: str,
    reasoning: str,
    refusal: str,
    calls: dict[int, PendingCall],
    usage: Usage | None,
    finish: str | None,
    ttft: float | None,
    text_calls: bool = True,
) -> Reply:
    """One reply from what a stream or a JSON body held: thinking split off the answer, tool calls
    (structured, else written in the answer), a refusal kept as the answer when there is no other."""
    answer, thought = split_thinking(text)
    reasoning = "\n".join(r for r in (reasoning, thought) if r)
    answer, tool_calls = _calls(calls, answer) if calls or text_calls else (answer, [])
    if refusal and not answer:
        answer = refusal
    if usage is None:
        usage = Usage(output_tokens=estimate_tokens(_output_text(answer + reasoning, tool_calls)), estimated=True)
    return Reply(
        text=answer, tool_calls=tool_calls, usage=usage, ttft_s=ttft, finish_reason=finish, reasoning=reasoning, refusal=refusal
    )


def _calls(calls: dict[int, PendingCall], text: str) -> tuple[str, list[ToolCall]]:
    """Structured tool calls when the server parsed them, else the ones written into the text."""
    if calls:
        return text, [_to_tool_call(i, calls[i]) for i in sorted(calls)]
    return calls_in_text(text)


def merge_tool_fragment(calls: dict[int, PendingCall], frag: JSONObject) -> None:
    """Streamed tool calls arrive in pieces keyed by ``index``, the arguments string split. A piece
    with a new ``id`` starts a new call even when its index repeats (Ollama before 0.20.6 sends
    parallel calls all at index 0); a piece without an id continues the latest call at its index
    (or the latest call, when there is no index), unless that call's arguments are already a whole
    object and the piece names a tool and starts another (whole calls sent with no id or index)."""
    idx, fid = frag.get("index"), frag.get("id") or None
    fn = frag.get("function")
    if not isinstance(fn, dict):
        fn = {}
    name, args = str(fn.get("name") or ""), fn.get("arguments")
    piece = json.dumps(args) if isinstance(args, dict) else str(args or "")
    same_id = [k for k, c in calls.items() if fid and c["id"] == fid]
    at_index = [k for k, c in calls.items() if idx is None or c["index"] == idx]
    if same_id:
        key = same_id[-1]
    elif at_index and not (fid and calls[at_index[-1]]["id"]) and not (name and _restarts(calls[at_index[-1]], piece)):
        key = at_index[-1]
    else:
        key = max(calls, default=-1) + 1
    acc = calls.setdefault(key, {"id": "", "name": "", "arguments": "", "index": idx})
    if fid:
        acc["id"] = str(fid)
    if name and not acc["arguments"] and name != acc["name"]:
        acc["name"] += name  # a name in pieces; a server that repeats the whole name on every piece adds nothing
    elif name and not acc["name"]:
        acc["name"] = name
    acc["arguments"] += piece


def _restarts(acc: PendingCall, piece: str) -> bool:
    """Whether ``piece`` begins a new arguments object after ``acc``'s complete one."""
    if not piece.lstrip().startswith("{") or not acc["arguments"].strip():
        return False
    try:
        return isinstance(json.loads(acc["arguments"]), dict)
    except json.JSONDecodeError:
        return False


def _to_tool_call(i: int, acc: PendingCall) -> ToolCall:
    return ToolCall(id=acc["id"] or f"call_{i}", name=acc["name"], arguments=parse_arguments(acc["arguments"]))


def _usage(raw: JSONObject) -> Usage:
    return Usage(
        input_tokens=as_int(raw.get("prompt_tokens")),
        output_tokens=as_int(raw.get("completion_tokens")),
        # OpenAI's prompt-cache hits (part of prompt_tokens); vLLM and Ollama send none
        cached_input_tokens=as_int(as_object(raw.get("prompt_tokens_details")).get("cached_tokens")),
    )


def _request_text(messages: list[Message], tools: list[ToolSchema]) -> str:
    """Text the model reads; image data URIs are skipped (their base64 says nothing about tokens)."""
    parts: list[str] = []
    for m in messages:
        parts.append(text_of(m["content"]))
        for tc in (m.get("tool_calls") or []) if m["role"] == "assistant" else []:
            parts.append(tc["function"]["name"])
            parts.append(tc["function"]["arguments"])
    if tools:
        parts.append(json.dumps(tools))
    return "".join(parts)


def _output_text(text: str, tool_calls: list[ToolCall]) -> str:
    return text + "".join(tc.name + json.dumps(tc.arguments) for tc in tool_calls)
