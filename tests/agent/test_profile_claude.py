"""The Claude profile and the computer tool's Anthropic versions: screenshot sizing, the system
prompt, each version's action set executed as desktop input actions (modifiers held through clicks
and scrolls, hold_key, drags from the cursor, zoom), and the profile through the loop against the
fake Anthropic server (thinking blocks back with their signatures, is_error on failed calls)."""

from __future__ import annotations

import time
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from mcpworld.agent.loop import AgentLoop, Limits
from mcpworld.agent.profiles import PROFILES, ModelView, PromptContext, make_profile
from mcpworld.agent.profiles.claude import ClaudeProfile, api_size, claude_image_size, reference_size, render
from mcpworld.agent.providers.anthropic import AnthropicProvider
from mcpworld.agent.tools.base import OffScreen, ToolError
from mcpworld.agent.tools.bash import BashTool
from mcpworld.agent.tools.computer import VERSIONS, ComputerTool, CoordinateMap
from mcpworld.agent.tools.done import DoneTool
from mcpworld.core.result import EpisodeResult
from mcpworld.telemetry.trace import Trace
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.helpers.environments import FakeDesktop


def claude(computer_tool: str | None = "computer_20250124", image_max: tuple[int, int] | None = None) -> ClaudeProfile:
    profile = make_profile(
        "claude",
        ModelView(name="claude_sonnet_4_5", id="claude-sonnet-4-5-20250929", image_max=image_max, computer_tool=computer_tool),
    )
    assert isinstance(profile, ClaudeProfile)
    return profile


def tool(desk: FakeDesktop, version: str, image: tuple[int, int] | None = None) -> ComputerTool:
    return ComputerTool(desk, CoordinateMap("pixels", (desk.width, desk.height), image), version=version)


# --------------------------------------------------------------------------- screenshot size


@pytest.mark.parametrize(
    "screen, sent",
    [
        ((1000, 1000), (1000, 1000)),  # no target of its aspect: as it is (1.0 MP, under the API's limit)
        ((1024, 768), (1024, 768)),  # XGA already
        ((1280, 800), (1280, 800)),  # WXGA already
        ((1920, 1080), (1366, 768)),  # ~16:9 -> FWXGA
        ((1920, 1200), (1280, 800)),  # 16:10 -> WXGA
        ((1600, 1200), (1024, 768)),  # 4:3 -> XGA
        ((2560, 1080), (1568, 661)),  # no target: the reference sends it whole; we stop at the API's 1568 px
        ((1200, 1200), (1072, 1072)),  # no target, 1.44 MP: the API's ~1.15 MP
    ],
)
def test_screenshot_size_is_the_references_capped_at_what_the_api_keeps(screen, sent) -> None:
    assert claude_image_size(screen) == sent
    assert claude().screen(screen).image == sent
    assert api_size(sent) == sent  # the API will not shrink it again: coordinates are the image's


def test_reference_scaling_and_a_researchers_image_max() -> None:
    assert reference_size((2560, 1440)) == (1366, 768) and reference_size((800, 600)) == (800, 600)
    assert claude_image_size((1920, 1080), [1000, 1000]) == (1000, 562)
    coords = claude(image_max=(1000, 1000)).screen((1920, 1080))
    assert coords.to_screen(500, 281) == (960, 540)


# --------------------------------------------------------------------------- prompt and tools


def test_registered_and_identified() -> None:
    assert "claude" in PROFILES
    profile = claude()
    assert profile.params() == {"profile": "claude", "profile.version": "2"}
    assert "anthropic-quickstarts" in profile.reference and "@44c2b5c" in profile.reference


def test_system_prompt_has_the_references_two_lists_with_our_desktops_facts() -> None:
    prompt = claude().system_prompt(
        PromptContext(tool_names=["computer", "bash", "done"], image=(1024, 768), task_prompt="Work in ~/project.")
    )
    capability = prompt.split("<SYSTEM_CAPABILITY>\n")[1].split("\n</SYSTEM_CAPABILITY>")[0].split("\n")
    important = prompt.split("<IMPORTANT>\n")[1].split("\n</IMPORTANT>")[0].split("\n")
    assert len(capability) == 9 and len(important) == 2 and all(line.startswith("* ") for line in capability + important)
    assert "Debian" in capability[0] and "openbox" in capability[0] and "without internet" in capability[0]
    assert "Chromium" in prompt and "DISPLAY is already set" in prompt
    for false_here in ("Ubuntu", "firefox-esr", "str_replace_based_edit_tool", "DISPLAY=:1", "Use curl instead"):
        assert false_here not in prompt
    assert f"{date.today().year}" in capability[7] and "`done`" in capability[8]
    assert prompt.endswith("</IMPORTANT> Work in ~/project.")  # the task's prompt after a space, as the suffix


def test_without_a_shell_the_prompt_says_nothing_of_one() -> None:
    prompt = render(["computer", "done"], date(2026, 11, 25))
    assert "bash" not in prompt and "pdftotext" not in prompt and "grep" not in prompt
    assert "Wednesday, November 25, 2026" in prompt


def test_every_screenshot_is_kept_and_results_carry_only_their_screenshot() -> None:
    assert claude().keep_screenshots(3) >= 10_000
    windowed = make_profile("claude", ModelView(name="c", id="c", options={"keep_screenshots": 5}))
    assert windowed.keep_screenshots(3) == 5
    messages = [
        {"role": "tool", "tool_call_id": "a", "content": "ok", "images": 1},
        {"role": "tool", "tool_call_id": "b", "content": "ok"},
        {"role": "tool", "tool_call_id": "c", "content": "X=1,Y=2", "images": 1},
    ]
    sent, _ = claude().request(messages, [])
    assert [m["content"] for m in sent] == ["", "ok", "X=1,Y=2"] and messages[0]["content"] == "ok"


def test_tools_become_the_models_computer_tool_version(tmp_path: Path) -> None:
    desk = FakeDesktop(tmp_path)
    generic = ComputerTool(desk, CoordinateMap("pixels", (1000, 1000)))
    tools = {"computer": generic, "bash": BashTool(desk), "done": DoneTool()}
    for version in VERSIONS:
        shown = claude(version).tools(tools)
        assert list(shown) == ["computer", "bash", "done"] and shown["bash"] is tools["bash"]
        computer = shown["computer"]
        assert isinstance(computer, ComputerTool) and computer.version == version and computer.coords is generic.coords
        assert computer.parameters["properties"]["action"]["enum"] == list(VERSIONS[version])
    assert claude(None).tools(tools) is tools
    assert "zoom" in VERSIONS["computer_20251124"] and "zoom" not in VERSIONS["computer_20250124"]
    assert "hold_key" not in VERSIONS["computer_20241022"]


# --------------------------------------------------------------------------- each version's actions


async def test_shift_click_holds_shift_around_the_click(tmp_path: Path) -> None:
    desk = FakeDesktop(tmp_path, 1920, 1080)
    computer = tool(desk, "computer_20250124", (1366, 768))
    obs = await computer.call({"action": "left_click", "coordinate": [683, 384], "text": "shift"})
    assert obs.image is not None and obs.image.size == (1366, 768)
    # the reference agent's order: move there, press shift, click, release shift
    assert desk.actions == [
        {"kind": "move", "x": 960, "y": 540},
        {"kind": "key_down", "keys": "shift"},
        {"kind": "click", "button": 1, "count": 1},
        {"kind": "key_up", "keys": "shift"},
    ]
    desk.actions.clear()  # the reference agent's own argument for click modifiers is ``key``
    await computer.call({"action": "triple_click", "key": "ctrl"})
    assert desk.actions == [
        {"kind": "key_down", "keys": "ctrl"},
        {"kind": "click", "button": 1, "count": 3},
        {"kind": "key_up", "keys": "ctrl"},
    ]


async def test_keys_are_released_when_the_click_fails(tmp_path: Path) -> None:
    class Failing(FakeDesktop):
        def act(self, action: dict[str, Any]) -> None:
            super().act(action)
            if action["kind"] == "click":
                raise RuntimeError("the display went away")

    desk = Failing(tmp_path)
    with pytest.raises(RuntimeError):
        await tool(desk, "computer_20250124").call({"action": "right_click", "text": "alt"})
    assert [a["kind"] for a in desk.actions] == ["key_down", "click", "key_up"]


async def test_hold_key_holds_for_the_duration(tmp_path: Path) -> None:
    desk = FakeDesktop(tmp_path)
    start = time.monotonic()
    obs = await tool(desk, "computer_20250124").call({"action": "hold_key", "text": "shift", "duration": 0.3})
    assert time.monotonic() - start >= 0.3 and obs.image is not None
    assert desk.actions == [{"kind": "key_down", "keys": "shift"}, {"kind": "key_up", "keys": "shift"}]
    for bad, why in (
        ({"text": "shift"}, "needs 'duration'"),
        ({"text": "shift", "duration": 101}, "between 0 and 100"),
        ({"duration": 1}, "needs 'text'"),
        ({"text": "shift", "duration": True}, "needs 'duration'"),
    ):
        with pytest.raises(ToolError, match=why):
            await tool(desk, "computer_20250124").call({"action": "hold_key", **bad})


async def test_scroll_with_modifiers_and_its_required_arguments(tmp_path: Path) -> None:
    desk = FakeDesktop(tmp_path)
    computer = tool(desk, "computer_20250124")
    await computer.call(
        {"action": "scroll", "coordinate": [10, 20], "scroll_direction": "up", "scroll_amount": 5, "text": "ctrl"}
    )
    assert desk.actions == [
        {"kind": "move", "x": 10, "y": 20},
        {"kind": "key_down", "keys": "ctrl"},
        {"kind": "scroll", "direction": "up", "amount": 5},
        {"kind": "key_up", "keys": "ctrl"},
    ]
    with pytest.raises(ToolError, match="scroll_direction"):
        await computer.call({"action": "scroll", "scroll_amount": 1})
    with pytest.raises(ToolError, match="scroll_amount"):
        await computer.call({"action": "scroll", "scroll_direction": "down", "scroll_amount": -1})


async def test_20241022_drags_from_the_cursor_and_has_no_modifiers(tmp_path: Path) -> None:
    desk = FakeDesktop(tmp_path)
    desk.cursor = (100, 200)
    computer = tool(desk, "computer_20241022")
    assert "start_coordinate" not in computer.parameters["properties"]
    await computer.call({"action": "left_click_drag", "coordinate": [300, 400]})
    assert desk.actions == [{"kind": "drag", "x0": 100, "y0": 200, "x": 300, "y": 400}]
    with pytest.raises(ToolError, match="drags from the cursor"):
        await computer.call({"action": "left_click_drag", "start_coordinate": [1, 1], "coordinate": [2, 2]})
    with pytest.raises(ToolError, match="no modifier keys"):
        await computer.call({"action": "left_click", "text": "shift"})
    with pytest.raises(ToolError, match="in computer_20241022"):
        await computer.call({"action": "hold_key", "text": "shift", "duration": 1})


async def test_20250124_drags_from_start_coordinate_or_the_cursor(tmp_path: Path) -> None:
    desk = FakeDesktop(tmp_path)
    desk.cursor = (7, 8)
    computer = tool(desk, "computer_20250124")
    await computer.call({"action": "left_click_drag", "start_coordinate": [1, 2], "coordinate": [3, 4]})
    await computer.call({"action": "left_click_drag", "coordinate": [5, 6]})
    assert desk.actions == [
        {"kind": "drag", "x0": 1, "y0": 2, "x": 3, "y": 4},
        {"kind": "drag", "x0": 7, "y0": 8, "x": 5, "y": 6},
    ]
    with pytest.raises(ToolError, match="takes no 'coordinate'"):
        await computer.call({"action": "left_mouse_down", "coordinate": [1, 1]})
    await computer.call({"action": "left_mouse_down"})
    await computer.call({"action": "left_mouse_up"})
    assert desk.actions[-2:] == [{"kind": "down", "button": 1}, {"kind": "up", "button": 1}]
    with pytest.raises(ToolError, match="needs 'duration'"):
        await computer.call({"action": "wait"})


async def test_20251124_zooms_into_a_region_at_the_screens_resolution(tmp_path: Path) -> None:
    class Painted(FakeDesktop):
        def screenshot(self) -> Image.Image:
            image = Image.new("RGB", (self.width, self.height), "white")
            image.paste((255, 0, 0), (960, 540, 1920, 1080))  # the bottom-right quarter is red
            return image

    desk = Painted(tmp_path, 1920, 1080)
    computer = tool(desk, "computer_20251124", (1366, 768))
    obs = await computer.call({"action": "zoom", "region": [683, 384, 1366, 768]})
    assert obs.image is not None and obs.image.size == (960, 540)  # full resolution: fits the 1366x768 budget
    assert obs.image.getpixel((0, 0)) == (255, 0, 0) and obs.image.getpixel((959, 539)) == (255, 0, 0)
    whole = await computer.call({"action": "zoom", "region": [0, 0, 1366, 768]})
    assert whole.image is not None and whole.image.size in ((1365, 768), (1366, 768))  # never over a screenshot
    with pytest.raises(ToolError, match="x1 < x2"):
        await computer.call({"action": "zoom", "region": [10, 10, 5, 20]})
    with pytest.raises(OffScreen):
        await computer.call({"action": "zoom", "region": [0, 0, 2000, 20]})
    with pytest.raises(ToolError, match="in computer_20250124"):
        await tool(desk, "computer_20250124").call({"action": "zoom", "region": [0, 0, 10, 10]})
    assert desk.actions == []  # zoom only looks


# --------------------------------------------------------------------------- through the loop


async def test_thinking_goes_back_with_its_signature_and_errors_are_marked(tmp_path: Path) -> None:
    desk = FakeDesktop(tmp_path, 1024, 768)
    profile = claude()
    coords = profile.screen((1024, 768))
    tools = profile.tools({"computer": ComputerTool(desk, coords), "done": DoneTool()})
    script = [
        {
            "redacted_thinking": "EnRedactedBytes==",
            "thinking": "The file is open; select the line with a shift-click.",
            "tool_uses": [
                {
                    "id": "toolu_a",
                    "name": "computer",
                    "input": {"action": "left_click", "coordinate": [500, 300], "text": "shift"},
                },
                {"id": "toolu_b", "name": "computer", "input": {"action": "hold_key", "text": "shift"}},
            ],
        },
        {"thinking": "hold_key needs a duration.", "tool_uses": [{"id": "toolu_c", "name": "done", "input": {"status": "DONE"}}]},
    ]
    with FakeAnthropicServer(script) as server:
        provider = AnthropicProvider(
            base_url=server.base_url,
            model="claude-fake",
            max_tokens=4096,
            temperature=1.0,
            display_size=coords.image,
            computer_tool="computer_20250124",
            bash_tool="bash_20250124",
            betas=["computer-use-2025-01-24"],
            thinking_budget=2048,
        )
        result = EpisodeResult(task_id="app/t", app="app")
        trace = Trace(tmp_path / "trace.jsonl")
        loop = AgentLoop(provider, tools, Limits(10, 10, 30.0, profile.keep_screenshots(3)), trace, result, profile=profile)
        try:
            await loop.run(
                profile.system_prompt(PromptContext(["computer", "done"], coords.image)), "Select it.", desk.screenshot()
            )
        finally:
            trace.close()
            await provider.aclose()
        assert len(server.requests) == 2, server.requests  # a wrong signature would have been a 400
    assert result.termination == "done" and result.hallucinations == 1
    first, second = server.requests
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2048} and first["temperature"] == 1.0
    assert first["tools"][0] == {
        "type": "computer_20250124",
        "name": "computer",
        "display_width_px": 1024,
        "display_height_px": 768,
    }
    assistant = second["messages"][1]["content"]
    assert [b["type"] for b in assistant] == ["redacted_thinking", "thinking", "tool_use", "tool_use"]
    assert assistant[0] == {"type": "redacted_thinking", "data": "EnRedactedBytes=="}
    assert assistant[1]["thinking"] == "The file is open; select the line with a shift-click."
    assert assistant[1]["signature"] == next(s for s, t in server.issued.items() if t == assistant[1]["thinking"])
    ok, failed = second["messages"][2]["content"]
    assert ok["tool_use_id"] == "toolu_a" and ok["is_error"] is False
    assert [b["type"] for b in ok["content"]] == ["image"]  # its own screenshot, in its own result, no "ok"
    assert failed["tool_use_id"] == "toolu_b" and failed["is_error"] is True
    assert failed["content"] == [{"type": "text", "text": "Error: hold_key needs 'duration': a number of seconds, got None"}]
    assert failed["cache_control"] == {"type": "ephemeral"}  # the latest user turn's last block
    assert desk.actions[1:4] == [
        {"kind": "key_down", "keys": "shift"},
        {"kind": "click", "button": 1, "count": 1},
        {"kind": "key_up", "keys": "shift"},
    ]


async def test_the_openai_compatible_request_carries_none_of_the_neutral_keys(tmp_path: Path) -> None:
    from mcpworld.agent.providers.base import NEUTRAL_KEYS
    from mcpworld.agent.providers.openai_compat import OpenAICompatProvider
    from tests.fakes.openai_server import FakeOpenAIServer

    desk = FakeDesktop(tmp_path)
    tools = {"computer": ComputerTool(desk, CoordinateMap("pixels", (1000, 1000))), "done": DoneTool()}
    script = [
        {
            "tool_calls": [
                {"name": "computer", "arguments": {"action": "screenshot"}},
                {"name": "computer", "arguments": {"action": "fly"}},
            ]
        },
        {"tool_calls": [{"name": "done", "arguments": {"status": "DONE"}}]},
    ]
    with FakeOpenAIServer(script, model="m") as server:
        provider = OpenAICompatProvider(base_url=server.base_url, model="m")
        trace = Trace(tmp_path / "trace.jsonl")
        loop = AgentLoop(provider, tools, Limits(10, 10, 30.0), trace, EpisodeResult(task_id="a/t", app="a"))
        try:
            await loop.run("system", "go", None)
        finally:
            trace.close()
            await provider.aclose()
    marked = [m for m in loop.messages if m["role"] == "tool"]
    assert marked[0].get("images") == 1 and marked[1].get("is_error") is True  # the loop keeps them ...
    sent = server.requests[1]["messages"]
    assert [m for m in sent if NEUTRAL_KEYS & m.keys()] == []  # ... the chat API never sees them
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "user"]


def test_a_legacy_preset_warns_once_and_current_ones_do_not(capsys: pytest.CaptureFixture[str]) -> None:
    from mcpworld.agent.providers import _WARNED, ProviderSettings, make_provider
    from tests.helpers.config import make

    _WARNED.clear()  # once per process: forget what earlier tests were warned of
    for model in ("claude_3_5_sonnet", "claude_3_5_sonnet", "claude_sonnet_4_5"):
        cfg = make(f"model={model}", "provider.base_url=http://127.0.0.1:9/v1")
        make_provider(ProviderSettings.of(cfg), [])
    lines = [line for line in capsys.readouterr().err.splitlines() if "is legacy" in line]
    assert lines == [
        "mcpworld: warning: model=claude_3_5_sonnet is legacy: Claude Sonnet 3.5 (claude-3-5-sonnet-20241022) "
        "is retired: the API no longer serves it; use model=claude_sonnet_4_5"
    ]


def test_the_presets_name_their_tool_versions_betas_and_prices() -> None:
    from tests.helpers.config import make

    expected = {
        "claude_sonnet_4_5": ("computer_20250124", "computer-use-2025-01-24", 3.0),
        "claude_haiku_4_5": ("computer_20250124", "computer-use-2025-01-24", 1.0),
        "claude_opus_4_1": ("computer_20250124", "computer-use-2025-01-24", 15.0),
        "claude_opus_4_5": ("computer_20251124", "computer-use-2025-11-24", 5.0),
        "claude_sonnet_4_6": ("computer_20251124", "computer-use-2025-11-24", 3.0),
    }
    for name, (computer, beta, price) in expected.items():
        m = make(f"model={name}").model
        assert (m.computer_tool, list(m.betas), m.price.input, m.profile) == (computer, [beta], price, "claude")
        assert m.price.output == 5 * price and m.price.cached_input == pytest.approx(price / 10)
        assert m.preferred_resolution == "rect" and m.legacy is None and m.image_max is None
