"""The AgentLoop against a fake desktop: oracle replay, limits, strict modality, pruning, real HTTP."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from mcpworld.agent.loop import IMAGE_PLACEHOLDER, NUDGE, AgentLoop, Limits, LoopDetector, image_part, prune_images
from mcpworld.agent.providers.base import Provider, Reply, ToolCall
from mcpworld.agent.providers.openai_compat import OpenAICompatProvider
from mcpworld.agent.providers.oracle import OracleProvider
from mcpworld.agent.tools.bash import BashTool
from mcpworld.agent.tools.done import DoneTool
from mcpworld.core.errors import EndpointUnreachable, InfraError
from mcpworld.core.result import EpisodeResult
from mcpworld.core.task_parts import OracleStep
from mcpworld.env.screen import encode
from mcpworld.telemetry.trace import Trace
from tests.fakes.openai_server import FakeOpenAIServer
from tests.helpers.agent_loop import Scripted, call, events, gui_tools, make_loop, run
from tests.helpers.environments import FakeDesktop


@pytest.fixture
def desk(tmp_path: Path) -> FakeDesktop:
    return FakeDesktop(tmp_path)


def tool_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["role"] == "tool"]


# --------------------------------------------------------------------------- (a) oracle replay


async def test_oracle_replays_solution_then_done(tmp_path: Path, desk: FakeDesktop) -> None:
    solution = [
        OracleStep("computer", {"action": "left_click", "coordinate": [10, 20]}),
        OracleStep("computer", {"action": "type", "text": "hello"}),
        OracleStep("computer", {"action": "key", "text": "ctrl+s"}),
    ]
    saved: list[tuple[int, str]] = []

    def save(data: bytes, fmt: str) -> str:
        saved.append((len(data), fmt))
        return f"screens/{len(saved) - 1:03d}.{fmt}"

    loop, result, trace = make_loop(tmp_path, OracleProvider(solution), gui_tools(desk), save_image=save)
    await run(loop, trace, desk.screenshot())

    assert desk.actions == [
        {"kind": "click", "button": 1, "count": 1, "x": 10, "y": 20},
        {"kind": "type", "text": "hello"},
        {"kind": "key", "keys": "ctrl+s"},
    ]
    assert result.termination == "done" and result.final_action == "DONE"
    assert result.steps == 4 and result.llm_calls == 4
    assert {k: (v.ok, v.error) for k, v in result.tool_calls.items()} == {"computer": (3, 0), "done": (1, 0)}
    assert len(saved) == 4 and all(size > 0 for size, _ in saved)  # first screen + one per computer action
    fmt = saved[0][1]

    llm = events(tmp_path, "llm_call")
    tools = events(tmp_path, "tool_call")
    assert [e["n"] for e in llm] == [1, 2, 3, 4]
    assert [e["tool_calls"] for e in llm] == [["computer"]] * 3 + [["done"]]
    assert [e["tool"] for e in tools] == ["computer"] * 3 + ["done"]
    assert [e["step"] for e in tools] == [1, 2, 3, 4]
    assert all(e["ok"] for e in tools)
    assert "Episode ended: DONE" in tools[3]["output"]
    observations = events(tmp_path, "observation")
    assert [e["screenshot"] for e in observations] == [f"screens/{i:03d}.{fmt}" for i in range(4)]
    assert [e.get("step") for e in observations] == [None, 1, 2, 3]
    assert [e["type"] for e in trace.events] == [e["type"] for e in events(tmp_path)]


async def test_first_screen_sent_only_with_vision(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([])
    loop, _, trace = make_loop(tmp_path, provider, gui_tools(desk))
    await run(loop, trace, desk.screenshot())
    first = provider.calls[0]
    assert first[0] == {"role": "system", "content": "system prompt"}
    parts = first[1]["content"]
    assert parts[0] == {"type": "text", "text": "do the task"}
    assert parts[1]["image_url"]["url"].startswith("data:image/")
    assert ";base64," in parts[1]["image_url"]["url"]
    assert [t["function"]["name"] for t in provider.tools[0]] == ["computer", "done"]

    (tmp_path / "b").mkdir()
    provider = Scripted([call("computer", 0, action="key", text="a")])
    loop, _, trace = make_loop(tmp_path / "b", provider, gui_tools(desk), send_images=False)
    await run(loop, trace, desk.screenshot())
    assert all(
        isinstance(m["content"], str) or m["content"] is None or all(p["type"] == "text" for p in m["content"])
        for m in provider.calls[1]
    )
    assert provider.calls[0][1]["content"] == [{"type": "text", "text": "do the task"}]


async def test_usage_latency_and_ttft_accounted(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([call("computer", 0, action="screenshot"), call("done", 1, status="DONE")])
    loop, result, trace = make_loop(tmp_path, provider, gui_tools(desk))
    await run(loop, trace)
    assert (result.tokens_in, result.tokens_out) == (20, 4)
    assert result.ttft_s == [0.005, 0.005] and result.llm_latency_s == [0.01, 0.01]
    assert result.tokens_estimated is False


# --------------------------------------------------------------------------- (b) limits


async def test_max_steps_zero_never_calls_the_provider(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([])
    loop, result, trace = make_loop(tmp_path, provider, gui_tools(desk), max_steps=0)
    await run(loop, trace)
    assert result.termination == "max_steps"
    assert provider.calls == [] and result.llm_calls == 0 and result.steps == 0


async def test_max_steps_stops_a_long_solution(tmp_path: Path, desk: FakeDesktop) -> None:
    solution = [OracleStep("computer", {"action": "key", "text": "a"})] * 5
    loop, result, trace = make_loop(tmp_path, OracleProvider(solution), gui_tools(desk), max_steps=2)
    await run(loop, trace)
    assert result.termination == "max_steps" and result.steps == 2 and len(desk.actions) == 2
    assert result.final_action is None


async def test_a_step_is_a_model_turn_whatever_number_of_calls_it_holds(tmp_path: Path, desk: FakeDesktop) -> None:
    """OSWorld's runner: three actions in one turn, then done, fit a budget of 2 steps."""
    reply = Reply(tool_calls=[ToolCall(f"k{i}", "computer", {"action": "key", "text": str(i)}) for i in range(3)])
    provider = Scripted([reply, call("done", 9, status="DONE")])
    loop, result, trace = make_loop(tmp_path, provider, gui_tools(desk), max_steps=2)
    await run(loop, trace)
    assert result.termination == "done" and result.steps == 2 and result.actions == 4
    assert desk.actions == [{"kind": "key", "keys": str(i)} for i in range(3)]
    assert len(provider.calls) == 2
    calls = events(tmp_path, "tool_call")
    assert [(e["step"], e["action"]) for e in calls] == [(1, 1), (1, 2), (1, 3), (2, 4)]


async def test_a_turn_without_a_call_uses_a_step(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([Reply(text="let me think"), Reply(text="still thinking"), call("done", 1, status="DONE")])
    loop, result, trace = make_loop(tmp_path, provider, gui_tools(desk), max_steps=2)
    await run(loop, trace)
    assert result.termination == "max_steps" and result.steps == 2 and result.actions == 0
    assert len(provider.calls) == 2


async def test_max_llm_calls(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([Reply(text="thinking"), Reply(text="still thinking"), Reply(text="more")])
    loop, result, trace = make_loop(tmp_path, provider, gui_tools(desk), max_llm_calls=2)
    await run(loop, trace)
    assert result.termination == "max_llm_calls"
    assert result.llm_calls == 2 and len(provider.calls) == 2 and result.steps == 2 and result.actions == 0
    # a reply without tool calls is answered with a nudge
    assert provider.calls[1][-2] == {"role": "assistant", "content": "thinking"}
    assert provider.calls[1][-1] == {"role": "user", "content": NUDGE}


class Sleepy(Provider):
    async def complete(self, messages, tools):
        await asyncio.sleep(30)
        raise AssertionError("should have been cancelled")


async def test_timeout_cancels_a_slow_provider(tmp_path: Path, desk: FakeDesktop) -> None:
    loop, result, trace = make_loop(tmp_path, Sleepy(), gui_tools(desk), timeout_s=0.2)
    started = asyncio.get_running_loop().time()
    await run(loop, trace)
    assert result.termination == "timeout"
    assert asyncio.get_running_loop().time() - started < 5
    assert result.llm_calls == 0


# --------------------------------------------------------------------------- (c) strict modality


async def test_tool_outside_the_modality_is_a_hallucination(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([call("bash", 0, command="touch pwned"), call("done", 1, status="DONE")])
    loop, result, trace = make_loop(tmp_path, provider, gui_tools(desk))
    await run(loop, trace)

    assert desk.shell_calls == [] and not (desk.home / "pwned").exists()
    hall = events(tmp_path, "hallucination")
    assert len(hall) == 1 and hall[0]["tool"] == "bash" and "touch pwned" in hall[0]["args"]
    tool_msg = tool_messages(provider.calls[1])[0]
    assert tool_msg["tool_call_id"] == "c0"
    assert tool_msg["content"].startswith("Error: ") and "'bash'" in tool_msg["content"]
    assert "computer, done" in tool_msg["content"]
    assert sum(c.error for c in result.tool_calls.values()) == 1
    assert "bash" not in result.tool_calls or result.tool_calls["bash"].ok == 0
    bad = events(tmp_path, "tool_call")[0]
    assert bad["tool"] == "bash" and bad["ok"] is False and "error" in bad
    assert result.termination == "done" and result.steps == 2


async def test_cli_modality_has_no_computer(tmp_path: Path, desk: FakeDesktop) -> None:
    tools = {"bash": BashTool(desk), "done": DoneTool()}
    provider = Scripted(
        [call("computer", 0, action="left_click", coordinate=[1, 1]), call("bash", 1, command="echo hi > out.txt")]
    )
    loop, result, trace = make_loop(tmp_path, provider, tools)
    await run(loop, trace)
    assert desk.actions == []
    assert (desk.home / "out.txt").read_text() == "hi\n"
    assert [e["tool"] for e in events(tmp_path, "hallucination")] == ["computer"]
    assert result.tool_calls["bash"].ok == 1


async def test_unparseable_arguments_and_bad_calls_go_back_to_the_model(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted(
        [call("computer", 0, _raw='{"action": "left_cl'), call("computer", 1, action="fly"), call("done", 2, status="DONE")]
    )
    loop, result, trace = make_loop(tmp_path, provider, gui_tools(desk))
    await run(loop, trace)
    assert desk.actions == []
    assert result.tool_calls["computer"].error == 2 and result.tool_calls["computer"].ok == 0
    msgs = tool_messages(provider.calls[2])
    assert "could not be parsed as JSON" in msgs[0]["content"]
    assert msgs[1]["content"].startswith("Error: unknown computer action 'fly'")
    assert [(e["tool"], e["kind"]) for e in events(tmp_path, "hallucination")] == [
        ("computer", "invalid_json"),
        ("computer", "invalid_arguments"),
    ]
    assert result.hallucinations == 2 and result.numbers()["hallucinations"] == 2
    assert result.termination == "done"


# --------------------------------------------------------------------------- (d) FAIL


@pytest.mark.parametrize("status", ["FAIL", "infeasible"])
async def test_done_fail_is_infeasible(tmp_path: Path, desk: FakeDesktop, status: str) -> None:
    provider = Scripted([call("done", 0, status=status)])
    loop, result, trace = make_loop(tmp_path, provider, gui_tools(desk))
    await run(loop, trace)
    assert result.termination == "infeasible" and result.final_action == "FAIL"
    assert result.steps == 1


async def test_done_with_bad_status_does_not_end(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([call("done", 0, status="maybe")])
    loop, result, trace = make_loop(tmp_path, provider, gui_tools(desk))
    await run(loop, trace)
    assert result.tool_calls["done"].error == 1 and result.tool_calls["done"].ok == 1
    assert result.termination == "done" and result.steps == 2


# --------------------------------------------------------------------------- (e) screenshot pruning


def image_msg(tag: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "image_url", "image_url": {"url": f"data:{tag}"}}]}


def urls(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in messages:
        if isinstance(m.get("content"), list):
            for p in m["content"]:
                out.append(p["image_url"]["url"] if p["type"] == "image_url" else p["text"])
    return out


def test_prune_keeps_the_k_most_recent_images() -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "task"}, {"type": "image_url", "image_url": {"url": "data:0"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
        image_msg("1"),
        image_msg("2"),
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "data:3"}},
                {"type": "image_url", "image_url": {"url": "data:4"}},
            ],
        },
    ]
    prune_images(messages, 3)
    assert urls(messages) == ["task", IMAGE_PLACEHOLDER, IMAGE_PLACEHOLDER, "data:2", "data:3", "data:4"]
    assert messages[0]["content"] == "sys" and messages[2]["content"] == "ok"
    prune_images(messages, 3)  # idempotent
    assert urls(messages).count(IMAGE_PLACEHOLDER) == 2
    prune_images(messages, 1)
    assert urls(messages) == ["task"] + [IMAGE_PLACEHOLDER] * 4 + ["data:4"]
    prune_images(messages, 0)
    assert urls(messages) == ["task"] + [IMAGE_PLACEHOLDER] * 5


async def test_loop_prunes_before_each_call(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([call("computer", i, action="key", text="a") for i in range(4)])
    loop, _, trace = make_loop(tmp_path, provider, gui_tools(desk), keep=2)
    await run(loop, trace, desk.screenshot())
    for sent in provider.calls:
        parts = urls(sent)
        assert sum(p.startswith("data:image/") for p in parts) <= 2
    last = urls(provider.calls[-1])
    assert last.count(IMAGE_PLACEHOLDER) == 3 and last[-1].startswith("data:image/")


def test_image_part_is_a_data_uri() -> None:
    image = Image.new("RGB", (4, 4))
    part = image_part(encode(image, "png"), "png")
    assert part["type"] == "image_url" and part["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    part = image_part(encode(image, "jpeg"), "jpeg")
    assert part["image_url"]["url"].startswith("data:image/jpeg;base64,/9j/")


# --------------------------------------------------------------------------- (f) real HTTP


async def test_end_to_end_against_a_fake_openai_server(tmp_path: Path) -> None:
    env = FakeDesktop(tmp_path, 1024, 768)
    script = [
        {
            "text": "Clicking the middle.",
            "usage": {"prompt_tokens": 100, "completion_tokens": 7},
            "tool_calls": [
                {"id": "call_click", "name": "computer", "arguments": {"action": "left_click", "coordinate": [500, 500]}}
            ],
        },
        {
            "usage": {"prompt_tokens": 150, "completion_tokens": 5},
            "delay_first_s": 0.05,
            "tool_calls": [{"id": "call_done", "name": "done", "arguments": {"status": "DONE"}}],
        },
    ]
    with FakeOpenAIServer(script) as server:
        provider = OpenAICompatProvider(base_url=server.base_url, model="fake-model", retry_base_s=0.001)
        loop, result, trace = make_loop(tmp_path, provider, gui_tools(env, "normalized_1000"))
        try:
            await run(loop, trace, env.screenshot())
        finally:
            await provider.aclose()

    assert env.actions == [{"kind": "click", "button": 1, "count": 1, "x": 512, "y": 384}]
    assert result.termination == "done" and result.final_action == "DONE"
    assert result.llm_calls == 2 and result.steps == 2
    assert (result.tokens_in, result.tokens_out) == (250, 12) and not result.tokens_estimated
    assert len(result.ttft_s) == 2 and result.ttft_s[1] >= 0.05
    assert all(t <= lat for t, lat in zip(result.ttft_s, result.llm_latency_s, strict=False))

    assert len(server.requests) == 2
    first, second = server.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["computer", "done"]
    assert first["tools"][0]["function"]["parameters"]["required"] == ["action"]
    assert first["messages"][1]["content"][1]["image_url"]["url"].startswith("data:image/")

    msgs = second["messages"]
    roles = [m["role"] for m in msgs]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    assistant = msgs[2]
    assert assistant["content"] == "Clicking the middle."
    assert assistant["tool_calls"][0]["id"] == "call_click"
    assert assistant["tool_calls"][0]["function"]["name"] == "computer"
    assert msgs[3]["tool_call_id"] == "call_click"
    after = msgs[4]["content"]
    assert after[0]["type"] == "image_url" and after[0]["image_url"]["url"].startswith("data:image/")
    assert ";base64," in after[0]["image_url"]["url"]

    llm = events(tmp_path, "llm_call")
    assert [e["tokens_in"] for e in llm] == [100, 150]
    assert llm[0]["text"] == "Clicking the middle." and llm[0]["finish_reason"] == "tool_calls"


# --------------------------------------------------------------------------- (g) endpoint failures


async def test_infra_error_ends_the_episode_as_infra_error(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([call("computer", 0, action="key", text="a"), InfraError("HTTP 503 overloaded")])
    loop, result, trace = make_loop(tmp_path, provider, gui_tools(desk))
    await run(loop, trace)
    assert result.termination == "infra_error" and "503" in result.reason
    assert result.steps == 1
    err = events(tmp_path, "error")
    assert err and err[0]["kind"] == "infra" and "503" in err[0]["message"]


async def test_endpoint_unreachable_propagates(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([EndpointUnreachable("ollama endpoint is unreachable")])
    loop, _result, trace = make_loop(tmp_path, provider, gui_tools(desk))
    with pytest.raises(EndpointUnreachable):
        await run(loop, trace)


async def test_unreachable_real_endpoint_propagates(tmp_path: Path, desk: FakeDesktop) -> None:
    from tests.fakes.scripted_server import free_port

    provider = OpenAICompatProvider(base_url=f"http://127.0.0.1:{free_port()}/v1", model="m", max_retries=0)
    loop, _, trace = make_loop(tmp_path, provider, gui_tools(desk))
    with pytest.raises(EndpointUnreachable):
        await run(loop, trace)
    await provider.aclose()


async def test_a_provider_bug_is_the_harness_failure_not_the_agents(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([RuntimeError("boom")])
    loop, result, trace = make_loop(tmp_path, provider, gui_tools(desk))
    await run(loop, trace)
    assert result.termination == "infra_error" and "RuntimeError: boom" in result.reason
    error = events(tmp_path, "error")[0]
    assert error["kind"] == "harness" and "RuntimeError: boom" in error["traceback"]


async def test_infinite_coordinate_goes_back_to_the_model(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([call("computer", 0, action="left_click", coordinate=[float("inf"), 5])])
    loop, result, trace = make_loop(tmp_path, provider, gui_tools(desk))
    await run(loop, trace)
    assert result.termination == "done"
    assert result.tool_calls["computer"].error == 1


# --------------------------------------------------------------------------- (e) loops


def click(n: int, x: int) -> Reply:
    return call("computer", n, action="left_click", coordinate=[x, 5])


async def test_the_same_action_on_an_unchanged_screen_is_one_loop(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([click(i, 10) for i in range(5)] + [call("done", 9, status="DONE")])
    loop, result, trace = make_loop(tmp_path, provider, gui_tools(desk))
    await run(loop, trace)
    loops = events(tmp_path, "loop")
    assert [(e["kind"], e["step"]) for e in loops] == [("repeat", 3)]  # reported once, where it starts
    assert result.loops == 1 and result.numbers()["loops"] == 1
    assert result.termination == "done" and result.steps == 6


async def test_an_a_b_a_b_cycle_is_a_loop_and_can_stop_the_episode(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([click(0, 10), click(1, 20), click(2, 10), click(3, 20), click(4, 10)])
    trace = Trace(tmp_path / "trace.jsonl")
    result = EpisodeResult(task_id="app/task", app="app")
    limits = Limits(20, 20, 10.0, 3, loop_stop=True)
    loop = AgentLoop(provider, gui_tools(desk), limits, trace, result)
    await run(loop, trace)
    assert [e["kind"] for e in events(tmp_path, "loop")] == ["cycle"]
    assert result.termination == "loop" and result.steps == 4


async def test_different_actions_or_a_changing_screen_are_not_loops(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([click(i, 10 + i) for i in range(6)])
    loop, result, trace = make_loop(tmp_path, provider, gui_tools(desk))
    await run(loop, trace)
    assert events(tmp_path, "loop") == [] and result.loops == 0

    class Ticking(FakeDesktop):  # the screen changes after every action: progress, not a loop
        def screenshot(self) -> Image.Image:
            self.screenshots += 1
            return Image.new("RGB", (self.width, self.height), (self.screenshots % 256, 0, 0))

    ticking = Ticking(tmp_path / "t")
    provider = Scripted([click(i, 10) for i in range(5)])
    loop, result, trace = make_loop(tmp_path / "t", provider, gui_tools(ticking))
    await run(loop, trace)
    assert events(tmp_path / "t", "loop") == [] and result.loops == 0
    assert result.steps == 6 and len(ticking.actions) == 5


def test_loop_detector_reports_again_after_the_agent_got_unstuck() -> None:
    detector = LoopDetector(repeats=2)
    seen = [detector.see(a, "same") for a in ["a", "a", "a", "b", "c", "c"]]
    assert seen == [None, "repeat", None, None, None, "repeat"]


async def test_off_screen_coordinates_are_a_hallucination(tmp_path: Path, desk: FakeDesktop) -> None:
    provider = Scripted([call("computer", 0, action="left_click", coordinate=[desk.width + 50, 10])])
    loop, _result, trace = make_loop(tmp_path, provider, gui_tools(desk))
    await run(loop, trace)
    assert desk.actions == []
    (hall,) = events(tmp_path, "hallucination")
    assert hall["kind"] == "off_screen" and "off the screen" in hall["error"]
    assert "off the screen" in tool_messages(provider.calls[1])[0]["content"]
