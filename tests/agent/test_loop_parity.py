"""The loop against the references' own loops (tests/data/parity/loop/, made by running OSWorld's
run_single_example with its Qwen3-VL and UI-TARS agents and computer-use-demo's sampling_loop on
scripted replies): the same replies give the same number of requests and turns, the same turns that
act, the same sampling per request and the same ending. Each profile runs over real HTTP against a
fake server of its protocol. Scripts where we differ on purpose are listed with the reason
(docs/models.md, "The loop"); a fixture script in neither list fails the suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpworld.agent.loop import AgentLoop, Limits
from mcpworld.agent.profiles import ModelView, PromptContext, make_profile
from mcpworld.agent.providers.anthropic import AnthropicProvider
from mcpworld.agent.providers.openai_compat import OpenAICompatProvider
from mcpworld.agent.tools.computer import ComputerTool
from mcpworld.agent.tools.done import DoneTool
from mcpworld.core.result import EpisodeResult
from mcpworld.telemetry.trace import Trace, read_trace
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.openai_server import FakeOpenAIServer
from tests.helpers.environments import FakeDesktop

LOOP = Path(__file__).resolve().parents[1] / "data" / "parity" / "loop"
SCREEN = (1920, 1080)

# what the reference does that we do not, on purpose
DIFFERENT = {
    "qwen3vl": {
        "call_without_action_line": "the reference crashes (IndexError) on a terminate without an Action: line",
        "answer_action": "answer ends the episode with the answer kept (Qwen's cookbook); the reference never runs it",
        "call_on_the_tool_call_line": "a one-line <tool_call>…</tool_call> is read (the reference drops it)",
        "server_error_then_call": "HTTP errors are the provider's retries (providers/http.py), not a turn's",
    },
    "uitars": {
        "call_user": "call_user ends the episode FAIL at once (no user will answer; the reference waits 3 turns)",
        "call_user_on_infeasible_task": "as call_user",
        "server_error_persistent": "HTTP errors are the provider's retries, then infra_error, never DONE",
    },
    "claude": {
        "api_error": "an API error after the provider's retries is infra_error (the reference returns)",
        "unknown_tool_name": "we offer a done tool (the reference has none): that reply ends the episode",
    },
}


def fixture(family: str) -> dict[str, Any]:
    return json.loads((LOOP / f"{family}.json").read_text())


def compared(family: str) -> list[dict[str, Any]]:
    return [s for s in fixture(family)["scripts"] if s["name"] not in DIFFERENT[family]]


def test_every_reference_script_is_compared_or_its_difference_named() -> None:
    for family, skipped in DIFFERENT.items():
        names = {s["name"] for s in fixture(family)["scripts"]}
        assert set(skipped) <= names, set(skipped) - names
        assert len(compared(family)) >= 4


async def drive(
    tmp_path: Path, family: str, script: dict[str, Any]
) -> tuple[EpisodeResult, list[dict[str, Any]], FakeDesktop, list[dict[str, Any]]]:
    views = {
        "qwen3vl": ModelView(name="qwen3vl_32b", id="Qwen/Qwen3-VL-32B-Instruct", coordinates="normalized_1000"),
        "uitars": ModelView(name="ui_tars_1_5_7b", id="ByteDance-Seed/UI-TARS-1.5-7B"),
        "claude": ModelView(name="claude_sonnet_4_5", id="claude-sonnet-4-5-20250929", computer_tool="computer_20250124"),
    }
    profile = make_profile(family, views[family])
    desk = FakeDesktop(tmp_path, *SCREEN)
    coords = profile.screen(SCREEN)
    tools = profile.tools({"computer": ComputerTool(desk, coords), "done": DoneTool()})
    result = EpisodeResult(task_id="parity/loop", app="parity")
    trace = Trace(tmp_path / "trace.jsonl")
    max_steps = script["max_steps"] or 30
    limits = Limits(max_steps, 40, 60.0, profile.keep_screenshots(3))
    if family == "claude":
        replies = [claude_reply(r) for r in script["replies"]]
        server: Any = FakeAnthropicServer(replies, model="claude-sonnet-4-5-20250929")
    else:
        server = FakeOpenAIServer([{"text": r} for r in script["replies"]], model=views[family].id)
    with server:
        if family == "claude":
            budget = script.get("thinking_budget")
            provider: Any = AnthropicProvider(
                base_url=server.base_url,
                model="claude-sonnet-4-5-20250929",
                api_key="k",
                max_tokens=16384,
                temperature=1.0 if budget else None,
                display_size=coords.image,
                computer_tool="computer_20250124",
                betas=["computer-use-2025-01-24"],
                thinking_budget=budget,
                max_retries=0,
            )
        else:
            sampling = {
                "uitars": dict(temperature=0.0, top_p=0.9, frequency_penalty=1.0, max_tokens=1000),
                "qwen3vl": dict(max_tokens=32768),
            }[family]
            provider = OpenAICompatProvider(base_url=server.base_url, model=views[family].id, max_retries=0, **sampling)  # type: ignore[arg-type]
            provider.text_calls = profile.text_calls
        loop = AgentLoop(provider, tools, limits, trace, result, profile=profile)
        try:
            await loop.run(
                profile.system_prompt(PromptContext(list(tools), coords.image)), "Do the task.", coords.fit(desk.screenshot())
            )
        finally:
            trace.close()
            await provider.aclose()
        requests = list(server.requests)
    return result, requests, desk, read_trace(tmp_path / "trace.jsonl")


def claude_reply(reply: dict[str, Any]) -> dict[str, Any]:
    """A Messages reply of the fixture as the fake server's script says it."""
    out: dict[str, Any] = {}
    for block in reply["content"]:
        if block["type"] == "text":
            out["text"] = block["text"]
        elif block["type"] == "thinking":
            out["thinking"] = block["thinking"]
        elif block["type"] == "tool_use":
            out.setdefault("tool_uses", []).append({"id": block["id"], "name": block["name"], "input": block["input"]})
    return out


def ending(result: EpisodeResult) -> str:
    """Our ending in the fixture's words."""
    if result.termination == "end_turn":
        return "no_tool_use"
    if result.final_action in ("DONE", "FAIL"):
        return result.final_action
    return result.termination


def turns_that_acted(events: list[dict[str, Any]], turns: int) -> list[bool]:
    acted = {int(e["step"]) for e in events if e["type"] == "tool_call"}
    return [n + 1 in acted for n in range(turns)]


@pytest.mark.parametrize("script", compared("qwen3vl"), ids=lambda s: s["name"])
async def test_qwen3vl_loop_runs_as_osworlds(tmp_path: Path, script: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    import mcpworld.agent.profiles.qwen3vl_tool as tool_module

    monkeypatch.setattr(tool_module.time, "sleep", lambda s: None)
    result, requests, desk, events = await drive(tmp_path, "qwen3vl", script)
    assert len(requests) == sum(script["requests_per_turn"]) == script["requests"]
    assert result.steps == script["turns"]
    assert ending(result) == script["ended"]
    # every pyautogui action of the reference is one desktop action here; WAIT and DONE are calls too
    ref_desktop = [a for a in script["actions"] if a not in ("WAIT", "DONE", "FAIL")]
    assert len(desk.actions) == len(ref_desktop)
    assert result.actions == len(script["actions"])
    assert turns_that_acted(events, result.steps) == [bool(a) for a in script["actions_per_turn"]]
    assert [r.get("max_tokens") for r in requests] == [p["max_tokens"] for p in script["request_params"]]
    assert all("seed" not in r and "temperature" not in r for r in requests)  # the reference sends neither


@pytest.mark.parametrize("script", compared("uitars"), ids=lambda s: s["name"])
async def test_uitars_loop_runs_as_osworlds(tmp_path: Path, script: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    import mcpworld.agent.tools.computer as computer_module

    monkeypatch.setattr(computer_module.time, "sleep", lambda s: None)
    result, requests, desk, _events = await drive(tmp_path, "uitars", script)
    assert len(requests) == script["requests"]
    assert [float(r["temperature"]) for r in requests] == [float(t) for t in script["temperatures"]]
    assert result.steps == script["turns"]
    assert ending(result) == script["ended"] or (script["ended"] == "DONE" and result.final_action == "DONE")
    ran = [a for turn in script["actions_short"] for a in turn if a not in ("DONE", "FAIL", "WAIT")]
    assert bool(desk.actions) == any(not a.startswith("#") for a in ran)


@pytest.mark.parametrize("script", compared("claude"), ids=lambda s: s["name"])
async def test_claude_loop_runs_as_the_computer_use_demo(tmp_path: Path, script: dict[str, Any]) -> None:
    result, requests, desk, events = await drive(tmp_path, "claude", script)
    assert len(requests) == script["requests"] == script["turns"] == result.llm_calls == result.steps
    assert ending(result) == script["ended"]
    clicks = [(a["x"], a["y"]) for a in desk.actions if a["kind"] == "click"]
    want = []
    for line in script["xdotool"]:  # xdotool's pointer stops at the screen's edge, as X's does
        _, _, x, y, *_ = line.split()
        want.append((min(int(x), SCREEN[0] - 1), min(int(y), SCREEN[1] - 1)))
    assert clicks == want
    errors = [e.get("error", "") for e in events if e["type"] == "tool_call"]
    for ref_error, ours in zip(script["tool_errors"], errors, strict=False):
        assert bool(ref_error) == bool(ours) and (not ref_error or ref_error in ours)
    assert ("thinking" in requests[0]) == bool(script["thinking_budget"])
