"""Tool calls as open models write them (Qwen-VL ``computer_use``, ``click``, ``Ctrl + S``…) mapped onto
the offered tools before dispatch — and only onto offered tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpworld.agent.providers.base import Reply, ToolCall
from mcpworld.agent.tools.bash import BashTool
from mcpworld.agent.tools.done import DoneTool
from mcpworld.agent.tools.normalize import normalize_call, normalize_chord, normalize_keys
from tests.helpers.agent_loop import Scripted, events, gui_tools, make_loop, run
from tests.helpers.environments import FakeDesktop

GUI = {"computer", "done"}
CLI = {"bash", "done"}


# --------------------------------------------------------------------------- chords


@pytest.mark.parametrize(
    "written, expected",
    [
        ("Ctrl + S", "ctrl+s"),
        ("control-s", "ctrl+s"),
        ("CMD+shift+T", "super+shift+t"),
        ("Ctrl-Shift-T", "ctrl+shift+t"),  # every dashed modifier, not only the first
        ("ctrl+a Delete", "ctrl+a Delete"),  # a sequence of two chords
        ("ctrl + a   Delete", "ctrl+a Delete"),
        ("Return", "Return"),
        ("+", "+"),
        ("F5", "F5"),  # a single key keeps its case
        ("alt-tab", "alt+tab"),
        ("ctrl++", "ctrl+plus"),  # zoom in: the plus key is not dropped
    ],
)
def test_chords(written: str, expected: str) -> None:
    assert normalize_keys(written) == expected


def test_chord_of_one_key_is_untouched() -> None:
    assert normalize_chord("Escape") == "Escape"
    assert normalize_chord("  Tab ") == "Tab"
    assert normalize_chord("ctrl+S") == "ctrl+s"


def test_keys_as_a_list_are_one_chord() -> None:
    assert normalize_keys(["ctrl", "c"]) == "ctrl+c"
    assert normalize_keys(["Control", "Shift", "T"]) == "ctrl+shift+t"
    assert normalize_keys(["Return"]) == "Return"
    assert normalize_keys(["ctrl", "+"]) == "ctrl+plus"


def test_keys_that_are_not_keys_are_left_alone() -> None:
    assert normalize_keys("") == ""
    assert normalize_keys([]) == []
    assert normalize_keys(["ctrl", 3]) == ["ctrl", 3]
    assert normalize_keys(None) is None


# --------------------------------------------------------------------------- Qwen-VL computer_use


def test_qwen_key_list() -> None:
    assert normalize_call("computer_use", {"action": "key", "keys": ["ctrl", "s"]}, GUI) == (
        "computer",
        {"action": "key", "text": "ctrl+s"},
    )


def test_qwen_click_kept() -> None:
    assert normalize_call("computer_use", {"action": "left_click", "coordinate": [10, 20]}, GUI) == (
        "computer",
        {"action": "left_click", "coordinate": [10, 20]},
    )


def test_qwen_scroll_pixels() -> None:
    name, args = normalize_call("computer_use", {"action": "scroll", "pixels": -300}, GUI)
    assert name == "computer"
    assert args == {"action": "scroll", "scroll_direction": "down", "scroll_amount": 3}
    _, up = normalize_call("computer_use", {"action": "scroll", "pixels": 50, "coordinate": [1, 2]}, GUI)
    assert up == {"action": "scroll", "coordinate": [1, 2], "scroll_direction": "up", "scroll_amount": 1}


def test_qwen_wait_time() -> None:
    assert normalize_call("computer_use", {"action": "wait", "time": 2}, GUI) == ("computer", {"action": "wait", "duration": 2})


@pytest.mark.parametrize(
    "status, final", [("success", "DONE"), ("failure", "FAIL"), ("infeasible", "FAIL"), ("completed", "DONE")]
)
def test_qwen_terminate(status: str, final: str) -> None:
    assert normalize_call("terminate", {"status": status}, GUI) == ("done", {"status": final})


def test_terminate_without_status_is_done_and_an_odd_status_is_kept() -> None:
    assert normalize_call("terminate", {}, GUI) == ("done", {"status": "DONE"})
    assert normalize_call("done", {"status": "maybe"}, GUI) == ("done", {"status": "maybe"})


# --------------------------------------------------------------------------- action aliases


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"action": "click", "coordinate": [1, 2]}, {"action": "left_click", "coordinate": [1, 2]}),
        ({"action": "press", "text": "Ctrl + S"}, {"action": "key", "text": "ctrl+s"}),
        ({"action": "hotkey", "keys": ["ctrl", "c"]}, {"action": "key", "text": "ctrl+c"}),
        ({"action": "type_text", "text": "hi"}, {"action": "type", "text": "hi"}),
        ({"action": "write", "content": "hi"}, {"action": "type", "text": "hi"}),
        ({"action": "move", "coordinate": [5, 6]}, {"action": "mouse_move", "coordinate": [5, 6]}),
        (
            {"action": "drag", "start": [1, 2], "coordinate": [3, 4]},
            {"action": "left_click_drag", "start_coordinate": [1, 2], "coordinate": [3, 4]},
        ),
        ({"action": "scroll_up"}, {"action": "scroll", "scroll_direction": "up"}),
        (
            {"action": "scroll", "direction": "left", "amount": 2},
            {"action": "scroll", "scroll_direction": "left", "scroll_amount": 2},
        ),
        ({"action": "Left Click", "x": 10, "y": 20}, {"action": "left_click", "coordinate": [10, 20]}),
        ({"action": "double_click", "position": [7, 8]}, {"action": "double_click", "coordinate": [7, 8]}),
        ({"action": "type", "text": "Ctrl + S"}, {"action": "type", "text": "Ctrl + S"}),  # typed text is not a chord
    ],
)
def test_action_aliases(args: dict[str, Any], expected: dict[str, Any]) -> None:
    assert normalize_call("computer", args, GUI) == ("computer", expected)


def test_x_y_become_a_coordinate() -> None:
    _, args = normalize_call("computer", {"action": "click", "x": 10, "y": 20}, GUI)
    assert args == {"action": "left_click", "coordinate": [10, 20]}
    _, kept = normalize_call("computer", {"action": "click", "x": 10, "y": 20, "coordinate": [1, 1]}, GUI)
    assert kept["coordinate"] == [1, 1]  # an explicit coordinate wins


@pytest.mark.parametrize(
    "name, args, expected",
    [
        ("left_click", {"coordinate": [1, 2]}, {"action": "left_click", "coordinate": [1, 2]}),
        ("click", {"x": 3, "y": 4}, {"action": "left_click", "coordinate": [3, 4]}),
        ("type", {"text": "hi"}, {"action": "type", "text": "hi"}),
        ("hotkey", {"keys": ["alt", "F4"]}, {"action": "key", "text": "alt+f4"}),
        ("scroll_down", {}, {"action": "scroll", "scroll_direction": "down"}),
        ("screenshot", {}, {"action": "screenshot"}),
    ],
)
def test_an_action_called_as_a_tool_is_a_computer_call(name: str, args: dict[str, Any], expected: dict[str, Any]) -> None:
    assert normalize_call(name, args, GUI) == ("computer", expected)


def test_an_action_called_as_a_tool_needs_the_computer() -> None:
    assert normalize_call("left_click", {"coordinate": [1, 2]}, CLI) == ("left_click", {"coordinate": [1, 2]})


def test_the_input_is_not_mutated() -> None:
    args = {"action": "click", "x": 1, "y": 2}
    normalize_call("computer_use", args, GUI)
    assert args == {"action": "click", "x": 1, "y": 2}


# --------------------------------------------------------------------------- only offered tools


def test_tool_alias_onto_an_offered_tool() -> None:
    assert normalize_call("shell", {"command": "ls"}, CLI) == ("bash", {"command": "ls"})
    assert normalize_call("Run Command", {"command": "ls"}, CLI) == ("bash", {"command": "ls"})


def test_tool_alias_onto_a_tool_not_offered_stays() -> None:
    assert normalize_call("shell", {"command": "ls"}, GUI) == ("shell", {"command": "ls"})
    assert normalize_call("computer_use", {"action": "click"}, CLI) == ("computer_use", {"action": "click"})


def test_a_computer_call_in_a_cli_toolset_stays_computer() -> None:
    args = {"action": "click", "x": 1, "y": 2}
    assert normalize_call("computer", args, CLI) == ("computer", args)


def test_offered_may_be_the_tools_dict() -> None:
    offered = {"computer": object(), "done": object()}
    assert normalize_call("computer_use", {"action": "click"}, offered) == ("computer", {"action": "left_click"})


def test_raw_arguments_are_untouched() -> None:
    raw = {"_raw": '{"action": "cli'}
    assert normalize_call("computer_use", raw, GUI) == ("computer_use", raw)
    assert normalize_call("terminate", raw, GUI) == ("terminate", raw)


def test_an_unknown_tool_is_unchanged() -> None:
    assert normalize_call("browser", {"url": "x"}, GUI) == ("browser", {"url": "x"})


# --------------------------------------------------------------------------- through the loop


def reply(name: str, n: int, **args: Any) -> Reply:
    return Reply(tool_calls=[ToolCall(f"q{n}", name, args)])


async def test_loop_runs_qwen_calls(tmp_path: Path) -> None:
    desk = FakeDesktop(tmp_path)
    provider = Scripted([reply("computer_use", 0, action="click", x=10, y=20), reply("terminate", 1, status="success")])
    loop, result, trace = make_loop(tmp_path, provider, gui_tools(desk))
    await run(loop, trace)

    assert desk.actions == [{"kind": "click", "button": 1, "count": 1, "x": 10, "y": 20}]
    assert result.termination == "done" and result.final_action == "DONE"
    assert result.steps == 2 and result.hallucinations == 0
    assert events(tmp_path, "hallucination") == []
    assert {k: (v.ok, v.error) for k, v in result.tool_calls.items()} == {"computer": (1, 0), "done": (1, 0)}

    click, done = events(tmp_path, "tool_call")
    assert click["tool"] == "computer" and click["ok"] is True
    assert json.loads(click["args"]) == {"action": "left_click", "coordinate": [10, 20]}
    assert click["as_written"]["tool"] == "computer_use"
    assert json.loads(click["as_written"]["args"]) == {"action": "click", "x": 10, "y": 20}
    assert done["tool"] == "done" and done["as_written"]["tool"] == "terminate"
    assert json.loads(done["as_written"]["args"]) == {"status": "success"}
    # what the model is shown afterwards keeps its own call as it wrote it
    assistant = next(m for m in provider.calls[1] if m["role"] == "assistant")
    assert assistant["tool_calls"][0]["function"]["name"] == "computer_use"


async def test_loop_call_needing_no_mapping_has_no_as_written(tmp_path: Path) -> None:
    desk = FakeDesktop(tmp_path)
    provider = Scripted([reply("computer", 0, action="left_click", coordinate=[1, 2])])
    loop, _, trace = make_loop(tmp_path, provider, gui_tools(desk))
    await run(loop, trace)
    assert all("as_written" not in e for e in events(tmp_path, "tool_call"))


async def test_loop_computer_use_in_cli_is_a_hallucination(tmp_path: Path) -> None:
    desk = FakeDesktop(tmp_path)
    tools = {"bash": BashTool(desk), "done": DoneTool()}
    provider = Scripted([reply("computer_use", 0, action="click", x=1, y=1), reply("shell", 1, command="echo hi > out.txt")])
    loop, result, trace = make_loop(tmp_path, provider, tools)
    await run(loop, trace)
    assert desk.actions == []
    assert (desk.home / "out.txt").read_text() == "hi\n"
    hall = events(tmp_path, "hallucination")
    assert [(e["tool"], e["kind"]) for e in hall] == [("computer_use", "unknown_tool")]
    assert result.tool_calls["bash"].ok == 1 and result.termination == "done"
