"""Parity with Anthropic's reference agent (tests/data/parity/claude, captured from its own run; see
the README there): for the same instruction, history and screen, our Claude request has the same
prompt sections, tools, screenshot size, message layout, cache breakpoints, thinking and decoding —
and the reference's example tool_use inputs become the same desktop input on our computer tool.
Where we differ on purpose, the test says so (and docs/models.md, "Claude")."""

from __future__ import annotations

import base64
import io
import json
import re
import shlex
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from mcpworld.agent.loop import image_part
from mcpworld.agent.profiles import ModelView, PromptContext, make_profile
from mcpworld.agent.profiles.claude import claude_image_size
from mcpworld.agent.providers.anthropic import AnthropicProvider
from mcpworld.agent.tools.base import ToolError
from mcpworld.agent.tools.bash import BashTool
from mcpworld.agent.tools.computer import ComputerTool, CoordinateMap, image_size
from mcpworld.agent.tools.done import DoneTool
from mcpworld.env.screen import encode
from tests.helpers.environments import FakeDesktop

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "parity" / "claude"
SCREEN = (1920, 1080)
PRESETS = {  # the captured run's settings -> our preset's (model id, computer tool, bash tool, betas, max_tokens)
    "20241022": ("claude-3-5-sonnet-20241022", "computer_20241022", "bash_20241022", ["computer-use-2024-10-22"], 4096),
    "20250124": ("claude-sonnet-4-5-20250929", "computer_20250124", "bash_20250124", ["computer-use-2025-01-24"], 16384),
    "20251124": ("claude-opus-4-5-20251101", "computer_20251124", "bash_20250124", ["computer-use-2025-11-24"], 16384),
}
# Each reference SYSTEM_CAPABILITY / IMPORTANT bullet and words our counterpart says it with.
TOPICS = [
    ("architecture", "machine"),
    ("install", "installed"),
    ("firefox", "Chromium"),
    ("DISPLAY", "DISPLAY"),
    ("large quantities", "print a lot"),
    ("zoom out", "zoom out"),
    ("chain", "several of them in one request"),
    ("current date", "Today is"),
]
IMPORTANT = [("startup wizard", "first-run"), ("pdf", "PDF")]


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


@lru_cache(maxsize=1)
def screenshot() -> Image.Image:
    """The capture's fixed screen (a gradient of 8 px cells); callers must not change it."""
    image = Image.new("RGB", SCREEN)
    for x in range(0, SCREEN[0], 8):
        for y in range(0, SCREEN[1], 8):
            image.paste(((x * 255) // SCREEN[0], (y * 255) // SCREEN[1], 128), (x, y, x + 8, y + 8))
    return image


def our_request(tmp_path: Path, captured: dict[str, Any], version: str, thinking: int | None) -> dict[str, Any]:
    """Our request body for the captured run's inputs: the conversation as our loop records it."""
    model_id, computer_tool, bash_tool, betas, max_tokens = PRESETS[version]
    profile = make_profile("claude", ModelView(name="c", id=model_id, computer_tool=computer_tool))
    coords = profile.screen(SCREEN)
    desk = FakeDesktop(tmp_path, *SCREEN)
    tools = profile.tools({"computer": ComputerTool(desk, coords), "bash": BashTool(desk), "done": DoneTool()})
    shot = image_part(encode(coords.fit(screenshot()), "png", 100), "png")
    ref = captured["body"]["messages"]
    conversation: list[dict[str, Any]] = [
        {"role": "system", "content": profile.system_prompt(PromptContext(list(tools), coords.image))},
        {"role": "user", "content": ref[0]["content"][0]["text"]},
    ]
    for turn in (ref[1], ref[3]):
        reasoning = [b for b in turn["content"] if b["type"] == "thinking"]
        text = "".join(b["text"] for b in turn["content"] if b["type"] == "text")
        calls = [
            {"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": json.dumps(b["input"])}}
            for b in turn["content"]
            if b["type"] == "tool_use"
        ]
        conversation.append(
            {
                "role": "assistant",
                "content": text or None,
                "tool_calls": calls,
                **({"reasoning_blocks": reasoning} if reasoning else {}),
            }
        )
        conversation += [
            {"role": "tool", "tool_call_id": calls[0]["id"], "content": "ok", "images": 1},
            {"role": "user", "content": [shot]},
        ]
    messages, schemas = profile.request(conversation, [t.schema() for t in tools.values()])
    provider = AnthropicProvider(
        model=model_id,
        base_url="http://127.0.0.1:9",
        max_tokens=max_tokens,
        temperature=1.0,
        display_size=claude_image_size(SCREEN),
        computer_tool=computer_tool,
        bash_tool=bash_tool,
        betas=betas,
        thinking_budget=thinking,
    )
    return {"body": provider.payload(messages, schemas), "betas": provider._headers().get("anthropic-beta", "")}


def layout(messages: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    return [(m["role"], [b["type"] for b in m["content"]]) for m in messages]


def breakpoints(messages: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [(i, j) for i, m in enumerate(messages) for j, b in enumerate(m["content"]) if "cache_control" in b]


@pytest.mark.parametrize(
    "name, version, thinking",
    [
        ("request_20241022.json", "20241022", None),
        ("request_20250124.json", "20250124", None),
        ("request_20250124_thinking.json", "20250124", 2048),
        ("request_20251124.json", "20251124", None),
        ("request_20251124_thinking.json", "20251124", 2048),
    ],
)
def test_our_request_is_the_references(tmp_path: Path, name: str, version: str, thinking: int | None) -> None:
    captured = fixture(name)
    ref, ours = captured["body"], our_request(tmp_path, captured, version, thinking)
    body = ours["body"]

    # decoding: the same output budget and thinking; temperature 1.0 is the API default the reference leaves unset
    assert body["max_tokens"] == ref["max_tokens"] and "temperature" not in ref and body["temperature"] == 1.0
    assert body.get("thinking") == ref.get("thinking")
    # betas: the reference's, less the prompt-caching flag (caching is generally available; the flag is a no-op)
    assert set(captured["headers"]["anthropic-beta"].split(",")) - {"prompt-caching-2024-07-31"} <= set(ours["betas"].split(","))

    # tools: the same native computer and bash tools at the same display size (computer_20251124 with
    # enable_zoom). Differences on purpose: no text editor (str_replace_editor / str_replace_based_edit_tool:
    # we give none), our `done` (our episodes end on it), and no display_number: null (X11 display
    # numbers mean nothing to the model)
    ref_tools = {t["name"]: t for t in ref["tools"]}
    our_tools = {t["name"]: t for t in body["tools"]}
    assert our_tools["computer"] == {k: v for k, v in ref_tools["computer"].items() if k != "display_number"}
    assert (our_tools["computer"]["display_width_px"], our_tools["computer"]["display_height_px"]) == (1366, 768)
    assert our_tools["computer"].get("enable_zoom") is (True if version == "20251124" else None)
    assert our_tools["bash"]["type"].startswith("bash_2")
    assert {ref_tools[n]["type"].split("_20")[0] for n in set(ref_tools) - set(our_tools)} == {"text_editor"}
    assert set(our_tools) - set(ref_tools) == {"done"}

    # the system prompt: one block, cached, with the reference's two lists, bullet for bullet (our words, our facts)
    (ref_system,), (our_system,) = ref["system"], body["system"]
    assert our_system["cache_control"] == ref_system["cache_control"] == {"type": "ephemeral"}
    for section, topics in (("SYSTEM_CAPABILITY", TOPICS), ("IMPORTANT", IMPORTANT)):
        ref_items = re.search(f"<{section}>\n(.*)\n</{section}>", ref_system["text"], re.S).group(1).split("\n* ")
        our_items = re.search(f"<{section}>\n(.*)\n</{section}>", our_system["text"], re.S).group(1).split("\n* ")
        assert len(ref_items) == len(topics)
        assert len(our_items) == len(topics) + (1 if section == "SYSTEM_CAPABILITY" else 0)  # + how to end (`done`)
        for (theirs, mine), ref_item, our_item in zip(topics, ref_items, our_items, strict=False):
            assert theirs.lower() in ref_item.lower() and mine in our_item, (ref_item, our_item)

    # the messages: same turns, same blocks in the same order, same tool uses, results, thinking, breakpoints
    assert layout(body["messages"]) == layout(ref["messages"])
    assert breakpoints(body["messages"]) == breakpoints(ref["messages"])
    for our_msg, ref_msg in zip(body["messages"], ref["messages"], strict=True):
        for our_block, ref_block in zip(our_msg["content"], ref_msg["content"], strict=True):
            if ref_block["type"] in ("tool_use", "thinking", "text"):
                assert our_block == ref_block
            elif ref_block["type"] == "tool_result":
                assert (our_block["tool_use_id"], our_block["is_error"]) == (ref_block["tool_use_id"], ref_block["is_error"])
                (our_image,), (ref_image,) = our_block["content"], ref_block["content"]
                shown = Image.open(io.BytesIO(base64.b64decode(our_image["source"]["data"])))
                assert shown.size == (ref_image["source"]["width"], ref_image["source"]["height"]) == (1366, 768)
                # the same PNG the reference sends when agent.image_format=png (our default is JPEG)
                assert our_image["source"]["media_type"] == ref_image["source"]["media_type"] == "image/png"


def reference_steps(command: str) -> list[tuple[Any, ...]]:
    """The xdotool command line the reference ran, as input steps."""
    words, steps = shlex.split(command), []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "mousemove":
            steps.append(("move", int(words[i + 2]), int(words[i + 3])))
            i += 4
        elif word == "click":
            repeat, i = 1, i + 1
            while words[i].startswith("--"):
                repeat = int(words[i + 1]) if words[i] == "--repeat" else repeat
                i += 2
            steps.append(("click", int(words[i]), repeat))
            i += 1
        elif word in ("keydown", "keyup"):
            steps.append(("key_down" if word == "keydown" else "key_up", words[i + 1]))
            i += 2
        elif word in ("mousedown", "mouseup"):
            steps.append(("down" if word == "mousedown" else "up", int(words[i + 1])))
            i += 2
        elif word == "key":
            steps.append(("key", words[i + 2]))
            i += 3
        elif word == "type":  # the fake xdotool logged "$*": the text is every word after "--"
            steps.append(("type", " ".join(words[words.index("--") + 1 :])))
            i = len(words)
        elif word == "sleep":
            i += 2  # hold_key's duration: our tool sleeps between the key_down and key_up instead
        elif word == "getmouselocation":
            i = len(words)
        else:
            raise AssertionError(f"unexpected xdotool word {word!r} in {command!r}")
    return steps


def our_steps(actions: list[dict[str, Any]], cursor: tuple[int, int]) -> list[tuple[Any, ...]]:
    """Our desktop's input actions as the same steps (a drag from the cursor starts where it is)."""
    steps: list[tuple[Any, ...]] = []
    for a in actions:
        if "x" in a and a["kind"] in ("click", "scroll", "move"):
            steps.append(("move", a["x"], a["y"]))
        if a["kind"] == "click":
            steps.append(("click", a["button"], a["count"]))
        elif a["kind"] == "scroll":
            steps.append(("click", {"up": 4, "down": 5, "left": 6, "right": 7}[a["direction"]], a["amount"]))
        elif a["kind"] == "drag":  # from the cursor, or moving to start_coordinate first (the reference @27ca8aa)
            steps += [("move", a["x0"], a["y0"])] if (a["x0"], a["y0"]) != cursor else []
            steps += [("down", 1), ("move", a["x"], a["y"]), ("up", 1)]
        elif a["kind"] in ("key_down", "key_up", "key"):
            steps.append((a["kind"], a["keys"]))
        elif a["kind"] in ("down", "up"):
            steps.append((a["kind"], a["button"]))
        elif a["kind"] == "type":
            steps.append(("type", a["text"]))
    return steps


class CapturedScreen(FakeDesktop):
    """The fake desktop showing the capture's screen (zoom's crops are compared pixel for pixel)."""

    def screenshot(self) -> Image.Image:
        self.screenshots += 1
        return screenshot().copy()


def crop_box(line: str) -> tuple[int, int, int, int]:
    """The screen box of the reference's ``convert SHOT -crop WxH+X+Y +repage OUT``."""
    w, h, x, y = map(int, re.fullmatch(r"SCREENSHOT -crop (\d+)x(\d+)\+(\d+)\+(\d+) \+repage ZOOMED", line).groups())
    return x, y, x + w, y + h


@pytest.mark.parametrize("version", ["20241022", "20250124", "20251124"])
async def test_the_references_tool_uses_are_the_same_desktop_input(tmp_path: Path, version: str) -> None:
    desk = CapturedScreen(tmp_path, *SCREEN)
    desk.cursor = (960, 540)
    coords = CoordinateMap("pixels", SCREEN, claude_image_size(SCREEN))
    computer = ComputerTool(desk, coords, version=f"computer_{version}")
    for example in fixture(f"actions_{version}.json"):
        desk.actions.clear()
        if example["error"] and example["input"]["action"] == "left_click_drag":
            # on purpose: the reference @27ca8aa refuses a drag without start_coordinate; we drag from the cursor
            await computer.call(dict(example["input"]))
            assert our_steps(desk.actions, desk.cursor) == [("down", 1), ("move", 562, 422), ("up", 1)]
            continue
        if example["error"]:
            with pytest.raises(ToolError):
                await computer.call(dict(example["input"]))
            assert desk.actions == [], example["input"]
            continue
        obs = await computer.call(dict(example["input"]))
        expected = [step for line in example["xdotool"] for step in reference_steps(line)]
        assert our_steps(desk.actions, desk.cursor) == expected, example["input"]
        assert obs.text == example["output"] and (obs.image is not None) == example["image"], example["input"]
        crops = [crop_box(line) for line in example.get("convert", []) if " -crop " in line]
        if crops:  # zoom: the same screen region as the reference's crop box, ...
            (box,) = crops
            region = screenshot().crop(box)
            size = image_size(region.size, coords.image)
            assert obs.image is not None and obs.image.size == size, example["input"]
            # ... cut from the real screen and shrunk only to a screenshot's size. On purpose: the reference
            # cuts that screen box out of its 1366x768 screenshot, so its image (image_size) is another,
            # clipped part of the screen wherever the box reaches past 1366x768
            expected_image = region if size == region.size else region.resize(size, Image.Resampling.BICUBIC, reducing_gap=2.0)
            assert obs.image.tobytes() == expected_image.tobytes(), example["input"]
            inside = box[2] <= 1366 and box[3] <= 768
            assert (example["image_size"] == [box[2] - box[0], box[3] - box[1]]) == inside, example
