"""Streams as real servers send them, replayed byte for byte by a local HTTP server and read by
the real provider: parallel calls that share ``index: 0`` (Ollama < 0.20.6), refusals, ``<think>``
blocks (LM Studio), reasoning deltas, legacy shapes. Our own fixtures carry each shape; the
recorded transcripts in shared/reference/transcripts are replayed too where they are present."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mcpworld.agent.providers.openai_compat import OpenAICompatProvider, split_thinking
from mcpworld.errors import InfraError

TRANSCRIPTS = Path(__file__).resolve().parents[3] / "shared" / "reference" / "transcripts"


class Replay:
    """Answers every POST with one recorded body (SSE or JSON) and status."""

    def __init__(self, body: bytes, status: int = 200, sse: bool = True):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(outer.status)
                self.send_header("content-type", "text/event-stream" if outer.sse else "application/json")
                self.send_header("content-length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

        self.body, self.status, self.sse = body, status, sse
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def replay(body: bytes, status: int = 200, sse: bool = True):
    server = Replay(body, status, sse)
    provider = OpenAICompatProvider(base_url=server.url, model="m", max_retries=0)
    try:
        return await provider.complete([{"role": "user", "content": "hi"}], [])
    finally:
        await provider.aclose()
        server.close()


def sse(*deltas: dict, finish: str = "stop") -> bytes:
    chunks = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def call(i: int, id: str | None, name: str | None, args: str) -> dict:
    fn = {"arguments": args, **({"name": name} if name else {})}
    return {"tool_calls": [{"index": i, **({"id": id} if id else {}), "type": "function", "function": fn}]}


async def test_parallel_calls_sharing_index_0_with_new_ids_stay_two_calls():
    reply = await replay(sse(call(0, "call_a", "computer", '{"action": "left_click", "coordinate": [5, 6]}'),
                             call(0, "call_b", "computer", '{"action": "type", "text": "hi"}'), finish="tool_calls"))
    assert [(c.id, c.arguments["action"]) for c in reply.tool_calls] == [("call_a", "left_click"), ("call_b", "type")]


async def test_arguments_split_over_pieces_without_ids_continue_their_call():
    reply = await replay(sse(call(0, "call_a", "computer", '{"action": "ke'), call(0, None, None, 'y", "text": "a"}'),
                             call(1, "call_b", "done", ""), call(1, None, None, "{}"), finish="tool_calls"))
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("computer", {"action": "key", "text": "a"}),
                                                                 ("done", {})]


async def test_a_refusal_is_kept_as_the_answer():
    reply = await replay(sse({"role": "assistant", "refusal": "I'm sorry, "}, {"refusal": "I can't help with that."}))
    assert reply.refusal == reply.text == "I'm sorry, I can't help with that."


async def test_think_blocks_split_across_chunks_are_reasoning_not_answer():
    reply = await replay(sse({"content": "<thi"}, {"content": "nk>The button is "}, {"content": "top left.</th"},
                             {"content": "ink>\n\nClicking it."}))
    assert reply.text == "Clicking it." and reply.reasoning == "The button is top left."


async def test_reasoning_deltas_are_reasoning_and_a_tool_call_inside_thinking_is_not_a_call():
    reply = await replay(sse({"reasoning_content": "maybe <tool_call>{\"name\": \"done\"}</tool_call>"},
                             {"content": "All set."}))
    assert reply.text == "All set." and "maybe" in reply.reasoning and reply.tool_calls == []


@pytest.mark.parametrize("text,answer,reasoning", [
    ("plain", "plain", ""),
    ("<think>a</think>b", "b", "a"),
    ("a</think>b", "b", "a"),  # the opening tag dropped by the server
    ("x<think>a", "x", "a"),  # never closed: reasoning to the end
    ("<think>a</think>b<think>c</think>d", "bd", "a\nc"),
])
def test_split_thinking(text, answer, reasoning):
    assert split_thinking(text) == (answer, reasoning)


# The recorded transcripts: file → (tool calls by name, or None when the count check says it; a reply check)
OPENAI_LIKE = {
    "openai_text.sse": ([], lambda r: r.text),
    "openai_tool_call.sse": (["get_weather"], None),
    "openai_parallel_tools.sse": (["GetWeatherArgs", "get_stock_price"], None),
    "openai_length.sse": ([], lambda r: r.finish_reason == "length"),
    "openai_refusal.sse": ([], lambda r: r.refusal and r.text == r.refusal),
    "lmstudio_tool.sse": (["count_letters"], lambda r: "<think>" not in r.text),
    "ollama_head_tool.sse": (["computer"], None),
    "ollama_head_thinking_tool.sse": (["computer"], lambda r: "Save button" in r.reasoning),
    "ollama_v0205_parallel_one_chunk.sse": (["computer", "computer"], None),
    "ollama_v0205_parallel_separate.sse": (["computer", "computer"], None),
    "ollama_v0205_text_tool.sse": (None, None),
    "vllm_hermes_two_calls.sse": (None, lambda r: len(r.tool_calls) == 2),
    "vllm_llama31_tool.sse": (None, lambda r: len(r.tool_calls) == 1),
    "vllm_no_parser_tool_text.sse": (None, lambda r: len(r.tool_calls) >= 1),
    "vllm_no_parser_tool_text_eos.sse": (None, lambda r: len(r.tool_calls) >= 1),
    "openai_nonstream_parallel.json": (["GetWeatherArgs", "get_stock_price"], None),
}
ERRORS = ("ollama_head_midstream_error.sse", "vllm_stream_error.sse", "openai_429.json", "ollama_404.json",
          "vllm_400_auto_tool_choice.json")


def recorded(name: str) -> bytes:
    path = TRANSCRIPTS / name
    if not path.is_file():
        pytest.skip(f"{path} is not here (shared/reference is beside the checkout in development and CI)")
    return path.read_bytes()


@pytest.mark.parametrize("name", sorted(OPENAI_LIKE))
async def test_recorded_transcripts_parse(name):
    names, check = OPENAI_LIKE[name]
    reply = await replay(recorded(name), sse=name.endswith(".sse"))
    if names is not None:
        assert [c.name for c in reply.tool_calls] == names
    assert all(isinstance(c.arguments, dict) and "_raw" not in c.arguments for c in reply.tool_calls)
    if check is not None:
        assert check(reply), reply


@pytest.mark.parametrize("name", ERRORS)
async def test_recorded_errors_are_infra_errors_or_user_errors(name):
    from mcpworld.errors import UserError

    status = {"openai_429.json": 429, "ollama_404.json": 404, "vllm_400_auto_tool_choice.json": 400}.get(name, 200)
    with pytest.raises((InfraError, UserError)):
        await replay(recorded(name), status=status, sse=name.endswith(".sse"))


def test_the_ollama_hint_names_a_real_model_never_the_oracle():
    from mcpworld.agent.providers import ollama_model_hint

    assert "model=qwen3vl_8b" in ollama_model_hint("oracle", "oracle")
    assert "ollama pull oracle" not in ollama_model_hint("oracle", "oracle")
    assert "`ollama pull qwen3-vl:32b`" in ollama_model_hint("qwen3vl_32b", "qwen3-vl:32b")


ANTHROPIC = {
    "anthropic_text.sse": lambda r: r.text and not r.tool_calls,
    "anthropic_tool_use.sse": lambda r: len(r.tool_calls) == 1 and r.tool_calls[0].name,
    "anthropic_computer_use.sse": lambda r: r.tool_calls[0].arguments == {"action": "left_click",
                                                                           "coordinate": [512, 384]},
    "anthropic_tool_no_args.sse": lambda r: len(r.tool_calls) == 1 and r.tool_calls[0].arguments == {},
    "anthropic_quoted_tool_input.sse": lambda r: len(r.tool_calls) == 1,
    "anthropic_max_tokens_partial_json.sse": lambda r: r.finish_reason == "max_tokens",
    "anthropic_refusal.sse": lambda r: r.finish_reason == "refusal" and r.refusal,
    "anthropic_thinking_refusal.sse": lambda r: r.refusal and r.reasoning,
}


async def anthropic_replay(body: bytes, status: int = 200, sse: bool = True):
    from mcpworld.agent.providers.anthropic import AnthropicProvider

    server = Replay(body, status, sse)
    provider = AnthropicProvider(model="m", base_url=server.url.removesuffix("/v1"), api_key="k", max_retries=0)
    try:
        return await provider.complete([{"role": "user", "content": "hi"}], [])
    finally:
        await provider.aclose()
        server.close()


@pytest.mark.parametrize("name", sorted(ANTHROPIC))
async def test_recorded_anthropic_transcripts_parse(name):
    reply = await anthropic_replay(recorded(name))
    assert ANTHROPIC[name](reply), reply


@pytest.mark.parametrize("name,status", [("anthropic_stream_overloaded.sse", 200), ("anthropic_529.json", 529)])
async def test_recorded_anthropic_errors_are_infra_errors(name, status):
    with pytest.raises(InfraError):
        await anthropic_replay(recorded(name), status=status, sse=name.endswith(".sse"))
