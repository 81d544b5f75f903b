"""The agent's tools: coordinate mapping, computer actions, bash, done, and modality toolsets."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mcpworld.agent.tools import build_toolset
from mcpworld.agent.tools.base import OffScreen, ToolError
from mcpworld.agent.tools.bash import BashTool
from mcpworld.agent.tools.computer import ACTIONS, ComputerTool, CoordinateMap
from mcpworld.agent.tools.done import DoneTool
from mcpworld.core.errors import UserError
from tests.helpers.environments import FakeDesktop


@pytest.fixture
def desk(tmp_path: Path) -> FakeDesktop:
    return FakeDesktop(tmp_path)


@pytest.fixture
def rect(tmp_path: Path) -> FakeDesktop:
    return FakeDesktop(tmp_path, 1024, 768)


# --------------------------------------------------------------------------- CoordinateMap


def test_pixels_identity() -> None:
    m = CoordinateMap("pixels", (1000, 1000))
    assert m.to_screen(0, 0) == (0, 0)
    assert m.to_screen(123, 456) == (123, 456)
    assert m.to_screen(999, 999) == (999, 999)
    assert m.from_screen(123, 456) == (123, 456)


def test_pixels_of_a_downscaled_screenshot_are_scaled_up() -> None:
    m = CoordinateMap("pixels", (1000, 1000), image=(500, 500))
    assert m.to_screen(250, 100) == (500, 200)
    assert m.to_screen(100.4, 10) == (201, 20)
    assert m.from_screen(500, 200) == (250, 100)


def test_normalized_1000() -> None:
    square = CoordinateMap("normalized_1000", (1000, 1000))
    assert square.to_screen(500, 500) == (500, 500)
    assert square.to_screen(250, 750) == (250, 750)
    rect = CoordinateMap("normalized_1000", (1024, 768))
    assert rect.to_screen(500, 500) == (512, 384)
    assert rect.to_screen(0, 0) == (0, 0)
    assert rect.to_screen(250, 750) == (256, 576)
    assert rect.from_screen(512, 384) == (500, 500)
    assert rect.from_screen(256, 576) == (250, 750)


@pytest.mark.parametrize("convention, edge", [("pixels", (1024, 768)), ("normalized_1000", (1000, 1000))])
def test_off_screen_is_refused_and_the_far_edge_clamps(convention: str, edge: tuple[int, int]) -> None:
    m = CoordinateMap(convention, (1024, 768))
    for bad in [(-50, -1), (-0.5, 10), (10, edge[1] + 1), (edge[0] + 0.1, 0), (5000, 5000)]:
        with pytest.raises(OffScreen, match=rf"off the screen: x must be in 0\.\.{edge[0]}"):
            m.to_screen(*bad)
    assert m.to_screen(*edge) == (1023, 767)
    assert m.to_screen(0, 0) == (0, 0)


def test_round_trip() -> None:
    m = CoordinateMap("normalized_1000", (1024, 768))
    for x, y in [(0, 0), (100, 900), (500, 500), (999, 1)]:
        assert m.from_screen(*m.to_screen(x, y)) == (x, y)


def test_unknown_convention() -> None:
    with pytest.raises(ToolError, match="relative"):
        CoordinateMap("relative", (10, 10))


# --------------------------------------------------------------------------- ComputerTool


async def call(env: FakeDesktop, args: dict[str, Any], convention: str = "normalized_1000"):
    tool = ComputerTool(env, CoordinateMap(convention, (env.width, env.height)))
    return await tool.call(args)


@pytest.mark.parametrize(
    "args, action",
    [
        ({"action": "left_click", "coordinate": [500, 500]}, {"kind": "click", "button": 1, "count": 1, "x": 512, "y": 384}),
        ({"action": "double_click", "coordinate": [250, 750]}, {"kind": "click", "button": 1, "count": 2, "x": 256, "y": 576}),
        ({"action": "triple_click", "coordinate": [0, 0]}, {"kind": "click", "button": 1, "count": 3, "x": 0, "y": 0}),
        ({"action": "right_click", "coordinate": [500, 500]}, {"kind": "click", "button": 3, "count": 1, "x": 512, "y": 384}),
        ({"action": "middle_click", "coordinate": [500, 500]}, {"kind": "click", "button": 2, "count": 1, "x": 512, "y": 384}),
        ({"action": "left_click"}, {"kind": "click", "button": 1, "count": 1}),
        ({"action": "type", "text": "hello world\n"}, {"kind": "type", "text": "hello world\n"}),
        ({"action": "key", "text": "ctrl+s"}, {"kind": "key", "keys": "ctrl+s"}),
        (
            {"action": "scroll", "coordinate": [500, 500], "scroll_direction": "up", "scroll_amount": 5},
            {"kind": "scroll", "direction": "up", "amount": 5, "x": 512, "y": 384},
        ),
        ({"action": "scroll"}, {"kind": "scroll", "direction": "down", "amount": 3}),
        (
            {"action": "left_click_drag", "start_coordinate": [0, 0], "coordinate": [500, 500]},
            {"kind": "drag", "x0": 0, "y0": 0, "x": 512, "y": 384},
        ),
        ({"action": "mouse_move", "coordinate": [1000, 1000]}, {"kind": "move", "x": 1023, "y": 767}),
        ({"action": "left_mouse_down"}, {"kind": "down", "button": 1}),
        ({"action": "left_mouse_up"}, {"kind": "up", "button": 1}),
    ],
)
async def test_actions_map_onto_env_actions(rect: FakeDesktop, args: dict, action: dict) -> None:
    obs = await call(rect, args)
    assert rect.actions == [action]
    assert obs.ok and obs.final is None
    assert obs.image is not None and obs.image.size == (1024, 768)
    assert rect.settles == 1


async def test_pixel_click_is_identity_on_square(desk: FakeDesktop) -> None:
    await call(desk, {"action": "left_click", "coordinate": [321, 654]}, "pixels")
    assert desk.actions == [{"kind": "click", "button": 1, "count": 1, "x": 321, "y": 654}]


async def test_cursor_position_is_text_in_model_coordinates(rect: FakeDesktop) -> None:
    rect.cursor = (512, 384)
    obs = await call(rect, {"action": "cursor_position"})
    assert obs.text == "X=500,Y=500" and obs.image is None
    assert rect.actions == []


async def test_screenshot_and_wait_return_images_without_acting(desk: FakeDesktop) -> None:
    obs = await call(desk, {"action": "screenshot"})
    assert obs.image is not None and obs.image.size == (1000, 1000)
    obs = await call(desk, {"action": "wait", "duration": 0.01})
    assert obs.image is not None
    assert desk.actions == []


@pytest.mark.parametrize(
    "args, message",
    [
        ({"action": "explode"}, "explode"),
        ({}, "None"),
        ({"action": "type"}, "text"),
        ({"action": "type", "text": ""}, "text"),
        ({"action": "key", "text": 5}, "text"),
        ({"action": "left_click", "coordinate": [1]}, "coordinate"),
        ({"action": "left_click", "coordinate": "500,500"}, "coordinate"),
        ({"action": "left_click", "coordinate": ["a", "b"]}, "coordinate"),
        ({"action": "mouse_move"}, "coordinate"),
        ({"action": "left_click_drag", "coordinate": [1, 2]}, "start_coordinate"),
    ],
)
async def test_bad_calls_raise_tool_error(desk: FakeDesktop, args: dict, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        await call(desk, args)
    assert desk.actions == []


def test_schema_lists_every_action_and_coordinate_range() -> None:
    env = SimpleNamespace(width=1024, height=768)
    schema = ComputerTool(env, CoordinateMap("normalized_1000", (1024, 768))).schema()  # type: ignore[arg-type]
    params = schema["function"]["parameters"]
    assert schema["function"]["name"] == "computer"
    assert params["properties"]["action"]["enum"] == list(ACTIONS)
    assert "0..1000" in params["properties"]["coordinate"]["description"]
    pixels = ComputerTool(env, CoordinateMap("pixels", (1024, 768))).parameters  # type: ignore[arg-type]
    assert "0..1024" in pixels["properties"]["coordinate"]["description"]
    assert "0..768" in pixels["properties"]["coordinate"]["description"]


# --------------------------------------------------------------------------- BashTool


async def test_bash_ok(desk: FakeDesktop) -> None:
    (desk.home / "f.txt").write_text("content\n", encoding="utf-8")
    obs = await BashTool(desk).call({"command": "cat f.txt"})
    assert obs.ok
    assert "content" in obs.text and "[exit code 0]" in obs.text


async def test_bash_nonzero_exit_is_not_ok(desk: FakeDesktop) -> None:
    obs = await BashTool(desk).call({"command": "echo oops >&2; exit 3"})
    assert not obs.ok
    assert "[exit code 3]" in obs.text and "[stderr]\noops" in obs.text


async def test_bash_timeout_is_not_ok(desk: FakeDesktop) -> None:
    obs = await BashTool(desk, timeout_s=0.2).call({"command": "sleep 5"})
    assert not obs.ok
    assert "timed out" in obs.text


@pytest.mark.parametrize("args", [{}, {"command": ""}, {"command": "   "}, {"command": 5}])
async def test_bash_needs_a_command(desk: FakeDesktop, args: dict) -> None:
    with pytest.raises(ToolError, match="command"):
        await BashTool(desk).call(args)
    assert desk.shell_calls == []


# --------------------------------------------------------------------------- DoneTool


@pytest.mark.parametrize(
    "status, final",
    [
        ("DONE", "DONE"),
        ("done", "DONE"),
        (None, "DONE"),
        ("FAIL", "FAIL"),
        ("fail", "FAIL"),
        ("INFEASIBLE", "FAIL"),
        ("infeasible", "FAIL"),
        ("FAILED", "FAIL"),
    ],
)
async def test_done_status_normalised(status: str | None, final: str) -> None:
    args = {} if status is None else {"status": status}
    obs = await DoneTool().call(args)
    assert obs.final == final and obs.ok


async def test_done_keeps_the_agents_answer() -> None:
    """An answer given with done is the episode's answer (result.answer), as Qwen's ``answer`` action's is."""
    assert (await DoneTool().call({"status": "DONE", "answer": "42"})).answer == "42"
    assert (await DoneTool().call({"status": "DONE", "answer": ""})).answer is None
    assert (await DoneTool().call({"status": "FAIL"})).answer is None


@pytest.mark.parametrize("status", ["maybe", "", "SUCCESS"])
async def test_done_bad_status(status: str) -> None:
    with pytest.raises(ToolError, match="DONE or FAIL"):
        await DoneTool().call({"status": status})


# --------------------------------------------------------------------------- toolsets

AGENT = SimpleNamespace(bash_timeout_s=5.0, bash_max_output=1000)


def test_gui_toolset_is_computer_and_done(rect: FakeDesktop) -> None:
    tools = build_toolset(["computer", "done"], rect, "normalized_1000", AGENT)
    assert list(tools) == ["computer", "done"]
    computer = tools["computer"]
    assert isinstance(computer, ComputerTool)
    assert computer.coords.convention == "normalized_1000" and computer.coords.screen == (1024, 768)


def test_cli_toolset_is_bash_and_done(desk: FakeDesktop) -> None:
    tools = build_toolset(["bash", "done"], desk, "pixels", AGENT)
    assert list(tools) == ["bash", "done"]
    bash = tools["bash"]
    assert isinstance(bash, BashTool) and bash.timeout_s == 5.0 and bash.max_output == 1000


def test_done_is_always_offered(desk: FakeDesktop) -> None:
    assert list(build_toolset(["bash"], desk, "pixels", AGENT)) == ["bash", "done"]


@pytest.mark.parametrize("families", [["computer", "shell"], ["gui"]])
def test_unknown_family_is_a_user_error(desk: FakeDesktop, families: list[str]) -> None:
    with pytest.raises(UserError, match=repr(families[-1])):
        build_toolset(families, desk, "pixels", AGENT)


def test_mcp_family_alone_offers_no_screen_and_no_shell(desk: FakeDesktop) -> None:
    # MCP tools are added while the episode's servers run; the static set is just `done`
    assert list(build_toolset(["mcp", "done"], desk, "pixels", AGENT)) == ["done"]


def test_unknown_coordinate_convention(desk: FakeDesktop) -> None:
    with pytest.raises(UserError, match=r"model\.coordinates='relative' is unknown"):  # a config mistake
        build_toolset(["computer", "done"], desk, "relative", AGENT)


async def test_infinite_coordinate_is_a_tool_error(desk: FakeDesktop) -> None:
    with pytest.raises(ToolError):
        await call(desk, {"action": "left_click", "coordinate": [1e999, 5]})
