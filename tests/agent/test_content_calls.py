"""Tool calls written into the reply text (Hermes/Qwen tags, fenced or bare JSON) when the server's tool
parser did not catch them — parsed directly and through the real OpenAI-compatible HTTP path."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpworld.agent.providers.content_calls import calls_in_text
from mcpworld.agent.providers.openai_compat import OpenAICompatProvider
from tests.fakes.openai_server import FakeOpenAIServer

CLICK = {"name": "computer", "arguments": {"action": "left_click", "coordinate": [1, 2]}}
TAG = f"<tool_call>{json.dumps(CLICK)}</tool_call>"
USER = [{"role": "user", "content": "click it"}]


def calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, c.arguments) for c in calls_in_text(text)[1]]


# --------------------------------------------------------------------------- <tool_call> tags


def test_tag_with_prose() -> None:
    text, found = calls_in_text(f"I will click the button.\n{TAG}\nThen I wait.")
    assert [(c.name, c.arguments) for c in found] == [("computer", CLICK["arguments"])]
    assert "<tool_call>" not in text and "</tool_call>" not in text and "left_click" not in text
    assert text.startswith("I will click the button.") and text.endswith("Then I wait.")
    assert found[0].id  # an id the tool result can answer


def test_two_tags_in_order_with_distinct_ids() -> None:
    second = {"name": "computer", "arguments": {"action": "type", "text": "hi"}}
    text, found = calls_in_text(f"{TAG}\n<tool_call>\n{json.dumps(second)}\n</tool_call>")
    assert [(c.name, c.arguments) for c in found] == [
        ("computer", CLICK["arguments"]),
        ("computer", {"action": "type", "text": "hi"}),
    ]
    assert found[0].id != found[1].id
    assert text == ""


def test_unterminated_tag_at_the_end() -> None:
    text, found = calls_in_text("Clicking now. <tool_call>\n" + json.dumps(CLICK))
    assert [(c.name, c.arguments) for c in found] == [("computer", CLICK["arguments"])]
    assert text == "Clicking now."


def test_tag_with_broken_json_is_a_raw_call() -> None:
    broken = '{"name": "computer", "arguments": {"action": "left_cl'
    text, found = calls_in_text(f"oops <tool_call>{broken}</tool_call>")
    assert len(found) == 1
    assert found[0].arguments == {"_raw": broken}
    assert text == "oops"


def test_tag_holding_a_non_call_is_a_raw_call() -> None:
    found = calls_in_text('<tool_call>{"foo": 1}</tool_call>')[1]
    assert len(found) == 1 and found[0].arguments == {"_raw": '{"foo": 1}'}


def test_arguments_as_a_json_string_are_parsed() -> None:
    blob = json.dumps({"name": "done", "arguments": json.dumps({"status": "DONE"})})
    assert calls(f"<tool_call>{blob}</tool_call>") == [("done", {"status": "DONE"})]


def test_arguments_as_a_bad_json_string_are_raw() -> None:
    blob = json.dumps({"name": "done", "arguments": '{"status": DONE'})
    assert calls(f"<tool_call>{blob}</tool_call>") == [("done", {"_raw": '{"status": DONE'})]


def test_parameters_key_and_missing_arguments() -> None:
    assert calls('<tool_call>{"name": "bash", "parameters": {"command": "ls"}}</tool_call>') == [("bash", {"command": "ls"})]
    assert calls('<tool_call>{"name": "done"}</tool_call>') == [("done", {})]


def test_a_list_inside_a_tag() -> None:
    blob = json.dumps([CLICK, {"name": "done", "arguments": {"status": "DONE"}}])
    assert calls(f"<tool_call>{blob}</tool_call>") == [("computer", CLICK["arguments"]), ("done", {"status": "DONE"})]


# --------------------------------------------------------------------------- JSON without tags


def test_fenced_json() -> None:
    text, found = calls_in_text(f"Here is my action:\n```json\n{json.dumps(CLICK)}\n```\nDone thinking.")
    assert [(c.name, c.arguments) for c in found] == [("computer", CLICK["arguments"])]
    assert "```" not in text and "left_click" not in text
    assert text.startswith("Here is my action:") and text.endswith("Done thinking.")


def test_bare_object_after_prose() -> None:
    text, found = calls_in_text(f"I will click the OK button. {json.dumps(CLICK)}")
    assert [(c.name, c.arguments) for c in found] == [("computer", CLICK["arguments"])]
    assert text == "I will click the OK button."


def test_a_list_of_calls() -> None:
    second = {"name": "computer", "arguments": {"action": "key", "text": "Return"}}
    text, found = calls_in_text(json.dumps([CLICK, second]))
    assert [(c.name, c.arguments) for c in found] == [
        ("computer", CLICK["arguments"]),
        ("computer", {"action": "key", "text": "Return"}),
    ]
    assert found[0].id != found[1].id and text == ""


def test_a_call_after_json_that_is_not_one() -> None:
    text, found = calls_in_text('The state is {"open": true}. Now {"name": "done", "arguments": {}}')
    assert [(c.name, c.arguments) for c in found] == [("done", {})]
    assert text == 'The state is {"open": true}. Now'


def test_function_wrapper() -> None:
    wrapped = {"type": "function", "function": {"name": "done", "arguments": json.dumps({"status": "FAIL"})}}
    assert calls(json.dumps(wrapped)) == [("done", {"status": "FAIL"})]


def test_bare_action_is_a_computer_call() -> None:
    text, found = calls_in_text('Clicking: {"action": "left_click", "coordinate": [5, 6]}')
    assert [(c.name, c.arguments) for c in found] == [("computer", {"action": "left_click", "coordinate": [5, 6]})]
    assert text == "Clicking:"


@pytest.mark.parametrize(
    "prose",
    [
        "use {x} here",
        'the config is {"theme": "dark", "size": 3} so I will leave it.',
        "a set {1, 2} and a list [1, 2, 3]",
        '```json\n{"theme": "dark"}\n```',
        "[]",
        "I am done with the task.",
        '{"action": 3}',
        'The contact is {"user": {"name": "Alice"}} in the file.',  # nested in data is data, not a call
        'rows: [1, {"name": "Alice"}]',
    ],
)
def test_prose_that_is_not_a_call(prose: str) -> None:
    assert calls_in_text(prose) == (prose, [])


# --------------------------------------------------------------------------- through HTTP


async def complete(server: FakeOpenAIServer) -> Any:
    provider = OpenAICompatProvider(base_url=server.base_url, model="fake-model", retry_base_s=0.001)
    try:
        return await provider.complete(list(USER), [])
    finally:
        await provider.aclose()


@pytest.mark.parametrize("ignore_stream", [False, True])
async def test_http_tag_in_text_becomes_a_tool_call(ignore_stream: bool) -> None:
    script = [{"text": f"Let me click. {TAG}", "ignore_stream": ignore_stream}]
    with FakeOpenAIServer(script) as server:
        reply = await complete(server)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("computer", CLICK["arguments"])]
    assert reply.text == "Let me click."
    assert reply.finish_reason == "stop"  # as the server said: it did not parse the call


@pytest.mark.parametrize("ignore_stream", [False, True])
async def test_http_plain_text_has_no_calls(ignore_stream: bool) -> None:
    with FakeOpenAIServer([{"text": "use {x} here", "ignore_stream": ignore_stream}]) as server:
        reply = await complete(server)
    assert reply.tool_calls == [] and reply.text == "use {x} here"


@pytest.mark.parametrize("ignore_stream", [False, True])
async def test_http_legacy_function_call(ignore_stream: bool) -> None:
    script = [{"text": "Clicking.", "function_call": CLICK, "ignore_stream": ignore_stream}]
    with FakeOpenAIServer(script) as server:
        reply = await complete(server)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("computer", CLICK["arguments"])]
    assert reply.tool_calls[0].id
    assert reply.text == "Clicking."
    assert reply.finish_reason == "function_call"


@pytest.mark.parametrize("ignore_stream", [False, True])
async def test_http_structured_calls_leave_the_text_alone(ignore_stream: bool) -> None:
    text = f"I once wrote {TAG} by hand."
    script = [
        {
            "text": text,
            "ignore_stream": ignore_stream,
            "tool_calls": [{"id": "call_real", "name": "done", "arguments": {"status": "DONE"}}],
        }
    ]
    with FakeOpenAIServer(script) as server:
        reply = await complete(server)
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("call_real", "done", {"status": "DONE"})]
    assert reply.text == text


def test_fake_server_streams_function_call_in_pieces() -> None:
    from tests.fakes.openai_server import _chunks

    chunks = _chunks({}, {"function_call": CLICK}, "m", include_usage=False)
    pieces = [
        c["choices"][0]["delta"]["function_call"] for c in chunks if c["choices"] and "function_call" in c["choices"][0]["delta"]
    ]
    assert pieces[0] == {"name": "computer", "arguments": ""}
    assert len(pieces) > 2 and all("name" not in p for p in pieces[1:])
    assert json.loads("".join(p["arguments"] for p in pieces)) == CLICK["arguments"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "function_call"


def test_untagged_data_with_a_name_key_is_not_a_call() -> None:
    text = 'The form has {"name": "Alice", "email": "a@example.org"} filled in.'
    assert calls_in_text(text) == (text, [])
    tagged = '<tool_call>{"name": "done"}</tool_call>'
    assert [c.name for c in calls_in_text(tagged)[1]] == ["done"]
