"""AnthropicProvider against a real local HTTP server speaking the Anthropic Messages protocol."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpworld.agent.loop import AgentLoop, Limits, image_part
from mcpworld.agent.providers.anthropic import AnthropicProvider
from mcpworld.agent.tools.bash import BashTool
from mcpworld.agent.tools.computer import ComputerTool, CoordinateMap
from mcpworld.agent.tools.done import DoneTool
from mcpworld.core.errors import EndpointUnreachable, InfraError
from mcpworld.core.result import EpisodeResult
from mcpworld.telemetry.trace import Trace
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.scripted_server import free_port
from tests.helpers.anthropic import USER, Sleeps, make, tool_schemas, walk_blocks
from tests.helpers.environments import FakeDesktop

SHOT = image_part(b"\xff\xd8fake-jpeg", "jpeg")  # data:image/jpeg;base64,...
SHOT_B64 = SHOT["image_url"]["url"].split(",", 1)[1]
COMPUTER_20250124 = {"type": "computer_20250124", "name": "computer", "display_width_px": 1024, "display_height_px": 768}


async def complete(server: FakeAnthropicServer, messages=USER, tools=(), **kw: Any):
    provider = make(server, **kw)
    try:
        return await provider.complete(list(messages), list(tools))
    finally:
        await provider.aclose()


# ----------------------------------------------------------------------------- replies


async def test_text_reply_usage_and_ttft():
    usage = {"input_tokens": 100, "cache_creation_input_tokens": 20, "cache_read_input_tokens": 300, "output_tokens": 9}
    script = [{"text": "Hello there, world", "usage": usage, "delay_first_s": 0.1, "chunk_delay_s": 0.05}]
    with FakeAnthropicServer(script) as server:
        reply = await complete(server, temperature=0.3, max_tokens=64)
    assert reply.text == "Hello there, world" and reply.tool_calls == []
    assert reply.finish_reason == "end_turn"
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.estimated) == (420, 9, False)
    # message_start and ping arrive before the first text delta; ttft waits for the text
    assert reply.ttft_s is not None and reply.ttft_s >= 0.1 + 0.05 * 2
    assert reply.latency_s >= reply.ttft_s
    body = server.requests[0]
    assert body["model"] == "claude-fake" and body["stream"] is True
    assert body["max_tokens"] == 64 and body["temperature"] == 0.3
    # the latest user turn is a cache breakpoint, as the reference agent sets them
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}
    ]
    assert "system" not in body and "tools" not in body


async def test_max_tokens_defaults_and_temperature_omitted():
    with FakeAnthropicServer() as server:
        reply = await complete(server)
    assert reply.text == "done"
    assert server.requests[0]["max_tokens"] == 4096 and "temperature" not in server.requests[0]


async def test_tool_use_assembled_from_split_deltas():
    inputs = {"action": "left_click", "coordinate": [120, 45], "text": "a longer string to split"}
    script = [
        {
            "text": "Clicking.",
            "tool_uses": [
                {"id": "toolu_abc", "name": "computer", "input": inputs},
                {"id": "toolu_def", "name": "bash", "input": {"command": "ls -la"}},
            ],
        }
    ]
    with FakeAnthropicServer(script) as server:
        reply = await complete(server)
    assert reply.text == "Clicking."
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("toolu_abc", "computer", inputs),
        ("toolu_def", "bash", {"command": "ls -la"}),
    ]
    assert reply.finish_reason == "tool_use"


async def test_tool_use_without_input_deltas_is_empty_dict():
    with FakeAnthropicServer([{"tool_uses": [{"id": "toolu_1", "name": "computer", "input": ""}]}]) as server:
        reply = await complete(server)
    assert reply.tool_calls[0].arguments == {}


async def test_malformed_tool_input_kept_raw():
    script = [{"tool_uses": [{"id": "toolu_x", "name": "computer", "input": '{"action": "left_click", "coo'}]}]
    with FakeAnthropicServer(script) as server:
        reply = await complete(server)
    assert reply.tool_calls[0].arguments == {"_raw": '{"action": "left_click", "coo'}


@pytest.mark.parametrize("stop", ["max_tokens", "stop_sequence", "refusal"])
async def test_stop_reason_passed_through(stop: str):
    with FakeAnthropicServer([{"text": "partial", "stop_reason": stop}]) as server:
        reply = await complete(server)
    assert reply.finish_reason == stop


async def test_usage_estimated_when_server_sends_none():
    with FakeAnthropicServer([{"text": "x" * 40, "usage": False}]) as server:
        reply = await complete(server, messages=[{"role": "user", "content": "y" * 80}])
    assert reply.usage.estimated is True
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (20, 10)


async def test_non_stream_json_body_accepted():
    script = [
        {
            "ignore_stream": True,
            "text": "plain",
            "tool_uses": [{"id": "toolu_1", "name": "done", "input": {"status": "DONE"}}],
            "usage": {"input_tokens": 11, "cache_read_input_tokens": 4, "output_tokens": 3},
        }
    ]
    with FakeAnthropicServer(script) as server:
        reply = await complete(server)
    assert reply.text == "plain"
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("toolu_1", "done", {"status": "DONE"})]
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.estimated) == (15, 3, False)
    assert reply.finish_reason == "tool_use"
    assert reply.ttft_s == reply.latency_s > 0


# ----------------------------------------------------------------------------- request translation


def loop_conversation() -> list[dict[str, Any]]:
    """What AgentLoop sends after two tool calls with a screenshot, then a no-tool reply and the nudge."""
    return [
        {"role": "system", "content": "You operate a desktop."},
        {"role": "user", "content": [{"type": "text", "text": "Open the file."}, SHOT]},
        {
            "role": "assistant",
            "content": "I will click, then list.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "computer", "arguments": '{"action": "left_click", "coordinate": [10, 20]}'},
                },
                {"id": "toolu_2", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "ok"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "a.txt\n[exit code 0]"},
        {"role": "user", "content": [SHOT]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "toolu_3", "type": "function", "function": {"name": "computer", "arguments": '{"action": "screenshot"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_3", "content": ""},
        {"role": "user", "content": [{"type": "text", "text": "[older screenshot removed to save context]"}, SHOT]},
        {"role": "assistant", "content": "Thinking...", "tool_calls": []},
        {"role": "user", "content": "Continue with a tool call, or call `done` when the task is finished."},
    ]


async def test_loop_conversation_translated_to_messages(tmp_path: Path):
    with FakeAnthropicServer() as server:
        await complete(server, messages=loop_conversation(), tools=tool_schemas(tmp_path))
    body = server.requests[0]
    jpeg = {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": SHOT_B64}}

    assert body["system"] == [{"type": "text", "text": "You operate a desktop.", "cache_control": {"type": "ephemeral"}}]
    msgs = body["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    cached = {"cache_control": {"type": "ephemeral"}}
    assert msgs[0]["content"] == [{"type": "text", "text": "Open the file."}, jpeg]  # the 4th user turn back
    assert msgs[1]["content"] == [
        {"type": "text", "text": "I will click, then list."},
        {"type": "tool_use", "id": "toolu_1", "name": "computer", "input": {"action": "left_click", "coordinate": [10, 20]}},
        {"type": "tool_use", "id": "toolu_2", "name": "bash", "input": {"command": "ls"}},
    ]
    # both results in one user turn; the screenshot (no call claims it) sits inside the last one
    assert msgs[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "ok"}], "is_error": False},
        {
            "type": "tool_result",
            "tool_use_id": "toolu_2",
            "content": [{"type": "text", "text": "a.txt\n[exit code 0]"}, jpeg],
            "is_error": False,
            **cached,
        },
    ]
    assert msgs[3]["content"] == [{"type": "tool_use", "id": "toolu_3", "name": "computer", "input": {"action": "screenshot"}}]
    # an empty result gets no empty text block; the image-with-text user message follows as its own blocks
    assert msgs[4]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_3", "is_error": False},
        {"type": "text", "text": "[older screenshot removed to save context]"},
        {**jpeg, **cached},
    ]
    assert msgs[5]["content"] == [{"type": "text", "text": "Thinking..."}]
    assert msgs[6]["content"] == [{"type": "text", "text": msgs[6]["content"][0]["text"], **cached}]
    assert msgs[6]["content"][0]["text"].startswith("Continue with a tool call")

    tools = body["tools"]
    assert tools[0] == COMPUTER_20250124
    assert tools[1] == {"type": "bash_20250124", "name": "bash"}
    assert tools[2]["name"] == "done" and "type" not in tools[2]
    assert tools[2]["input_schema"]["required"] == ["status"] and tools[2]["description"]
    assert tools[3] == {"name": "calc_sum", "description": "Add numbers", "input_schema": {"type": "object", "properties": {}}}
    # the system prompt's breakpoint caches the tools before it: no breakpoint of their own (4 at most)
    assert all("cache_control" not in t for t in tools)
    assert json.dumps(body).count("cache_control") == 4


async def test_empty_and_repeated_messages_merged_never_empty_text(tmp_path: Path):
    messages = [
        {"role": "system", "content": "one"},
        {"role": "system", "content": "two"},
        {"role": "user", "content": "first"},
        {"role": "user", "content": [{"type": "text", "text": ""}]},
        {"role": "assistant", "content": None},  # an empty reply: dropped, so the users around it merge
        {"role": "user", "content": "second"},
    ]
    with FakeAnthropicServer() as server:
        await complete(server, messages=messages, prompt_caching=False)
    body = server.requests[0]
    assert body["system"] == [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]}
    ]


async def test_without_tool_types_computer_and_bash_are_plain_tools(tmp_path: Path):
    with FakeAnthropicServer() as server:
        await complete(server, tools=tool_schemas(tmp_path), computer_tool=None, bash_tool=None, prompt_caching=False)
    tools = server.requests[0]["tools"]
    assert [t["name"] for t in tools] == ["computer", "bash", "done", "calc_sum"]
    assert all("type" not in t and "input_schema" in t and "cache_control" not in t for t in tools)
    assert tools[0]["input_schema"]["properties"]["action"]["enum"][0] == "key"


async def test_headers():
    with FakeAnthropicServer() as server:
        await complete(server, api_key="sk-ant-test", betas=["computer-use-2025-01-24", "token-efficient-tools-2025-02-19"])
        await complete(server, betas=[])
    first, second = server.headers
    assert first["x-api-key"] == "sk-ant-test"
    assert first["anthropic-version"] == "2023-06-01"
    assert first["anthropic-beta"] == "computer-use-2025-01-24,token-efficient-tools-2025-02-19"
    assert first["content-type"] == "application/json"
    assert "x-api-key" not in second and "anthropic-beta" not in second and "authorization" not in second


async def test_full_loop_episode_against_fake_server(tmp_path: Path):
    """The loop's real message history passes the fake's protocol checks at every turn."""
    desk = FakeDesktop(tmp_path, 1024, 768)
    tools = {"computer": ComputerTool(desk, CoordinateMap("pixels", (1024, 768))), "bash": BashTool(desk), "done": DoneTool()}
    script = [
        {
            "text": "Clicking.",
            "tool_uses": [
                {"id": "toolu_1", "name": "computer", "input": {"action": "left_click", "coordinate": [10, 20]}},
                {"id": "toolu_2", "name": "bash", "input": {"command": "echo hi"}},
            ],
        },
        {"text": "Let me think."},  # no tool call: the loop nudges
        {"tool_uses": [{"id": "toolu_3", "name": "computer", "input": {"action": "screenshot"}}]},
        {"tool_uses": [{"id": "toolu_4", "name": "done", "input": {"status": "DONE"}}]},
    ]
    trace = Trace(tmp_path / "trace.jsonl")
    result = EpisodeResult(task_id="app/task", app="app")
    with FakeAnthropicServer(script) as server:
        provider = make(server)
        loop = AgentLoop(provider, tools, Limits(10, 10, 30.0, keep_screenshots=2), trace, result)
        try:
            await loop.run("You operate a desktop.", "Do the task.", desk.screenshot())
        finally:
            trace.close()
            await provider.aclose()
    assert result.termination == "done", result.reason
    assert result.llm_calls == 4 and len(server.requests) == 4  # nothing rejected by the protocol checks
    assert desk.actions[0]["kind"] == "click" and desk.shell_calls == ["echo hi"]
    last = server.requests[-1]["messages"]
    assert sum(b["type"] == "image" for m in last for b in walk_blocks(m["content"])) == 2  # pruned to keep=2
    assert result.tokens_in > 0 and not result.tokens_estimated


# ----------------------------------------------------------------------------- failures


async def test_429_then_success_honours_retry_after():
    sleeps = Sleeps()
    script = [
        {"status": 429, "error": "Number of request tokens has exceeded your rate limit", "headers": {"retry-after": "3"}},
        {"text": "ok"},
    ]
    with FakeAnthropicServer(script) as server:
        reply = await complete(server, sleep=sleeps)
    assert reply.text == "ok" and len(server.requests) == 2
    assert sleeps == [3.0]


async def test_529_overloaded_is_retried():
    with FakeAnthropicServer([{"status": 529, "error": "Overloaded"}, {"text": "ok"}]) as server:
        reply = await complete(server, sleep=Sleeps())
    assert reply.text == "ok" and len(server.requests) == 2


async def test_500_forever_raises_infra_error_after_budget():
    sleeps = Sleeps()
    with (
        FakeAnthropicServer([{"status": 500, "error": "Internal server error"}] * 5) as server,
        pytest.raises(InfraError) as info,
    ):
        await complete(server, max_retries=2, sleep=sleeps)
    assert not isinstance(info.value, EndpointUnreachable)
    assert "500" in str(info.value) and "Internal server error" in str(info.value)
    assert len(server.requests) == 3 and len(sleeps) == 2


async def test_400_fails_at_once_with_server_message():
    script = [{"status": 400, "error": "model: claude-nope is not a valid model id"}]
    with FakeAnthropicServer(script) as server, pytest.raises(InfraError, match="claude-nope is not a valid model id") as info:
        await complete(server, sleep=Sleeps())
    assert "400" in str(info.value) and not isinstance(info.value, EndpointUnreachable)
    assert len(server.requests) == 1


async def test_cut_stream_is_retried():
    with FakeAnthropicServer([{"text": "never finished", "cut": 4}, {"text": "whole"}]) as server:
        reply = await complete(server, sleep=Sleeps())
    assert reply.text == "whole" and len(server.requests) == 2


async def test_stream_ended_without_message_stop_is_retried_then_infra_error():
    script = [{"text": "half", "cut": 5, "cut_clean": True}] * 2
    with FakeAnthropicServer(script) as server, pytest.raises(InfraError, match="ended before message_stop"):
        await complete(server, max_retries=1, sleep=Sleeps())
    assert len(server.requests) == 2


async def test_overloaded_error_event_then_success():
    with FakeAnthropicServer([{"text": "x", "overloaded": True}, {"text": "recovered"}]) as server:
        reply = await complete(server, sleep=Sleeps())
    assert reply.text == "recovered" and len(server.requests) == 2


async def test_overloaded_forever_names_the_error():
    with (
        FakeAnthropicServer([{"overloaded": True}] * 2) as server,
        pytest.raises(InfraError, match="overloaded_error: Overloaded"),
    ):
        await complete(server, max_retries=1, sleep=Sleeps())


async def test_invalid_request_error_event_is_not_retried():
    script = [{"overloaded": True, "error_type": "invalid_request_error", "error": "prompt is too long"}]
    with FakeAnthropicServer(script) as server, pytest.raises(InfraError, match="prompt is too long"):
        await complete(server, sleep=Sleeps())
    assert len(server.requests) == 1


async def test_unreachable_names_url_and_hint():
    url = f"http://127.0.0.1:{free_port()}/v1"
    hint = "Set ANTHROPIC_API_KEY and check provider.base_url."
    provider = AnthropicProvider(
        model="m", base_url=url, label="anthropic", start_hint=hint, max_retries=1, retry_base_s=0.001, display_size=(1024, 768)
    )
    with pytest.raises(EndpointUnreachable) as info:
        await provider.complete(USER, [])
    await provider.aclose()
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("anthropic endpoint")
    assert url in msg and hint in msg


async def test_api_key_never_in_errors():
    key = "sk-ant-api03-secret-123456"
    with (
        FakeAnthropicServer([{"status": 401, "error": f"invalid x-api-key: {key}"}]) as server,
        pytest.raises(InfraError) as info,
    ):
        await complete(server, api_key=key)
    assert server.headers[0]["x-api-key"] == key
    assert key not in str(info.value) and "401" in str(info.value) and "***" in str(info.value)

    script = [{"overloaded": True, "error": f"overloaded for key {key}"}]
    with FakeAnthropicServer(script) as server, pytest.raises(InfraError) as info:
        await complete(server, api_key=key, max_retries=0)
    assert key not in str(info.value) and "overloaded_error" in str(info.value)

    url = f"http://127.0.0.1:{free_port()}/v1"
    provider = AnthropicProvider(model="m", base_url=url, api_key=key, max_retries=0, display_size=(1024, 768))
    with pytest.raises(EndpointUnreachable) as info:
        await provider.complete(USER, [])
    await provider.aclose()
    assert key not in str(info.value)


# ----------------------------------------------------------------------------- the fake itself


async def test_fake_rejects_what_the_real_api_rejects():
    async with httpx.AsyncClient() as client:
        with FakeAnthropicServer([{"text": "scripted"}]) as server:
            url = f"{server.base_url}/messages"
            version = {"anthropic-version": "2023-06-01"}
            bad = [
                ({}, {"max_tokens": 5, "messages": USER}, "anthropic-version"),
                (version, {"messages": USER}, "max_tokens"),
                (version, {"max_tokens": 5, "messages": USER * 2}, "alternate"),
                (version, {"max_tokens": 5, "messages": [{"role": "user", "content": " "}]}, "non-whitespace"),
                (
                    version,
                    {
                        "max_tokens": 5,
                        "messages": [
                            {"role": "user", "content": "go"},
                            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
                            {"role": "user", "content": "forgot the result"},
                        ],
                    },
                    "tool_result",
                ),
            ]
            for headers, body, needle in bad:
                resp = await client.post(url, json=body, headers=headers)
                assert resp.status_code == 400 and needle in resp.json()["error"]["message"], needle
                assert resp.json()["type"] == "error"
            ok = await client.post(url, json={"max_tokens": 5, "messages": USER}, headers=version)
    assert ok.status_code == 200 and ok.json()["content"] == [{"type": "text", "text": "scripted"}]
    assert len(server.requests) == len(bad) + 1


async def test_fake_streams_real_sse_event_lines():
    async with httpx.AsyncClient() as client:
        with FakeAnthropicServer([{"text": "abcdef"}]) as server:
            resp = await client.post(
                f"{server.base_url}/messages",
                headers={"anthropic-version": "2023-06-01"},
                json={"max_tokens": 5, "messages": USER, "stream": True},
            )
    lines = [line for line in resp.text.split("\n") if line]
    kinds = [line.split(": ", 1)[1] for line in lines if line.startswith("event: ")]
    datas = [json.loads(line.split(": ", 1)[1]) for line in lines if line.startswith("data: ")]
    assert kinds == [d["type"] for d in datas]
    assert kinds[:3] == ["message_start", "ping", "content_block_start"] and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_delta") == 3


# --------------------------------------------------------------------------- extended thinking, zoom, is_error


async def test_recorded_thinking_stream_keeps_the_block_and_its_signature():
    from tests.fakes.replay_server import Recorded, ReplayServer

    recorded = Path(__file__).resolve().parents[1] / "data" / "transcripts" / "anthropic_thinking_refusal.sse"
    with ReplayServer([Recorded(recorded.read_bytes())]) as server:
        provider = AnthropicProvider(base_url=server.base_url, model="claude-x", api_key="k", max_retries=0)
        try:
            reply = await provider.complete(list(USER), [])
        finally:
            await provider.aclose()
    (block,) = reply.reasoning_blocks
    assert block == {
        "type": "thinking",
        "thinking": reply.reasoning,
        "signature": "c3ludGhldGljLXNpZ25hdHVyZS1maXh0dXJlLWEtbm90LWEtcmVhbC1zaWduYXR1cmU=",
    }
    assert block["thinking"].startswith("Simple educational question") and reply.text == "Hi"
    # sent back first in the assistant turn, unchanged, when the loop keeps it
    from mcpworld.agent.providers.anthropic import to_anthropic_messages

    _, messages = to_anthropic_messages(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hi", "reasoning_blocks": [block]}]
    )
    assert messages[1]["content"] == [block, {"type": "text", "text": "Hi"}]


def test_thinking_constraints_are_checked_before_any_request():
    from mcpworld.core.errors import UserError

    ok = dict(model="m", base_url="http://127.0.0.1:9", max_tokens=16384, temperature=1.0)
    assert AnthropicProvider(thinking_budget=8192, **ok).thinking_budget == 8192
    for changes, names in (
        ({"thinking_budget": 512}, "model.thinking_budget=512"),
        ({"thinking_budget": 16384}, "model.max_tokens=16384"),
        ({"thinking_budget": 2048, "temperature": 0.0}, "model.temperature=0"),
    ):
        with pytest.raises(UserError, match=names):
            AnthropicProvider(**{**ok, **changes})
    # interleaved thinking (Claude 4) lets the budget exceed max_tokens
    AnthropicProvider(thinking_budget=32000, betas=["interleaved-thinking-2025-05-14"], **ok)


async def test_fake_rejects_thinking_sent_back_altered_or_missing():
    script = [{"thinking": "Plan: click.", "tool_uses": [{"id": "t1", "name": "done", "input": {"status": "DONE"}}]}]
    with FakeAnthropicServer(script) as server:
        reply = await complete(server, max_tokens=4096, temperature=1.0, thinking_budget=1024)
        block = reply.reasoning_blocks[0]
        history = [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "reasoning_blocks": [block],
                "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "done", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "t1", "content": "ok"},
        ]
        await complete(server, messages=history, max_tokens=4096, temperature=1.0, thinking_budget=1024)
        altered = [dict(m) for m in history]
        altered[1]["reasoning_blocks"] = [{**block, "thinking": "Plan: type."}]
        dropped = [dict(m) for m in history]
        dropped[1].pop("reasoning_blocks")
        for bad, needle in ((altered, "Invalid `signature`"), (dropped, "must start with a thinking block")):
            with pytest.raises(Exception, match=needle):
                await complete(server, messages=bad, max_tokens=4096, temperature=1.0, thinking_budget=1024, max_retries=0)
    assert server.requests[1]["messages"][1]["content"][0] == block


async def test_computer_20251124_enables_zoom_in_its_definition():
    with FakeAnthropicServer() as server:
        await complete(
            server,
            tools=[{"type": "function", "function": {"name": "computer", "parameters": {}}}],
            computer_tool="computer_20251124",
            betas=["computer-use-2025-11-24"],
        )
        await complete(
            server,
            tools=[{"type": "function", "function": {"name": "computer", "parameters": {}}}],
            computer_tool="computer_20251124",
            enable_zoom=False,
        )
    assert server.requests[0]["tools"][0] == {
        "type": "computer_20251124",
        "name": "computer",
        "display_width_px": 1024,
        "display_height_px": 768,
        "enable_zoom": True,
        "cache_control": {"type": "ephemeral"},
    }
    assert "enable_zoom" not in server.requests[1]["tools"][0]
    assert server.headers[0]["anthropic-beta"] == "computer-use-2025-11-24"
