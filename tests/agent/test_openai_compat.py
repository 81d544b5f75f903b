"""OpenAICompatProvider against a real local HTTP server speaking the OpenAI protocol."""

from __future__ import annotations

import pytest

from mcpworld.agent.providers.openai_compat import OpenAICompatProvider
from mcpworld.core.errors import EndpointUnreachable, InfraError
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.scripted_server import free_port

USER = [{"role": "user", "content": "hi"}]
CLICK_TOOL = {
    "type": "function",
    "function": {
        "name": "click",
        "description": "Click at a point",
        "parameters": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}},
    },
}


def make(server: FakeOpenAIServer, **kw) -> OpenAICompatProvider:
    kw.setdefault("retry_base_s", 0.001)
    return OpenAICompatProvider(base_url=server.base_url, model="fake-model", **kw)


async def complete(server: FakeOpenAIServer, messages=USER, tools=(), **kw):
    provider = make(server, **kw)
    try:
        return await provider.complete(list(messages), list(tools))
    finally:
        await provider.aclose()


async def test_text_reply_and_request_shape():
    with FakeOpenAIServer([{"text": "Hello there, world"}]) as server:
        reply = await complete(server, temperature=0.2, max_tokens=64)
    assert reply.text == "Hello there, world"
    assert reply.tool_calls == []
    assert reply.finish_reason == "stop"
    body = server.requests[0]
    assert body["model"] == "fake-model"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.2 and body["max_tokens"] == 64
    assert "tools" not in body and "tool_choice" not in body


async def test_tool_call_assembled_from_split_chunks():
    script = [
        {
            "text": "Clicking.",
            "tool_calls": [
                {"id": "call_abc", "name": "click", "arguments": {"x": 120, "y": 45, "label": "OK button"}},
                {"id": "call_def", "name": "type_text", "arguments": {"text": "hello"}},
            ],
        }
    ]
    with FakeOpenAIServer(script) as server:
        reply = await complete(server, tools=[CLICK_TOOL])
    assert reply.text == "Clicking."
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_abc", "click", {"x": 120, "y": 45, "label": "OK button"}),
        ("call_def", "type_text", {"text": "hello"}),
    ]
    assert reply.finish_reason == "tool_calls"
    body = server.requests[0]
    assert body["tools"] == [CLICK_TOOL] and body["tool_choice"] == "auto"


async def test_unparseable_arguments_kept_raw():
    script = [{"tool_calls": [{"id": "call_x", "name": "click", "arguments": '{"x": 1, "y": '}]}]
    with FakeOpenAIServer(script) as server:
        reply = await complete(server, tools=[CLICK_TOOL])
    assert reply.tool_calls[0].arguments == {"_raw": '{"x": 1, "y": '}


async def test_image_data_uri_passed_through_exactly():
    uri = "data:image/png;base64," + "iVBORw0KGgo" * 50
    messages = [
        {"role": "system", "content": "You operate a desktop."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "What is on screen?"}, {"type": "image_url", "image_url": {"url": uri}}],
        },
    ]
    with FakeOpenAIServer() as server:
        await complete(server, messages=messages)
    assert server.requests[0]["messages"] == messages


async def test_ttft_measured_from_first_token():
    with FakeOpenAIServer([{"text": "slow start", "delay_first_s": 0.2}]) as server:
        reply = await complete(server)
    assert reply.ttft_s is not None and reply.ttft_s >= 0.2
    assert reply.latency_s >= reply.ttft_s


async def test_ttft_ignores_empty_role_chunk():
    # The role chunk (content "") comes at once; the first real token after chunk_delay_s.
    with FakeOpenAIServer([{"text": "ab", "chunk_delay_s": 0.1}]) as server:
        reply = await complete(server)
    assert reply.ttft_s >= 0.1


async def test_usage_from_final_chunk():
    with FakeOpenAIServer([{"text": "hi", "usage": {"prompt_tokens": 321, "completion_tokens": 7}}]) as server:
        reply = await complete(server)
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.estimated) == (321, 7, False)


async def test_usage_estimated_when_server_omits_it():
    with FakeOpenAIServer([{"text": "x" * 40, "usage": False}]) as server:
        reply = await complete(server, messages=[{"role": "user", "content": "y" * 80}])
    assert reply.usage.estimated is True
    assert reply.usage.input_tokens == 20
    assert reply.usage.output_tokens == 10


async def test_retries_on_500_then_succeeds():
    with FakeOpenAIServer([{"status": 500}, {"text": "recovered"}]) as server:
        reply = await complete(server)
    assert reply.text == "recovered"
    assert len(server.requests) == 2


@pytest.mark.parametrize("clean", [False, True])
async def test_a_cut_stream_is_retried_not_taken_as_the_answer(clean):
    script = [{"text": "a long answer that never finishes", "cut": 2, "cut_clean": clean}, {"text": "complete"}]
    with FakeOpenAIServer(script) as server:
        reply = await complete(server, retry_base_s=0.001)
    assert reply.text == "complete"
    assert len(server.requests) == 2


async def test_a_stream_cut_every_time_is_an_infra_error():
    with (
        FakeOpenAIServer([{"text": "partial", "cut": 1, "cut_clean": True}] * 3) as server,
        pytest.raises(InfraError, match="ended before the reply was complete"),
    ):
        await complete(server, max_retries=2, retry_base_s=0.001)
    assert len(server.requests) == 3


async def test_retries_on_429_then_succeeds():
    with FakeOpenAIServer([{"status": 429, "error": "Rate limit reached"}, {"text": "ok"}]) as server:
        reply = await complete(server)
    assert reply.text == "ok"
    assert len(server.requests) == 2


async def test_retry_budget_exhausted_raises_infra_error_with_status():
    sleeps: list[float] = []

    async def fake_sleep(s: float) -> None:
        sleeps.append(s)

    script = [{"status": 503, "error": "overloaded"}] * 3
    with FakeOpenAIServer(script) as server, pytest.raises(InfraError) as info:
        await complete(server, max_retries=2, retry_base_s=0.5, sleep=fake_sleep)
    assert not isinstance(info.value, EndpointUnreachable)
    assert "503" in str(info.value) and "overloaded" in str(info.value)
    assert len(server.requests) == 3
    assert len(sleeps) == 2 and 0.25 <= sleeps[0] <= 0.5 and 0.5 <= sleeps[1] <= 1.0


async def test_400_raises_without_retry_and_shows_server_message():
    script = [{"status": 404, "error": "model 'nope' not found, try pulling it first"}]
    with FakeOpenAIServer(script) as server, pytest.raises(InfraError, match="model 'nope' not found"):
        await complete(server)
    assert len(server.requests) == 1

    with (
        FakeOpenAIServer([{"status": 400, "error": "bad request: messages missing"}]) as server,
        pytest.raises(InfraError, match="messages missing") as info,
    ):
        await complete(server)
    assert "400" in str(info.value)
    assert len(server.requests) == 1


async def test_read_timeout_is_retried_then_infra_error():
    script = [{"text": "late", "delay_first_s": 1.0}] * 2
    with FakeOpenAIServer(script) as server, pytest.raises(InfraError) as info:
        await complete(server, timeout_s=0.2, max_retries=1)
    assert not isinstance(info.value, EndpointUnreachable)
    assert "ReadTimeout" in str(info.value)
    assert len(server.requests) == 2


async def test_connection_refused_is_one_line_endpoint_unreachable():
    url = f"http://127.0.0.1:{free_port()}/v1"
    hint = "Start one with `ollama serve` and `ollama pull qwen2.5vl`."
    provider = OpenAICompatProvider(base_url=url, model="m", label="ollama", start_hint=hint, max_retries=2, retry_base_s=0.001)
    with pytest.raises(EndpointUnreachable) as info:
        await provider.complete(USER, [])
    await provider.aclose()
    msg = str(info.value)
    assert "\n" not in msg
    assert url in msg and hint in msg and msg.startswith("ollama endpoint")


async def test_api_key_sent_as_bearer_but_never_in_errors():
    key = "sk-secret-123456"
    script = [{"text": "ok"}, {"status": 401, "error": f"Incorrect API key provided: {key}"}]
    with FakeOpenAIServer(script) as server:
        provider = make(server, api_key=key)
        await provider.complete(USER, [])
        with pytest.raises(InfraError) as info:
            await provider.complete(USER, [])
        await provider.aclose()
    assert server.headers[0]["authorization"] == f"Bearer {key}"
    assert key not in str(info.value) and "401" in str(info.value)

    url = f"http://127.0.0.1:{free_port()}/v1"
    provider = OpenAICompatProvider(base_url=url, model="m", api_key=key, max_retries=0)
    with pytest.raises(EndpointUnreachable) as info:
        await provider.complete(USER, [])
    await provider.aclose()
    assert key not in str(info.value)


async def test_no_authorization_header_without_key():
    with FakeOpenAIServer() as server:
        await complete(server)
    assert "authorization" not in server.headers[0]


async def test_non_streaming_json_fallback():
    script = [
        {
            "ignore_stream": True,
            "text": "plain",
            "tool_calls": [{"id": "call_1", "name": "click", "arguments": {"x": 1, "y": 2}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3},
        }
    ]
    with FakeOpenAIServer(script) as server:
        reply = await complete(server, tools=[CLICK_TOOL])
    assert reply.text == "plain"
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("call_1", "click", {"x": 1, "y": 2})]
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (11, 3)
    assert reply.ttft_s == reply.latency_s > 0
    assert reply.finish_reason == "tool_calls"


async def test_fake_server_script_runs_out_to_done_and_lists_models():
    import httpx

    with FakeOpenAIServer([{"text": "first"}]) as server:
        assert (await complete(server)).text == "first"
        assert (await complete(server)).text == "done"
        async with httpx.AsyncClient() as client:
            models = (await client.get(f"{server.base_url}/models")).json()
            plain = (
                await client.post(
                    f"{server.base_url}/chat/completions", json={"model": "fake-model", "messages": USER, "stream": False}
                )
            ).json()
    assert models["data"][0]["id"] == "fake-model"
    assert plain["object"] == "chat.completion" and plain["choices"][0]["message"]["content"] == "done"
