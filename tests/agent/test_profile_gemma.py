"""The Gemma 3 profile against the documented function-calling exchange (tests/data/parity/gemma): the
request lays the conversation out as the documentation does (rendered by Gemma 3's chat template the
two prompts are identical, checked when the fixture was made), and the documented replies become the
same calls and land on the same screen points."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf
from PIL import Image

from mcpworld.agent.profiles import ModelView, PromptContext, make_profile
from mcpworld.agent.profiles.gemma import GemmaProfile
from mcpworld.agent.profiles.pycalls import calls_in_text, render_calls
from mcpworld.agent.providers.base import Reply, ToolCall
from mcpworld.agent.tools.computer import ComputerTool
from tests.helpers.environments import FakeDesktop

FIXTURE = json.loads((Path(__file__).parents[1] / "data" / "parity" / "gemma" / "conversation.json").read_text())
CONF = Path(__file__).parents[2] / "mcpworld" / "conf" / "model"


def profile(**options: Any) -> GemmaProfile:
    p = make_profile("gemma", ModelView(name="gemma3_tools_12b", id="PetrosStav/gemma3-tools:12b", options=options))
    assert isinstance(p, GemmaProfile)
    return p


def loop_conversation(p: GemmaProfile) -> list[dict[str, Any]]:
    """What our loop keeps for the fixture's two steps (OpenAI chat format)."""
    image = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": FIXTURE["system"]},
        {"role": "user", "content": [{"type": "text", "text": FIXTURE["instruction"]}, image]},
    ]
    for text in FIXTURE["replies"]:
        reply = p.parse(Reply(text=text))
        messages.append(
            {
                "role": "assistant",
                "content": reply.text,
                "tool_calls": [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                    for c in reply.tool_calls
                ],
            }
        )
        messages += [{"role": "tool", "tool_call_id": c.id, "content": "ok"} for c in reply.tool_calls]
        messages.append({"role": "user", "content": [image]})
    return messages


def as_template_input(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Our request in the chat template's vocabulary: image parts are {"type": "image"}."""
    return [
        {**m, "content": [{"type": "image"} if c.get("type") == "image_url" else c for c in m["content"]]}
        if isinstance(m["content"], list)
        else m
        for m in messages
    ]


def test_request_matches_documented_layout() -> None:
    p = profile()
    schemas = [{"type": "function", "function": f} for f in FIXTURE["functions"]]
    ours, tools = p.request(loop_conversation(p), schemas)
    assert tools == []  # functions are described in the prompt, never sent as API tools
    ref = FIXTURE["messages"]
    # Gemma's template renders a system message as the first user turn's prefix + "\n\n": ours is merged so
    system, first = ref[0]["content"], ref[1]["content"]
    expected = [{"role": "user", "content": [{"type": "text", "text": system + "\n\n" + first[0]["text"]}, *first[1:]]}, *ref[2:]]
    assert as_template_input(ours) == expected
    assert [m["role"] for m in ours] == ["user", "assistant", "user", "assistant", "user"]  # strictly alternating


def test_documented_prompt_pieces() -> None:
    p = profile()
    ours, _ = p.request(
        [{"role": "user", "content": FIXTURE["doc_example"]["messages"][0]["content"].split("]\n")[-1]}],
        [
            {"type": "function", "function": f}
            for f in json.loads(FIXTURE["doc_example"]["messages"][0]["content"].split("function\n", 1)[1].rsplit("\n", 1)[0])
        ],
    )
    assert ours == [{"role": "user", "content": [{"type": "text", "text": FIXTURE["doc_example"]["messages"][0]["content"]}]}]


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=[f"{c['screen'][0]}-{i % 6}" for i, c in enumerate(FIXTURE["cases"])])
def test_documented_replies(case: dict[str, Any], tmp_path: Path) -> None:
    p = profile()
    reply = p.parse(Reply(text=case["reply"]))
    assert reply.text == case["reply"]
    if "calls" in case:
        assert [{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls] == case["calls"]
        return
    width, height = case["screen"]
    desk = FakeDesktop(tmp_path, width, height)
    tool = ComputerTool(desk, p.screen((width, height)))
    for call in reply.tool_calls:
        assert call.name == "computer"
        asyncio.run(tool.call(call.arguments))
    points = [[a["x0"], a["y0"]] for a in desk.actions if "x0" in a] + [[a["x"], a["y"]] for a in desk.actions if "x" in a]
    assert points == case["points"]


def test_screen_is_fixed_896_square() -> None:
    coords = profile().screen((1920, 1080))
    assert coords.image == (896, 896) and coords.bounds == (896, 896)
    assert coords.fit(Image.new("RGB", (1920, 1080))).size == (896, 896)
    assert profile(image_size=448).screen((1000, 1000)).image == (448, 448)
    prompt = profile().system_prompt(PromptContext(["computer", "done"], (896, 896)))
    assert "896x896" in prompt and "pixel coordinates" in prompt


def test_text_that_is_not_a_call_stays_text() -> None:
    p = profile()
    for text in (
        "I clicked the [File] menu.",
        "Use print(x) to debug",
        "The answer is [1, 2, 3].",
        "",
        "[os.system('rm -rf /')]",
    ):
        reply = p.parse(Reply(text=text))
        assert reply.text == text
        if text.startswith("[os"):  # a call, but its argument is an expression: never evaluated
            assert reply.tool_calls[0].arguments == {"_raw": "os.system('rm -rf /')"}
        else:
            assert reply.tool_calls == []


def test_call_list_forms() -> None:
    calls = calls_in_text(
        'Sure.\n[computer(action="scroll", coordinate=[1, -2], scroll_direction="down", '
        'scroll_amount=3), done(status="DONE", answer=None, extra={"a": true})]'
    )
    assert calls is not None
    assert [(c.name, c.arguments) for c in calls] == [
        ("computer", {"action": "scroll", "coordinate": [1, -2], "scroll_direction": "down", "scroll_amount": 3}),
        ("done", {"status": "DONE", "answer": None, "extra": {"a": True}}),
    ]
    assert calls_in_text('```tool_code\nprint(done(status="FAIL"))\n```')[0].arguments == {"status": "FAIL"}  # type: ignore[index]
    positional = calls_in_text('[computer("left_click")]')
    assert positional is not None and "_raw" in positional[0].arguments
    assert calls_in_text('[x(a=__import__("os").getcwd())]')[0].arguments == {"_raw": 'x(a=__import__("os").getcwd())'}  # type: ignore[index]


def test_server_parsed_calls_are_kept_and_replayed() -> None:
    p = profile()
    parsed = Reply(text="", tool_calls=[ToolCall("c1", "done", {"status": "DONE"})])
    assert p.parse(parsed) is parsed
    conversation = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "done", "arguments": '{"status": "DONE"}'}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Episode ended: DONE"},
    ]
    ours, _ = p.request(conversation, [])
    assert ours[1] == {"role": "assistant", "content": '[done(status="DONE")]'}
    assert ours[2]["content"] == [{"type": "text", "text": "```tool_output\nEpisode ended: DONE\n```"}]
    call = ToolCall("a", "f", {"s": 'é"', "n": 1.5, "b": False, "l": [None]})
    assert render_calls([call]) == '[f(s="é\\"", n=1.5, b=False, l=[None])]'


@pytest.mark.parametrize("name", ["gemma3_tools_12b", "gemma3_tools_27b"])
def test_configs_use_the_profile(name: str) -> None:
    model = OmegaConf.load(CONF / f"{name}.yaml").model
    assert model.profile == "gemma" and model.coordinates == "pixels"


async def test_episode_against_a_fake_ollama_server(tmp_path: Path) -> None:
    """The loop drives Gemma through the profile over real HTTP: call lists in, actions out, results back
    in tool_output fences, no API tools sent."""
    from mcpworld.agent.loop import AgentLoop, Limits
    from mcpworld.agent.providers.openai_compat import OpenAICompatProvider
    from mcpworld.agent.tools.done import DoneTool
    from mcpworld.core.result import EpisodeResult
    from mcpworld.telemetry.trace import Trace
    from tests.fakes.openai_server import FakeOpenAIServer

    p = profile()
    desk = FakeDesktop(tmp_path, 1920, 1080)
    coords = p.screen((1920, 1080))
    tools = p.tools({"computer": ComputerTool(desk, coords), "done": DoneTool()})
    script = [
        {"text": '[computer(action="left_click", coordinate=[448, 120])]'},
        {"text": 'I will now finish.\n```tool_code\n[done(status="DONE", answer="ok")]\n```'},
    ]
    result = EpisodeResult(task_id="app/task", app="app")
    trace = Trace(tmp_path / "trace.jsonl")
    with FakeOpenAIServer(script) as server:
        provider = OpenAICompatProvider(base_url=server.base_url, model="gemma3", retry_base_s=0.001)
        provider.text_calls = p.text_calls
        loop = AgentLoop(provider, tools, Limits(10, 10, 30.0, 3), trace, result, profile=p)
        system = p.system_prompt(PromptContext(list(tools), coords.image))
        try:
            await loop.run(system, "Click the menu", coords.fit(desk.screenshot()))
        finally:
            await provider.aclose()
            trace.close()
    assert result.termination == "done" and result.final_action == "DONE"
    assert desk.actions == [{"kind": "click", "button": 1, "count": 1, "x": 960, "y": 145}]
    first, second = server.requests
    assert "tools" not in first
    assert [m["role"] for m in first["messages"]] == ["user"]
    opening = first["messages"][0]["content"][0]["text"]
    assert opening.startswith(system) and "You have access to functions." in opening and opening.endswith("\nClick the menu")
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert second["messages"][1]["content"] == '[computer(action="left_click", coordinate=[448, 120])]'
    assert second["messages"][2]["content"][0]["text"] == "```tool_output\nok\n```"
    assert second["messages"][2]["content"][1]["type"] == "image_url"
