"""Streams as real servers send them, replayed byte for byte by a local HTTP server and read by
the real providers.

Our own small fixtures carry each wire shape (parallel calls sharing ``index: 0`` as Ollama
< 0.20.6 sends them, ids only on the first piece, arguments split over many chunks, empty
arguments, the legacy ``function_call``, whole calls in one chunk, refusals, ``<think>`` blocks
split across chunks, reasoning deltas, in-stream errors, SSE framing variants), so these tests run
anywhere. The recorded transcripts in tests/data/transcripts (see SOURCES.md there for where each
comes from) are replayed too: each with its exact expected reply or error class, and every file in
that folder at least parses or fails as an infra/user error. They are part of the checkout: a
missing or empty folder fails these tests instead of skipping them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpworld.agent.loop import AgentLoop, Limits
from mcpworld.agent.providers.anthropic import AnthropicProvider
from mcpworld.agent.providers.base import Reply
from mcpworld.agent.providers.ollama import OllamaProvider
from mcpworld.agent.providers.openai_compat import OpenAICompatProvider, split_thinking
from mcpworld.agent.tools.done import DoneTool
from mcpworld.core.errors import InfraError, UserError
from mcpworld.core.result import EpisodeResult
from mcpworld.telemetry.trace import Trace
from tests.fakes.replay_server import Recorded, ReplayServer

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "data" / "transcripts"
USER = [{"role": "user", "content": "hi"}]


async def _no_sleep(_: float) -> None:
    pass


def provider_for(name: str, base_url: str, **kw: Any):
    """The provider a transcript was recorded from: Anthropic Messages, Ollama, or OpenAI-compatible."""
    kw.setdefault("max_retries", 0)
    kw.setdefault("sleep", _no_sleep)
    if name.startswith("anthropic"):
        return AnthropicProvider(base_url=base_url, model="claude-x", api_key="k", **kw)
    if name.startswith("ollama"):
        return OllamaProvider(base_url=base_url, model=kw.pop("model", "qwen3-vl:8b"), **kw)
    return OpenAICompatProvider(base_url=base_url, model=kw.pop("model", "m"), **kw)


async def replay(*answers: Recorded, kind: str = "openai", **kw: Any) -> tuple[Reply, ReplayServer]:
    """One ``complete`` against recorded answers (more than one: what retries get)."""
    outcome, server = await attempt(*answers, kind=kind, **kw)
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome, server


async def attempt(*answers: Recorded, kind: str = "openai", **kw: Any) -> tuple[Reply | Exception, ReplayServer]:
    """Like ``replay``, but an error is returned beside the server (to count the requests it got)."""
    with ReplayServer(list(answers)) as server:
        provider = provider_for(kind, server.base_url, **kw)
        try:
            return await provider.complete(list(USER), []), server
        except (InfraError, UserError) as exc:
            return exc, server
        finally:
            await provider.aclose()


async def reply_of(body: bytes, **kw: Any) -> Reply:
    return (await replay(Recorded(body), **kw))[0]


# ----------------------------------------------------------------------------- fixture builders


def sse(*deltas: dict[str, Any], finish: str | None = "stop", usage: dict[str, int] | None = None, done: bool = True) -> bytes:
    """An OpenAI-format stream: one chunk per delta, a finish chunk, a usage chunk, ``[DONE]``."""
    chunks: list[dict[str, Any]] = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    if finish:
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if usage:
        chunks.append({"choices": [], "usage": usage})
    return frames(*chunks) + (b"data: [DONE]\n\n" if done else b"")


def frames(*chunks: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)


def call(i: int | None, id: str | None, name: str | None, args: Any) -> dict[str, Any]:
    """One tool-call piece; None leaves the field out (as servers do on continuation pieces)."""
    fn: dict[str, Any] = {"arguments": args}
    if name is not None:
        fn["name"] = name
    piece: dict[str, Any] = {"type": "function", "function": fn}
    if i is not None:
        piece["index"] = i
    if id is not None:
        piece["id"] = id
    return piece


def calls(*pieces: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(pieces)}


def anthropic_sse(*events: dict[str, Any]) -> bytes:
    """A Messages stream; ``message_start`` and ``message_stop`` are added around ``events``."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    body = [start, *events, {"type": "message_stop"}]
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in body)


def block(i: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_start", "index": i, "content_block": {"type": kind, **fields}}


def delta(i: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": i, "delta": {"type": kind, **fields}}


def stop(reason: str, **details: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"stop_reason": reason, "stop_sequence": None}
    if details:
        d["stop_details"] = {"type": reason, **details}
    return {"type": "message_delta", "delta": d, "usage": {"output_tokens": 7}}


def shape(reply: Reply) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, c.arguments) for c in reply.tool_calls]


CLICK = {"action": "left_click", "coordinate": [5, 6]}
TYPE = {"action": "type", "text": "hi"}


# ----------------------------------------------------------------------------- tool-call pieces


async def test_parallel_calls_sharing_index_0_with_new_ids_stay_two_calls():
    body = sse(
        calls(call(0, "call_a", "computer", json.dumps(CLICK))),
        calls(call(0, "call_b", "computer", json.dumps(TYPE))),
        finish="tool_calls",
    )
    reply = await reply_of(body)
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_a", "computer", CLICK),
        ("call_b", "computer", TYPE),
    ]
    assert reply.finish_reason == "tool_calls"


async def test_parallel_calls_sharing_index_0_in_one_chunk_stay_two_calls():
    body = sse(
        calls(call(0, "call_a", "computer", json.dumps(CLICK)), call(0, "call_b", "computer", json.dumps(TYPE))),
        finish="tool_calls",
    )
    assert shape(await reply_of(body)) == [("computer", CLICK), ("computer", TYPE)]


async def test_same_index_new_id_then_continuations_go_to_the_newest_call():
    body = sse(
        calls(call(0, "call_a", "computer", "")),
        calls(call(0, None, None, '{"action": "left_click", ')),
        calls(call(0, None, None, '"coordinate": [5, 6]}')),
        calls(call(0, "call_b", "done", "")),
        calls(call(0, None, None, '{"status": "DONE"}')),
        finish="tool_calls",
    )
    assert shape(await reply_of(body)) == [("computer", CLICK), ("done", {"status": "DONE"})]


async def test_ids_only_on_first_piece_and_arguments_split_over_many_chunks():
    args = json.dumps({"action": "type", "text": 'a "quoted" word, ünïcode and \\ backslash'})
    pieces = [calls(call(0, "call_a", "computer", ""))] + [
        calls(call(0, None, None, args[i : i + 3])) for i in range(0, len(args), 3)
    ]
    pieces += [calls(call(1, "call_b", "done", "")), calls(call(1, None, None, "{}"))]
    reply = await reply_of(sse(*pieces, finish="tool_calls"))
    assert shape(reply) == [("computer", json.loads(args)), ("done", {})]
    assert [c.id for c in reply.tool_calls] == ["call_a", "call_b"]


async def test_empty_string_arguments_are_no_arguments():
    reply = await reply_of(sse(calls(call(0, "call_a", "done", "")), finish="tool_calls"))
    assert shape(reply) == [("done", {})]


async def test_a_trailing_empty_arguments_piece_with_the_finish_adds_no_call():
    """vLLM (llama3_json parser) ends with ``{"index": 0, "function": {"arguments": ""}}`` and the finish."""
    body = frames(
        {"choices": [{"index": 0, "delta": calls(call(0, "c1", "search", '{"q": "x"}')), "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": calls(call(0, None, None, "")), "finish_reason": "tool_calls"}]},
    )
    reply = await reply_of(body + b"data: [DONE]\n\n")
    assert shape(reply) == [("search", {"q": "x"})] and reply.finish_reason == "tool_calls"


async def test_whole_calls_in_one_chunk_with_distinct_indexes():
    body = sse(
        calls(call(0, "a", "computer", json.dumps(CLICK)), call(1, "b", "computer", json.dumps(TYPE))), finish="tool_calls"
    )
    assert shape(await reply_of(body)) == [("computer", CLICK), ("computer", TYPE)]


async def test_whole_calls_without_index_or_id_stay_apart():
    """Some servers (Gemini's OpenAI endpoint) send each call whole, ``"id": ""`` and no index."""
    body = sse(
        calls(call(None, "", "computer", json.dumps(CLICK))),
        calls(call(None, "", "computer", json.dumps(TYPE))),
        finish="tool_calls",
    )
    reply = await reply_of(body)
    assert shape(reply) == [("computer", CLICK), ("computer", TYPE)]
    assert len({c.id for c in reply.tool_calls}) == 2  # the loop answers each call by its id


async def test_pieces_repeating_type_and_an_empty_name_continue_the_call():
    """LM Studio repeats ``"type": "function"`` and ``"name": ""`` on every piece."""
    body = sse(
        calls(call(0, "365", "count", "")),
        calls(call(0, None, "", '{"word":')),
        calls(call(0, None, "", '"r"}')),
        finish="tool_calls",
    )
    assert shape(await reply_of(body)) == [("count", {"word": "r"})]


async def test_pieces_repeating_the_whole_name_and_id_continue_the_call():
    body = sse(
        calls(call(0, "c1", "computer", '{"action": ')), calls(call(0, "c1", "computer", '"screenshot"}')), finish="tool_calls"
    )
    assert shape(await reply_of(body)) == [("computer", {"action": "screenshot"})]


async def test_a_name_split_over_pieces_is_joined():
    body = sse(
        calls(call(0, "c1", "comp", "")), calls(call(0, None, "uter", "")), calls(call(0, None, None, "{}")), finish="tool_calls"
    )
    assert shape(await reply_of(body)) == [("computer", {})]


async def test_arguments_sent_as_an_object_are_taken_as_is():
    body = sse(calls(call(0, "c1", "computer", CLICK)), finish="tool_calls")
    assert shape(await reply_of(body)) == [("computer", CLICK)]


async def test_legacy_function_call_streamed_in_pieces():
    body = sse(
        {"function_call": {"name": "computer", "arguments": ""}},
        {"function_call": {"arguments": '{"action":'}},
        {"function_call": {"arguments": ' "screenshot"}'}},
        finish="function_call",
    )
    reply = await reply_of(body)
    assert shape(reply) == [("computer", {"action": "screenshot"})] and reply.finish_reason == "function_call"


async def test_unparseable_arguments_are_kept_raw_for_the_loop_to_report():
    reply = await reply_of(sse(calls(call(0, "c1", "computer", '{"action": "left_cl')), finish="length"))
    assert shape(reply) == [("computer", {"_raw": '{"action": "left_cl'})] and reply.finish_reason == "length"


# ----------------------------------------------------------------------------- refusal, reasoning


async def test_a_refusal_is_kept_as_the_answer():
    reply = await reply_of(
        sse(
            {"role": "assistant", "content": None, "refusal": ""},
            {"refusal": "I'm sorry, "},
            {"refusal": "I can't help with that."},
        )
    )
    assert reply.refusal == reply.text == "I'm sorry, I can't help with that."


async def test_a_refusal_in_a_whole_json_message_is_kept():
    body = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "refusal": "No."}, "finish_reason": "stop"}]
    }
    reply, _ = await replay(Recorded(json.dumps(body).encode(), content_type="application/json"))
    assert reply.refusal == reply.text == "No." and reply.finish_reason == "stop"


async def test_think_blocks_split_across_chunks_are_reasoning_not_answer():
    reply = await reply_of(
        sse(
            {"content": "<thi"},
            {"content": "nk>The button is "},
            {"content": "top left.</th"},
            {"content": "ink>\n\nClicking it."},
        )
    )
    assert reply.text == "Clicking it." and reply.reasoning == "The button is top left."


async def test_only_a_closing_think_tag_ends_reasoning_that_began_the_reply():
    reply = await reply_of(sse({"content": "The button is top left."}, {"content": "</think>"}, {"content": "Done."}))
    assert reply.text == "Done." and reply.reasoning == "The button is top left."


async def test_a_tool_call_written_after_a_think_block_is_a_call_and_one_inside_it_is_not():
    text = (
        '<think>maybe <tool_call>{"name": "bash", "arguments": {}}</tool_call></think>'
        '<tool_call>{"name": "done", "arguments": {"status": "DONE"}}</tool_call>'
    )
    reply = await reply_of(sse({"content": text[:20]}, {"content": text[20:]}))
    assert shape(reply) == [("done", {"status": "DONE"})] and "maybe" in reply.reasoning


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning", "thinking"])
async def test_reasoning_deltas_are_reasoning_and_a_tool_call_inside_thinking_is_not_a_call(key):
    reply = await reply_of(sse({key: 'maybe <tool_call>{"name": "done"}</tool_call>'}, {"content": "All set."}))
    assert reply.text == "All set." and "maybe" in reply.reasoning and reply.tool_calls == []


async def test_reasoning_sent_under_two_names_is_kept_once():
    reply = await reply_of(
        sse({"reasoning_content": "a", "reasoning": "a"}, {"reasoning_content": "b", "reasoning": "b"}, {"content": "ok"})
    )
    assert reply.reasoning == "ab" and reply.text == "ok"


async def test_content_parts_with_thinking_parts():
    """Mistral's Magistral streams content as parts, thinking among them."""
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "Look left."}]}
    reply = await reply_of(sse({"content": [thinking]}, {"content": [{"type": "text", "text": "Clicked."}]}))
    assert reply.reasoning == "Look left." and reply.text == "Clicked."


async def test_whole_json_message_with_reasoning_content_and_tool_calls():
    message = {
        "role": "assistant",
        "content": "<think>hm</think>ok",
        "reasoning_content": "first",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "done", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
        ],
    }
    body = {
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 6},
    }
    reply, _ = await replay(Recorded(json.dumps(body).encode(), content_type="application/json"))
    assert shape(reply) == [("done", {}), ("bash", {"command": "ls"})]
    assert reply.text == "ok" and reply.reasoning == "first\nhm"
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.estimated) == (5, 6, False)


@pytest.mark.parametrize(
    "text,answer,reasoning",
    [
        ("plain", "plain", ""),
        ("<think>a</think>b", "b", "a"),
        ("a</think>b", "b", "a"),  # the opening tag dropped by the server
        ("x<think>a", "x", "a"),  # never closed: reasoning to the end
        ("<think>a</think>b<think>c</think>d", "bd", "a\nc"),
        ("<think>\n\n</think>\n\n", "", ""),  # an empty think block (qwen3 with thinking off)
    ],
)
def test_split_thinking(text, answer, reasoning):
    assert split_thinking(text) == (answer, reasoning)


# ----------------------------------------------------------------------------- framing, usage, errors


async def test_sse_framing_variants():
    """CRLF, no space after ``data:``, comments and ``event:`` lines, no blank line between events,
    and one event's JSON spread over two ``data:`` lines (as the SSE spec allows)."""
    c1 = json.dumps({"choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]})
    body = (
        "\ufeff: keep-alive\r\n\r\nevent: message\r\ndata:" + c1 + "\r\n"
        'data: {"choices": [{"index": 0,\n'
        'data: "delta": {"content": "lo"}, "finish_reason": null}]}\n\n'
        'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n'
        "data: [DONE]\n"
    )
    reply = await reply_of(body.encode())
    assert reply.text == "Hello" and reply.finish_reason == "stop"


async def test_a_stream_labelled_as_json_or_text_is_still_read_as_a_stream():
    for content_type in ("application/json", "text/plain; charset=utf-8"):
        reply, _ = await replay(Recorded(sse({"content": "ok"}), content_type=content_type))
        assert reply.text == "ok"


async def test_any_transport_chunking_gives_the_same_reply():
    body = sse(
        {"content": "<think>ab</think>ünï"},
        calls(call(0, "a", "computer", json.dumps(CLICK))),
        calls(call(0, "b", "done", "{}")),
        finish="tool_calls",
        usage={"prompt_tokens": 3, "completion_tokens": 4},
    )
    whole = await reply_of(body)
    for size in (1, 2, 7):
        reply, _ = await replay(Recorded(body, chunk=size))
        assert (
            (reply.text, reply.reasoning, shape(reply))
            == (whole.text, whole.reasoning, shape(whole))
            == ("ünï", "ab", [("computer", CLICK), ("done", {})])
        )


async def test_usage_in_every_chunk_the_last_counts():
    body = (
        frames(
            {
                "choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": None}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 1},
            },
            {
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 2},
            },
        )
        + b"data: [DONE]\n\n"
    )
    reply = await reply_of(body)
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.estimated) == (9, 2, False)


async def test_a_finish_without_done_is_a_whole_reply():
    reply = await reply_of(sse({"content": "ok"}, done=False))
    assert reply.text == "ok"


@pytest.mark.parametrize(
    "error",
    [
        {"error": {"message": "Internal server error", "type": "InternalServerError", "code": 500}},  # vLLM
        {"object": "error", "message": "CUDA out of memory", "type": "InternalServerError", "code": 500},  # old vLLM
        {"error": {"message": "upstream overloaded", "type": "server_error", "code": None}},
        {"error": "model runner has unexpectedly stopped, this may be due to resource limitations (status 500)"},
    ],
)
async def test_a_transient_mid_stream_error_is_retried(error):
    broken = sse({"content": "Let"}, finish=None, done=False) + frames(error)
    reply, server = await replay(Recorded(broken), Recorded(sse({"content": "ok"})), max_retries=1)
    assert reply.text == "ok" and len(server.requests) == 2


async def test_a_mid_stream_error_that_is_not_transient_fails_at_once():
    error = {"error": {"message": "context length exceeded", "type": "invalid_request_error", "code": 400}}
    with pytest.raises(InfraError, match="context length exceeded") as err:
        await replay(
            Recorded(sse({"content": "x"}, finish=None, done=False) + frames(error)),
            Recorded(sse({"content": "ok"})),
            max_retries=2,
        )
    assert "stream error" in str(err.value)


async def test_a_stream_cut_before_the_finish_is_retried_then_an_infra_error():
    cut = Recorded(sse({"content": "I'll"}, finish=None, done=False))
    with pytest.raises(InfraError, match="ended before the reply was complete"):
        await replay(cut, max_retries=1)
    reply, server = await replay(cut, Recorded(sse({"content": "ok"})), max_retries=1)
    assert reply.text == "ok" and len(server.requests) == 2


async def test_429_is_retried_and_400_is_a_clear_error_at_once():
    limited = Recorded(
        json.dumps({"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}).encode(),
        status=429,
        content_type="application/json",
        headers={"retry-after": "0"},
    )
    reply, server = await replay(limited, Recorded(sse({"content": "ok"})), max_retries=2)
    assert reply.text == "ok" and len(server.requests) == 2
    bad = Recorded(
        b'{"object": "error", "message": "bad tool_choice", "type": "BadRequestError", "code": 400}',
        status=400,
        content_type="application/json",
    )
    with pytest.raises(InfraError, match="HTTP 400: bad tool_choice"):
        await replay(bad, Recorded(sse({"content": "ok"})), max_retries=2)


async def test_ollama_model_not_found_names_the_pull_command_for_the_chosen_model():
    body = b'{"error":{"message":"model \'qwen3-vl:8b\' not found","type":"not_found_error","param":null,"code":null}}\n'
    with pytest.raises(InfraError) as err:
        await replay(Recorded(body, status=404, content_type="application/json"), kind="ollama", model="qwen3-vl:8b")
    assert "not found" in str(err.value) and "`ollama pull qwen3-vl:8b`" in str(err.value)


async def test_ollama_with_the_oracle_model_asks_for_a_real_model_and_never_pulls_oracle():
    provider = OllamaProvider(base_url="http://127.0.0.1:9/v1", model="oracle")
    with pytest.raises(UserError) as err:
        await provider.preflight()
    assert "model=qwen3vl_8b" in str(err.value) and "ollama pull oracle" not in str(err.value)


def test_the_ollama_hint_names_a_real_model_never_the_oracle():
    from mcpworld.agent.providers import ollama_model_hint
    from mcpworld.agent.providers.ollama import pull_hint

    for hint in (ollama_model_hint("oracle", "oracle"), pull_hint("oracle")):
        assert "model=qwen3vl_8b" in hint and "ollama pull oracle" not in hint
    assert "`ollama pull qwen3-vl:32b`" in ollama_model_hint("qwen3vl_32b", "qwen3-vl:32b")
    assert "`ollama pull qwen3-vl:32b`" in pull_hint("qwen3-vl:32b")


# ----------------------------------------------------------------------------- Anthropic shapes


async def test_anthropic_thinking_text_and_tool_use():
    body = anthropic_sse(
        block(0, "thinking", thinking="", signature=""),
        delta(0, "thinking_delta", thinking="Save "),
        delta(0, "thinking_delta", thinking="is top left."),
        delta(0, "signature_delta", signature="s"),
        block(1, "text", text=""),
        delta(1, "text_delta", text="Clicking."),
        block(2, "tool_use", id="toolu_1", name="computer", input={}),
        delta(2, "input_json_delta", partial_json=""),
        delta(2, "input_json_delta", partial_json='{"action": "left_click", '),
        delta(2, "input_json_delta", partial_json='"coordinate": [5, 6]}'),
        stop("tool_use"),
    )
    reply = await reply_of(body, kind="anthropic")
    assert reply.reasoning == "Save is top left." and reply.text == "Clicking."
    assert shape(reply) == [("computer", CLICK)] and reply.finish_reason == "tool_use" and not reply.refusal


async def test_anthropic_redacted_thinking_is_neither_text_nor_reasoning():
    body = anthropic_sse(
        block(0, "redacted_thinking", data="opaque"),
        block(1, "text", text=""),
        delta(1, "text_delta", text="Hi"),
        stop("end_turn"),
    )
    reply = await reply_of(body, kind="anthropic")
    assert reply.text == "Hi" and reply.reasoning == ""


async def test_anthropic_refusal_without_text_keeps_the_explanation_as_the_answer():
    body = anthropic_sse(block(0, "text", text=""), stop("refusal", category="cyber", explanation="Refused by policy."))
    reply = await reply_of(body, kind="anthropic")
    assert reply.finish_reason == "refusal" and "Refused by policy." in reply.refusal and reply.text == reply.refusal


async def test_anthropic_refusal_after_text_keeps_the_text():
    body = anthropic_sse(block(0, "text", text=""), delta(0, "text_delta", text="I won't do that."), stop("refusal"))
    reply = await reply_of(body, kind="anthropic")
    assert reply.text == "I won't do that." and reply.refusal == "I won't do that."


async def test_anthropic_refusal_with_nothing_said_still_says_it_declined():
    reply = await reply_of(anthropic_sse(stop("refusal")), kind="anthropic")
    assert "declined" in reply.refusal and reply.text == reply.refusal


async def test_anthropic_overloaded_event_mid_stream_is_retried():
    overloaded = b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    ok = anthropic_sse(block(0, "text", text=""), delta(0, "text_delta", text="ok"), stop("end_turn"))
    reply, server = await replay(Recorded(overloaded), Recorded(ok), kind="anthropic", max_retries=1)
    assert reply.text == "ok" and len(server.requests) == 2


# ----------------------------------------------------------------------------- into the trace


async def test_reasoning_and_refusal_reach_the_trace(tmp_path: Path):
    refusal = sse({"reasoning_content": "Risky."}, {"refusal": "I can't do that."})
    done = sse({"content": "<think>Fine now.</think>"}, calls(call(0, "c1", "done", '{"status": "DONE"}')), finish="tool_calls")
    trace = Trace(tmp_path / "trace.jsonl")
    result = EpisodeResult(task_id="app/task", app="app")
    with ReplayServer([Recorded(refusal), Recorded(done)]) as server:
        provider = OpenAICompatProvider(base_url=server.base_url, model="m", max_retries=0)
        loop = AgentLoop(provider, {"done": DoneTool()}, Limits(5, 5, 30.0), trace, result)
        try:
            await loop.run("system", "Do it.", None)
        finally:
            trace.close()
            await provider.aclose()
    calls_ = [e for e in trace.events if e["type"] == "llm_call"]
    assert calls_[0]["refusal"] == calls_[0]["text"] == "I can't do that." and calls_[0]["reasoning"] == "Risky."
    assert calls_[1]["reasoning"] == "Fine now." and calls_[1]["tool_calls"] == ["done"]
    assert result.termination == "done", result.reason


# ----------------------------------------------------------------------------- recorded transcripts

CLICK_500_300 = {"action": "left_click", "coordinate": [500, 300]}
PARALLEL = [
    ("GetWeatherArgs", {"city": "Edinburgh", "country": "GB", "units": "c"}),
    ("get_stock_price", {"ticker": "AAPL", "exchange": "NASDAQ"}),
]
OLLAMA_PARALLEL = {
    "calls": [("computer", CLICK_500_300), ("computer", {"action": "type", "text": "hello world"})],
    "ids": ["call_a81kq0ze", "call_v2n6c4xw"],
    "finish": "tool_calls",
    "text": "",
}
FINAL_ANSWER = [("final_answer", {"trigger": True})]

# file → what the reply must be: calls [(name, arguments)], ids, text (exact, or a prefix with
# text_starts), reasoning (prefix), refusal (substring), finish, usage (in, out); a key left out is not checked.
EXPECTED: dict[str, dict[str, Any]] = {
    "openai_text.sse": {
        "calls": [],
        "text_starts": "I'm unable to provide real-time weather updates.",
        "finish": "stop",
        "usage": (14, 30),
        "reasoning": "",
        "refusal": "",
    },
    "openai_tool_call.sse": {
        "calls": [("get_weather", {"city": "New York City"})],
        "ids": ["call_4XzlGBLtUe9dy3GVNV4jhq7h"],
        "text": "",
        "finish": "tool_calls",
        "usage": (44, 16),
    },
    "openai_parallel_tools.sse": {
        "calls": PARALLEL,
        "text": "",
        "finish": "tool_calls",
        "usage": (149, 60),
        "ids": ["call_JMW1whyEaYG438VE1OIflxA2", "call_DNYTawLBoN8fj3KN6qU9N1Ou"],
    },
    "openai_nonstream_parallel.json": {
        "calls": PARALLEL,
        "text": "",
        "finish": "tool_calls",
        "usage": (149, 60),
        "ids": ["call_fdNz3vOBKYgOIpMdWotB9MjY", "call_h1DWI1POMJLb0KwIyQHWXD4p"],
    },
    "openai_length.sse": {"calls": [], "text": '{"', "finish": "length", "usage": (79, 1)},
    "openai_refusal.sse": {
        "calls": [],
        "text": "I'm sorry, I can't assist with that request.",
        "refusal": "I'm sorry, I can't assist with that request.",
        "finish": "stop",
    },
    "lmstudio_tool.sse": {
        "calls": [("count_letters", {"word": "strawberry", "letter": "r"})],
        "ids": ["365174485"],
        "text": "",
        "reasoning": "",
        "finish": "tool_calls",
    },
    "ollama_head_tool.sse": {
        "calls": [("computer", CLICK_500_300)],
        "ids": ["call_k3v9x2qa"],
        "text": "",
        "finish": "tool_calls",
        "usage": (1873, 31),
    },
    "ollama_head_thinking_tool.sse": {
        "calls": [("computer", CLICK_500_300)],
        "text": "",
        "finish": "tool_calls",
        "reasoning": "The Save button is at the top left.",
    },
    "ollama_v0205_parallel_one_chunk.sse": OLLAMA_PARALLEL,
    "ollama_v0205_parallel_separate.sse": OLLAMA_PARALLEL,
    "ollama_v0205_text_tool.sse": {
        "calls": [("computer", CLICK_500_300)],
        "ids": ["call_4ow1f9hs"],
        "text": "I'll click Save.",
        "finish": "tool_calls",
    },
    "vllm_hermes_two_calls.sse": {
        "calls": [("search", {"q": "cats"}), ("search", {"q": "dogs"})],
        "text": "",
        "finish": "tool_calls",
        "usage": (310, 32),
    },
    "vllm_llama31_tool.sse": {
        "calls": [("searchGoogle", {"query": "latest news on ai"})],
        "text": "",
        "ids": ["chatcmpl-tool-b3b307239370432d9910d4b79b4dbbaa"],
        "finish": "tool_calls",
        "usage": (226, 20),
    },
    "vllm_no_parser_tool_text.sse": {"calls": FINAL_ANSWER, "text": "", "finish": "stop"},
    "vllm_no_parser_tool_text_eos.sse": {"calls": FINAL_ANSWER, "text": "", "finish": "length"},
    "anthropic_text.sse": {"calls": [], "text": "Hello there!", "finish": "end_turn", "usage": (11, 6)},
    "anthropic_tool_use.sse": {
        "calls": [("get_weather", {"location": "Paris"})],
        "ids": ["toolu_01NRLabsLyVHZPKxbKvkfSMn"],
        "text": "I'll check the current weather in Paris for you.",
        "finish": "tool_use",
    },
    "anthropic_computer_use.sse": {
        "calls": [("computer", {"action": "left_click", "coordinate": [512, 384]})],
        "text": "I'll click the Save button.",
        "finish": "tool_use",
    },
    "anthropic_tool_no_args.sse": {
        "calls": [("updateIssueList", {})],
        "finish": "tool_use",
        "text": "I'll update the issue list for you.",
    },
    "anthropic_quoted_tool_input.sse": {
        "calls": [
            (
                "website_update",
                {
                    "website_path": "/home/user/pace-landing",
                    "tasks": [
                        {
                            "description": "Today you post every run to Strava, but Strava does not answer the question: "
                            '"What should I do next after this run?". It is a great log, but it is not adaptive.',
                            "type": "feature",
                            "passes": False,
                        }
                    ],
                },
            )
        ],
        "text": "",
        "finish": "tool_use",
        "usage": (912, 118),
    },
    "anthropic_max_tokens_partial_json.sse": {
        "raw_call": "make_file",
        "finish": "max_tokens",
        "text_starts": "I'll create a comprehensive tax guide",
    },
    "anthropic_refusal.sse": {"calls": [], "refusal": "This request was refused due to policy.", "finish": "refusal"},
    "anthropic_thinking_refusal.sse": {
        "calls": [],
        "text": "Hi",
        "refusal": "Hi",
        "finish": "refusal",
        "reasoning": "Simple educational question about what a solar eclipse is.",
        "usage": (28, 106),
    },
}

# file → (HTTP status it is served with, retried?, what the message says)
ERRORS: dict[str, tuple[int, bool, str]] = {
    "openai_429.json": (429, True, "Rate limit reached"),
    "anthropic_529.json": (529, True, "Overloaded"),
    "anthropic_stream_overloaded.sse": (200, True, "overloaded_error"),
    "ollama_head_midstream_error.sse": (200, True, "ended before the reply was complete"),
    "vllm_stream_error.sse": (200, True, "Internal server error"),
    "ollama_404.json": (404, False, "`ollama pull qwen3-vl:8b`"),
    "vllm_400_auto_tool_choice.json": (400, False, "--enable-auto-tool-choice"),
}


def recorded(name: str) -> Recorded:
    path = TRANSCRIPTS / name
    assert path.is_file(), f"{path} is missing (the recorded transcripts are part of the checkout)"
    status = ERRORS.get(name, (200, False, ""))[0]
    return Recorded(
        path.read_bytes(), status=status, content_type="text/event-stream" if name.endswith(".sse") else "application/json"
    )


def check(reply: Reply, want: dict[str, Any]) -> None:
    if "calls" in want:
        assert shape(reply) == want["calls"]
    if "raw_call" in want:  # arguments cut off by the token limit: kept raw, for the loop to report
        assert [c.name for c in reply.tool_calls] == [want["raw_call"]] and "_raw" in reply.tool_calls[0].arguments
    if "ids" in want:
        assert [c.id for c in reply.tool_calls] == want["ids"]
    if "text" in want:
        assert reply.text == want["text"]
    if "text_starts" in want:
        assert reply.text.startswith(want["text_starts"])
    assert "<think>" not in reply.text and "</think>" not in reply.text
    if "reasoning" in want:
        assert reply.reasoning.startswith(want["reasoning"]) and bool(reply.reasoning) == bool(want["reasoning"])
    if "refusal" in want:
        assert want["refusal"] in reply.refusal and bool(reply.refusal) == bool(want["refusal"])
    if "finish" in want:
        assert reply.finish_reason == want["finish"]
    if "usage" in want:
        assert (reply.usage.input_tokens, reply.usage.output_tokens) == want["usage"] and not reply.usage.estimated


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_recorded_transcripts_parse(name):
    reply, server = await replay(recorded(name), kind=name)
    check(reply, EXPECTED[name])
    assert len(server.requests) == 1 and reply.ttft_s is not None


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if n.endswith(".sse")))
async def test_recorded_streams_parse_the_same_in_any_transport_chunks(name):
    rec = recorded(name)
    rec.chunk = 3
    reply, _ = await replay(rec, kind=name)
    check(reply, EXPECTED[name])


@pytest.mark.parametrize("name", sorted(ERRORS))
async def test_recorded_errors(name):
    _status, retried, says = ERRORS[name]
    with pytest.raises(InfraError) as err:
        await replay(recorded(name), kind=name, max_retries=2)
    assert says in str(err.value)
    rec = recorded(name)
    good = (
        anthropic_sse(block(0, "text", text=""), delta(0, "text_delta", text="ok"), stop("end_turn"))
        if name.startswith("anthropic")
        else sse({"content": "ok"})
    )
    outcome, server = await attempt(rec, Recorded(good), kind=name, max_retries=2)
    if retried:  # a transient failure, then the server answers: the reply is the answer
        assert isinstance(outcome, Reply) and outcome.text == "ok" and len(server.requests) == 2
    else:  # a configuration mistake: no retry, the message says what is wrong
        assert isinstance(outcome, InfraError) and len(server.requests) == 1


def present() -> set[str]:
    return {p.name for p in TRANSCRIPTS.glob("*") if p.suffix in (".sse", ".json")} if TRANSCRIPTS.is_dir() else set()


def test_the_transcripts_are_in_the_checkout():
    assert TRANSCRIPTS.is_dir(), f"{TRANSCRIPTS} is missing"
    assert present(), f"{TRANSCRIPTS} has no transcripts"
    assert (TRANSCRIPTS / "SOURCES.md").is_file(), "SOURCES.md says where each transcript comes from"


def test_every_known_transcript_is_expected_somewhere():
    assert set(EXPECTED) | set(ERRORS) <= present()


def every_transcript() -> list[str]:
    """The transcripts in the folder, and the known ones even when they are not there (so that a
    missing folder fails each of them rather than leaving an empty, skipped parameter set)."""
    return sorted(present() | set(EXPECTED) | set(ERRORS))


@pytest.mark.parametrize("name", every_transcript())
async def test_every_transcript_parses_or_fails_as_an_infra_or_user_error(name):
    """Also transcripts added later: a reply whose calls all have parsed arguments (unless the
    token limit cut them), or an error the episode reports as infra_error or a user mistake."""
    reply, _ = await attempt(recorded(name), kind=name)
    if isinstance(reply, Exception):
        return
    cut = reply.finish_reason in ("length", "max_tokens")
    assert all(c.name and (cut or "_raw" not in c.arguments) for c in reply.tool_calls), reply
    assert reply.text or reply.tool_calls or reply.refusal or reply.reasoning or cut, reply
    assert "<think>" not in reply.text
