"""Provider for any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, Ollama, llama.cpp).

Streams by default so time-to-first-token can be measured; falls back to a plain JSON body when a
server ignores ``stream``. Endpoint failures become ``InfraError`` (or ``EndpointUnreachable`` when
nothing answers at all) so they are never counted as the agent failing the task.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from mcpworld.agent.providers.base import Reply, ToolCall, Usage, parse_arguments
from mcpworld.agent.providers.content_calls import calls_in_text
from mcpworld.agent.providers.http import HttpProvider, Retryable, estimate_tokens, excerpt, sse_data
from mcpworld.errors import InfraError


class OpenAICompatProvider(HttpProvider):
    """Chat completions over HTTP with retries; see module docstring."""

    def __init__(self, *, model: str, temperature: float | None = None, max_tokens: int | None = None,
                 seed: int | None = None, extra_body: dict | None = None, label: str = "openai_compat",
                 **http: Any):
        super().__init__(label=label, **http)
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.extra_body = dict(extra_body or {})

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        payload = self._payload(messages, tools)
        reply = await self.with_retries(lambda: self._attempt(payload))
        if reply.usage.estimated:
            reply.usage.input_tokens = estimate_tokens(_request_text(messages, tools))
        return reply

    # ------------------------------------------------------------------ request

    def _payload(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
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
        body.update(self.extra_body)
        return body

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream, application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    async def _attempt(self, payload: dict[str, Any]) -> Reply:
        return await self.post("chat/completions", payload, self._headers(), self._read_stream, self._read_json)

    # ------------------------------------------------------------------ responses

    async def _read_stream(self, resp: httpx.Response, start: float) -> Reply:
        text_parts: list[str] = []
        reasoning_parts: list[str] = []
        refusal_parts: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        ttft: float | None = None
        usage: Usage | None = None
        finish: str | None = None
        done = False
        async for line in resp.aiter_lines():
            data = sse_data(line)
            if data is None:
                continue
            if data == "[DONE]":
                done = True
                break
            try:
                chunk = json.loads(data)
            except json.JSONDecodeError:
                continue
            if chunk.get("error"):
                # Some servers report failures inside an otherwise 200 stream.
                raise InfraError(self.scrub(f"{self.label} stream error: {excerpt(chunk['error'])}"))
            if chunk.get("usage"):
                usage = _usage(chunk["usage"])
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                got_token = False
                if delta.get("content"):
                    text_parts.append(delta["content"])
                    got_token = True
                # Reasoning tokens are tokens too: ttft should not include a model's thinking time.
                thinking = delta.get("reasoning_content") or delta.get("reasoning")
                if thinking:
                    reasoning_parts.append(str(thinking))
                    got_token = True
                if delta.get("refusal"):
                    refusal_parts.append(delta["refusal"])
                    got_token = True
                for frag in delta.get("tool_calls") or []:
                    _merge_tool_fragment(calls, frag)
                    got_token = True
                if delta.get("function_call"):  # the legacy single-call field
                    _merge_tool_fragment(calls, {"index": 0, "function": delta["function_call"]})
                    got_token = True
                if got_token and ttft is None:
                    ttft = time.perf_counter() - start
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
        if not done and finish is None:  # the body ended mid-reply: a partial answer is not an answer
            raise Retryable(InfraError(self.scrub(f"{self.label} stream from {self.base_url} ended before the reply was complete")))
        return _reply("".join(text_parts), "".join(reasoning_parts), "".join(refusal_parts), calls, usage,
                      finish, ttft)

    def _read_json(self, resp: httpx.Response) -> Reply:
        body = self.json_body(resp)
        if body.get("error"):
            raise InfraError(self.scrub(f"{self.label} error: {excerpt(body['error'])}"))
        choice = (body.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        content = message.get("content") or ""
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        calls: dict[int, dict[str, Any]] = {}
        for i, tc in enumerate(message.get("tool_calls") or []):
            _merge_tool_fragment(calls, {**tc, "index": i})
        if message.get("function_call") and not calls:
            _merge_tool_fragment(calls, {"index": 0, "function": message["function_call"]})
        reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
        return _reply(content, str(reasoning), message.get("refusal") or "", calls,
                      _usage(body["usage"]) if body.get("usage") else None, choice.get("finish_reason"), None)


# ---------------------------------------------------------------------- helpers


THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def split_thinking(text: str) -> tuple[str, str]:
    """(answer, reasoning): ``<think>…</think>`` blocks (LM Studio, some vLLM/Ollama setups) are
    reasoning, not answer; a lone ``</think>`` (servers that drop the opening tag) ends reasoning
    that began with the reply, and an unclosed ``<think>`` runs to the end."""
    reasoning: list[str] = []
    close = text.find(THINK_CLOSE)
    if close >= 0 and THINK_OPEN not in text[:close]:
        reasoning.append(text[:close])
        text = text[close + len(THINK_CLOSE):]
    answer: list[str] = []
    while (start := text.find(THINK_OPEN)) >= 0:
        answer.append(text[:start])
        end = text.find(THINK_CLOSE, start)
        reasoning.append(text[start + len(THINK_OPEN):] if end < 0 else text[start + len(THINK_OPEN):end])
        text = "" if end < 0 else text[end + len(THINK_CLOSE):]
    answer.append(text)
    return "".join(answer).strip() if reasoning else "".join(answer), "\n".join(r.strip() for r in reasoning)


def _reply(text: str, reasoning: str, refusal: str, calls: dict[int, dict[str, Any]], usage: Usage | None,
           finish: str | None, ttft: float | None) -> Reply:
    """One reply from what a stream or a JSON body held: thinking split off the answer, tool calls
    (structured, else written in the answer), a refusal kept as the answer when there is no other."""
    answer, thought = split_thinking(text)
    reasoning = "\n".join(r for r in (reasoning, thought) if r)
    answer, tool_calls = _calls(calls, answer)
    if refusal and not answer:
        answer = refusal
    if usage is None:
        usage = Usage(output_tokens=estimate_tokens(_output_text(answer + reasoning, tool_calls)), estimated=True)
    return Reply(text=answer, tool_calls=tool_calls, usage=usage, ttft_s=ttft, finish_reason=finish,
                 reasoning=reasoning, refusal=refusal)


def _calls(calls: dict[int, dict[str, Any]], text: str) -> tuple[str, list[ToolCall]]:
    """Structured tool calls when the server parsed them, else the ones written into the text."""
    if calls:
        return text, [_to_tool_call(i, calls[i]) for i in sorted(calls)]
    return calls_in_text(text)


def _merge_tool_fragment(calls: dict[int, dict[str, Any]], frag: dict[str, Any]) -> None:
    """Streamed tool calls arrive in pieces keyed by ``index``, the arguments string split. A piece
    with a new ``id`` starts a new call even when its index repeats (Ollama before 0.20.6 sends
    parallel calls all at index 0); a piece without an id continues the latest call at its index."""
    idx, fid = frag.get("index"), frag.get("id")
    same_id = [k for k, c in calls.items() if fid and c["id"] == fid]
    at_index = [k for k, c in calls.items() if idx is None or c["index"] == idx]
    if same_id:
        key = same_id[-1]
    elif at_index and not (fid and calls[at_index[-1]]["id"]):
        key = at_index[-1]
    else:
        key = len(calls)
    acc = calls.setdefault(key, {"id": "", "name": "", "arguments": "", "index": idx})
    if fid:
        acc["id"] = fid
    fn = frag.get("function") or {}
    if fn.get("name") and fn["name"] != acc["name"]:  # some servers repeat the name on every piece
        acc["name"] += fn["name"]
    args = fn.get("arguments")
    if isinstance(args, dict):  # non-standard servers send an object
        acc["arguments"] += json.dumps(args)
    elif args:
        acc["arguments"] += args


def _to_tool_call(i: int, acc: dict[str, Any]) -> ToolCall:
    return ToolCall(id=acc["id"] or f"call_{i}", name=acc["name"], arguments=parse_arguments(acc["arguments"]))


def _usage(raw: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=int(raw.get("prompt_tokens") or 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
    )


def _request_text(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """Text the model reads; image data URIs are skipped (their base64 says nothing about tokens)."""
    parts: list[str] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function") or {}
            parts.append(str(fn.get("name", "")))
            parts.append(str(fn.get("arguments", "")))
    if tools:
        parts.append(json.dumps(tools))
    return "".join(parts)


def _output_text(text: str, tool_calls: list[ToolCall]) -> str:
    return text + "".join(tc.name + json.dumps(tc.arguments) for tc in tool_calls)
