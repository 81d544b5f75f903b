"""Each family's reference loop, behind the Profile seam (LoopRules): what one step is, what a turn
without a call does, what an unreadable call does. The counts are checked against the references
themselves in test_loop_parity.py; these pin the rules on small scripts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcpworld.agent.loop import NUDGE, AgentLoop, Limits
from mcpworld.agent.profiles import ModelView, PromptContext, make_profile
from mcpworld.agent.profiles.base import NoCall, Profile
from mcpworld.agent.providers.base import Reply, ToolCall
from mcpworld.agent.tools.computer import ComputerTool
from mcpworld.agent.tools.done import DoneTool
from mcpworld.core.result import EpisodeResult
from mcpworld.telemetry.trace import Trace, read_trace
from tests.helpers.agent_loop import Scripted
from tests.helpers.environments import FakeDesktop

PROFILES = {
    "qwen3vl": ModelView(name="qwen3vl_32b", id="Qwen/Qwen3-VL-32B-Instruct", coordinates="normalized_1000"),
    "claude": ModelView(name="claude_sonnet_4_5", id="claude-sonnet-4-5", computer_tool="computer_20250124"),
    "uitars": ModelView(name="ui_tars_1_5_7b", id="ByteDance-Seed/UI-TARS-1.5-7B"),
    "generic": ModelView(name="m", id="m"),
    "gemma": ModelView(name="gemma3_tools_27b", id="gemma3:27b"),
}


def qwen_call(action: str, **args: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": "computer_use", "arguments": {"action": action, **args}}) + "\n</tool_call>"


async def drive(
    tmp_path: Path, family: str, replies: list[Reply], *, max_steps: int = 10, max_llm_calls: int = 40
) -> tuple[EpisodeResult, Scripted, FakeDesktop, Profile]:
    profile = make_profile(family, PROFILES[family])
    desk = FakeDesktop(tmp_path, 1000, 1000)
    coords = profile.screen((1000, 1000))
    tools = profile.tools({"computer": ComputerTool(desk, coords), "done": DoneTool()})
    provider = Scripted(replies)
    trace = Trace(tmp_path / "trace.jsonl")
    result = EpisodeResult(task_id="app/task", app="app")
    loop = AgentLoop(
        provider, tools, Limits(max_steps, max_llm_calls, 30.0, profile.keep_screenshots(3)), trace, result, profile=profile
    )
    try:
        await loop.run(
            profile.system_prompt(PromptContext(list(tools), coords.image)), "do the task", coords.fit(desk.screenshot())
        )
    finally:
        trace.close()
    return result, provider, desk, profile


def test_every_family_states_its_rules() -> None:
    rules = {name: make_profile(name, view).loop for name, view in PROFILES.items()}
    assert rules["claude"].no_call == NoCall.end
    assert rules["qwen3vl"].no_call == NoCall.skip and not rules["qwen3vl"].show_unreadable
    assert rules["uitars"].no_call == NoCall.end and rules["uitars"].end_as == ("unreadable", "DONE")
    assert (rules["uitars"].unreadable_tries, rules["uitars"].retry_temperature) == (3, 1.0)
    assert rules["uitars"].last_turn_fails and not rules["qwen3vl"].last_turn_fails
    assert rules["generic"].no_call == rules["gemma"].no_call == NoCall.nudge


async def test_qwen_two_calls_in_one_turn_are_one_step(tmp_path: Path) -> None:
    """The issue's run: max_steps=3, a two-call turn, a wait, terminate: done, not max_steps."""
    replies = [
        Reply(
            text="Action: Click, then type.\n"
            + qwen_call("left_click", coordinate=[500, 500])
            + "\n"
            + qwen_call("type", text="hi")
        ),
        Reply(text="Action: Wait.\n" + qwen_call("wait", time=0)),
        Reply(text="Action: Done.\n" + qwen_call("terminate", status="success")),
    ]
    result, _provider, desk, _ = await drive(tmp_path, "qwen3vl", replies, max_steps=3)
    assert (result.termination, result.steps, result.actions, result.llm_calls) == ("done", 3, 4, 3)
    assert [a["kind"] for a in desk.actions] == ["click", "type"]


async def test_qwen_turn_without_a_call_is_a_step_and_sends_nothing_more(tmp_path: Path) -> None:
    replies = [
        Reply(text="I think I should click the button."),
        Reply(text="Action: Done.\n" + qwen_call("terminate", status="success")),
    ]
    result, provider, _, _ = await drive(tmp_path, "qwen3vl", replies)
    assert (result.termination, result.steps, result.llm_calls) == ("done", 2, 2)
    second = provider.calls[1]
    assert not any(NUDGE in json.dumps(m) for m in second)  # no nudge: the reference just asks again
    # the reference re-sends the same screen: two turns, each with the first screenshot
    images = [p for m in second for p in m["content"] if isinstance(p, dict) and p.get("type") == "image_url"]
    assert len(images) == 2 and images[0] == images[1]


async def test_qwen_unreadable_call_is_skipped_unseen_but_counted(tmp_path: Path) -> None:
    replies = [
        Reply(text='Action: Click.\n<tool_call>\n{"name": "computer_use", "arguments": {broken\n</tool_call>'),
        Reply(text="Action: Done.\n" + qwen_call("terminate", status="success")),
    ]
    result, provider, desk, _ = await drive(tmp_path, "qwen3vl", replies)
    assert (result.termination, result.steps, result.actions, result.hallucinations) == ("done", 2, 1, 1)
    assert not any("could not be parsed" in json.dumps(m) for m in provider.calls[1])
    kinds = [e["kind"] for e in read_trace(tmp_path / "trace.jsonl") if e["type"] == "hallucination"]
    assert kinds == ["invalid_json"] and desk.actions == []


async def test_claude_text_only_reply_ends_the_episode(tmp_path: Path) -> None:
    """The issue's run sent 40 requests (max_llm_calls) after "Done."; the reference sends none more."""
    replies = [
        Reply(
            tool_calls=[
                ToolCall("t1", "computer", {"action": "screenshot"}),
                ToolCall("t2", "computer", {"action": "left_click", "coordinate": [10, 10]}),
            ]
        ),
        Reply(text="Done. The task is complete."),
        Reply(text="never asked"),
    ]
    result, provider, desk, _ = await drive(tmp_path, "claude", replies, max_steps=10, max_llm_calls=40)
    assert (result.termination, result.llm_calls, result.steps, result.actions) == ("end_turn", 2, 2, 2)
    assert len(provider.calls) == 2 and result.final_action is None
    assert [a["kind"] for a in desk.actions] == ["click"]


async def test_claude_first_reply_without_a_call_ends_at_once(tmp_path: Path) -> None:
    result, _provider, _, _ = await drive(tmp_path, "claude", [Reply(text="I cannot help with that.")])
    assert (result.termination, result.llm_calls, result.steps) == ("end_turn", 1, 1)


async def test_uitars_newline_terminated_type_is_one_step(tmp_path: Path) -> None:
    replies = [
        Reply(text="Thought: Type the name.\nAction: type(content='report.txt\\n')"),
        Reply(text="Thought: Saved.\nAction: finished(content='ok')"),
    ]
    result, _, desk, _ = await drive(tmp_path, "uitars", replies, max_steps=2)
    assert (result.termination, result.steps) == ("done", 2)
    assert [a["kind"] for a in desk.actions] == ["type", "key"]


async def test_generic_turn_without_a_call_is_nudged_and_uses_a_step(tmp_path: Path) -> None:
    replies = [Reply(text="thinking"), Reply(tool_calls=[ToolCall("d", "done", {"status": "DONE"})])]
    result, provider, _, _ = await drive(tmp_path, "generic", replies)
    assert (result.termination, result.steps, result.actions) == ("done", 2, 1)
    assert provider.calls[1][-1] == {"role": "user", "content": NUDGE}


def test_claude_point_past_the_image_lands_on_the_screen_edge_as_the_reference_clicks() -> None:
    """computer-use-demo checks a coordinate against the screen's size, not the image it sent."""
    import pytest

    from mcpworld.agent.tools.base import OffScreen

    coords = make_profile("claude", PROFILES["claude"]).screen((1920, 1080))
    assert coords.image == (1366, 768)
    assert coords.to_screen(1400, 900) == (1919, 1079)  # past the image: scaled up, on the edge
    assert coords.to_screen(683, 384) == (960, 540)
    for x, y in ((1921, 10), (10, 1081), (-1, 10)):  # past the screen's own size, or negative: refused
        with pytest.raises(OffScreen):
            coords.to_screen(x, y)


def test_qwen_prompt_names_the_finishing_tool_it_is_offered(tmp_path: Path) -> None:
    """With a screen the reference's rule (terminate); without computer_use (modality=cli/mcp) done."""
    from mcpworld.agent.profiles.qwen3vl import DONE_RULE, TERMINATE_RULE
    from mcpworld.agent.tools.bash import BashTool

    desk = FakeDesktop(tmp_path)
    profile = make_profile("qwen3vl", PROFILES["qwen3vl"])
    gui = profile.tools({"computer": ComputerTool(desk, profile.screen((1000, 1000))), "done": DoneTool()})
    prompt = profile.system_prompt(PromptContext(list(gui), (992, 992)))
    assert TERMINATE_RULE in prompt and DONE_RULE not in prompt
    cli = make_profile("qwen3vl", PROFILES["qwen3vl"])
    offered = cli.tools({"bash": BashTool(desk), "done": DoneTool()})  # type: ignore[arg-type]
    prompt = cli.system_prompt(PromptContext(list(offered), None))
    assert DONE_RULE in prompt and TERMINATE_RULE not in prompt and "terminate" not in prompt
    assert '"name": "done"' in prompt
