"""The UI-TARS-1.5 profile against fixtures produced by the reference's own code (tests/data/parity/uitars):
the request it builds (prompt, history window, image size, decoding) and the desktop actions its
parser and pyautogui translation make of the same replies."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf
from PIL import Image

from mcpworld.agent.profiles import ModelView, PromptContext, make_profile
from mcpworld.agent.profiles.uitars import TruncatingMap, UITarsProfile, add_box_tokens, smart_resize
from mcpworld.agent.providers.base import Reply
from mcpworld.agent.tools.base import OffScreen
from mcpworld.agent.tools.computer import ComputerTool
from mcpworld.agent.tools.done import DoneTool
from tests.helpers.environments import FakeDesktop

PARITY = Path(__file__).parents[1] / "data" / "parity" / "uitars"
CONF = Path(__file__).parents[2] / "mcpworld" / "conf" / "model" / "ui_tars_1_5_7b.yaml"


def load(name: str) -> Any:
    return json.loads((PARITY / name).read_text())


def profile(**options: Any) -> UITarsProfile:
    p = make_profile("uitars", ModelView(name="ui_tars_1_5_7b", id="ByteDance-Seed/UI-TARS-1.5-7B", options=options))
    assert isinstance(p, UITarsProfile)
    return p


def image_url(rgb: list[int], size: tuple[int, int]) -> dict[str, Any]:
    """An image part in the loop's conversation; the fixture names images by colour and size."""
    return {"type": "image_url", "image_url": {"url": f"<image rgb={rgb} size={size[0]}x{size[1]}>"}}


def loop_conversation(p: UITarsProfile, req: dict[str, Any], size: tuple[int, int]) -> list[dict[str, Any]]:
    """The conversation our loop keeps for the fixture's episode: instruction + first screenshot,
    then per step the assistant reply (its calls parsed), the tool results and the new screenshot."""
    shots = req["screenshots_rgb"]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": p.system_prompt(PromptContext(["computer", "done"], size))},
        {"role": "user", "content": [{"type": "text", "text": req["instruction"]}, image_url(shots[0], size)]},
    ]
    for step, text in enumerate(req["history_responses"]):
        reply = p.parse(Reply(text=text))
        assert reply.tool_calls, text
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
        messages.append({"role": "user", "content": [image_url(shots[step + 1], size)]})
    return messages


# --------------------------------------------------------------------------- the request


def test_request_matches_reference_layout() -> None:
    req = load("request.json")
    p = profile(language=req["language"])
    screen = tuple(req["screen"])
    sent = p.screen(screen).image  # type: ignore[arg-type]
    assert list(sent) == req["model_sees"] == [1008, 1008]
    messages, schemas = p.request(loop_conversation(p, req, sent), [{"type": "function", "function": {"name": "x"}}])
    assert schemas == []  # the action space is in the prompt, not in API tools
    expected = req["messages"]
    assert [m["role"] for m in messages] == [m["role"] for m in expected]
    for ours, theirs in zip(messages, expected, strict=True):
        assert len(ours["content"]) == len(theirs["content"])
        for a, b in zip(ours["content"], theirs["content"], strict=True):
            if b["type"] == "text":
                assert a == b
            else:  # the same screenshot, at the size the model sees (the reference's server resizes to it)
                rgb = b["image_url"]["url"].split(" size=")[0]
                assert a["image_url"]["url"].startswith(rgb)


def test_first_turn_is_prompt_then_screenshot() -> None:
    req = load("request.json")
    p = profile(language="English")
    conversation = loop_conversation(p, dict(req, history_responses=[]), (1008, 1008))
    messages, _ = p.request(conversation, [])
    expected = load("request_first_turn.json")["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "user"]
    assert messages[:2] == expected[:2]


def test_prompt_escapes_are_single_backslashes_as_the_reference_sends() -> None:
    """The reference's source writes `"\\\\n"` and `\\\\'` in ordinary (not raw) strings, so the prompt it
    sends has one backslash: `use "\\n" at the end`, `escape characters \\', \\", and \\n`."""
    sent = load("request_first_turn.json")["messages"][1]["content"][0]["text"]
    assert 'use "\\n" at the end of `content`.' in sent
    assert "Use escape characters \\', \\\", and \\n in content part" in sent
    assert "\\\\" not in sent
    p = profile(language="English")
    ours = p.request(loop_conversation(p, dict(load("request.json"), history_responses=[]), (1008, 1008)), [])[0]
    assert ours[1]["content"][0]["text"] == sent
    assert "\\\\" not in ours[1]["content"][0]["text"]


def test_history_window_keeps_last_n_screenshots() -> None:
    req = load("request.json")
    p = profile(history_n=2)
    messages, _ = p.request(loop_conversation(p, req, (1008, 1008)), [])
    images = [m for m in messages if m["content"][0]["type"] == "image_url"]
    replies = [m for m in messages if m["role"] == "assistant"]
    assert len(images) == 2 and len(replies) == len(req["history_responses"])
    assert messages[-1] == images[-1]  # the current screenshot comes last


def test_errors_and_nudges_are_shown_as_text() -> None:
    p = profile()
    conversation = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": [{"type": "text", "text": "do it"}, image_url([1, 2, 3], (1008, 1008))]},
        {"role": "assistant", "content": "I am not sure."},
        {"role": "user", "content": "Continue with a tool call."},
        {
            "role": "assistant",
            "content": "Thought: t\nAction: click(start_box='(5000,1)')",
            "tool_calls": [{"id": "a", "type": "function", "function": {"name": "computer", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "Error: coordinate [5000, 1] is off the screen"},
    ]
    messages, _ = p.request(conversation, [])
    assert [m["role"] for m in messages] == ["system", "user", "user", "assistant", "user", "assistant", "user"]
    assert messages[4]["content"][0]["text"] == "Continue with a tool call."
    assert "<|box_start|>(5000,1)<|box_end|>" in messages[5]["content"][0]["text"]
    assert messages[6]["content"][0]["text"].startswith("Error: coordinate")


def test_decoding_matches_reference_run() -> None:
    req = load("request.json")
    model = OmegaConf.load(CONF).model
    ref = req["request_kwargs"]
    assert model.id == "ByteDance-Seed/UI-TARS-1.5-7B" and model.profile == "uitars"
    assert (model.temperature, model.top_p, model.max_tokens) == (ref["temperature"], ref["top_p"], ref["max_tokens"])
    assert model.frequency_penalty == ref["frequency_penalty"]
    assert model.profile_options.history_n == req["runtime_conf"]["history_n"]
    assert model.profile_options.max_pixels == req["runtime_conf"]["max_pixels"]
    assert model.profile_options.min_pixels == req["runtime_conf"]["min_pixels"]


# --------------------------------------------------------------------------- screen and coordinates


def test_smart_resize_matches_reference() -> None:
    for size, expected in load("responses.json")["smart_resize"].items():
        w, h = (int(v) for v in size.split("x"))
        assert list(smart_resize(w, h)) == expected
    with pytest.raises(ValueError, match="aspect"):
        smart_resize(10000, 20)


def test_screen_is_truncating_map_and_checks_bounds() -> None:
    coords = profile().screen((1920, 1080))
    assert isinstance(coords, TruncatingMap) and coords.image == (1932, 1092)
    assert coords.fit(Image.new("RGB", (1920, 1080))).size == (1932, 1092)
    with pytest.raises(OffScreen):
        coords.to_screen(1933, 10)


# --------------------------------------------------------------------------- replies → desktop actions


def our_ops(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Our env actions in the fixture's vocabulary (buttons by name, key chords as lists)."""
    buttons = {1: "left", 2: "middle", 3: "right"}
    ops: list[dict[str, Any]] = []
    for a in actions:
        if a["kind"] == "click":
            ops.append({"op": "click", "button": buttons[a["button"]], "count": a["count"], "x": a["x"], "y": a["y"]})
        elif a["kind"] == "drag":
            ops.append({"op": "drag", "x0": a["x0"], "y0": a["y0"], "x": a["x"], "y": a["y"]})
        elif a["kind"] == "key":
            ops.append({"op": "key", "keys": ["enter" if k == "Return" else k for k in a["keys"].split("+")]})
        elif a["kind"] == "type":
            ops.append({"op": "type", "text": a["text"]})
        elif a["kind"] == "scroll":
            ops.append({"op": "scroll", "direction": a["direction"], "amount": a["amount"], "x": a["x"], "y": a["y"]})
    return ops


CASES = load("responses.json")["cases"]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['screen'][0]}x{c['screen'][1]}-{i % 15}" for i, c in enumerate(CASES)])
def test_reply_executes_as_reference(case: dict[str, Any], tmp_path: Path) -> None:
    p = profile()
    width, height = case["screen"]
    desk = FakeDesktop(tmp_path, width, height)
    tools = {"computer": ComputerTool(desk, p.screen((width, height))), "done": DoneTool()}
    reply = p.parse(Reply(text=case["response"]))
    assert reply.text == case["response"] and reply.tool_calls
    signal = case.get("signal")
    if signal == "WAIT":
        assert [(c.name, c.arguments) for c in reply.tool_calls] == [("computer", {"action": "wait", "duration": 5})]
        return
    finals = []
    for call in reply.tool_calls:
        obs = asyncio.run(tools[call.name].call(call.arguments))
        finals.append(obs.final)
    if signal == "DONE":
        assert finals == ["DONE"] and reply.tool_calls[0].arguments["answer"] == "Saved as report.txt"
    elif signal:  # call_user: the reference waits for a user, then fails; we end it as infeasible at once
        assert finals == ["FAIL"]
    else:
        assert our_ops(desk.actions) == case["actions"]


def test_reply_without_action_or_unreadable() -> None:
    p = profile()
    assert p.parse(Reply(text="I think the task is done.")).tool_calls == []
    bad = p.parse(Reply(text="Thought: x\nAction: click(start_box=foo)")).tool_calls
    assert len(bad) == 1 and "_raw" in bad[0].arguments
    unknown = p.parse(Reply(text="Thought: x\nAction: open_app(app_name='gedit')")).tool_calls
    assert [(c.name, c.arguments) for c in unknown] == [("open_app", {"app_name": "gedit"})]


def test_box_tokens_and_several_actions() -> None:
    p = profile()
    calls = p.parse(
        Reply(text="Thought: two steps\nAction: click(start_box='<|box_start|>(10,20)<|box_end|>')\n\nhotkey(key='ctrl a')")
    ).tool_calls
    assert [(c.name, c.arguments) for c in calls] == [
        ("computer", {"action": "left_click", "coordinate": [10.0, 20.0]}),
        ("computer", {"action": "key", "text": "ctrl+a"}),
    ]
    assert add_box_tokens("Action: drag(start_box='(1,2)', end_box='(3, 4)')") == (
        "Action: drag(start_box='<|box_start|>(1,2)<|box_end|>', end_box='<|box_start|>(3,4)<|box_end|>')"
    )


def test_type_with_newlines_and_quotes() -> None:
    calls = profile().parse(Reply(text="Thought: t\nAction: type(content='a \"b\" it's\\nsecond line\\n')")).tool_calls
    assert [c.arguments for c in calls] == [
        {"action": "type", "text": 'a "b" it\'s\nsecond line'},
        {"action": "key", "text": "Return"},
    ]


# --------------------------------------------------------------------------- end to end


async def test_episode_against_a_fake_vllm_server(tmp_path: Path) -> None:
    """The loop drives UI-TARS through the profile over real HTTP: text replies in, desktop actions out."""
    from mcpworld.agent.loop import AgentLoop, Limits
    from mcpworld.agent.providers.openai_compat import OpenAICompatProvider
    from mcpworld.core.result import EpisodeResult
    from mcpworld.telemetry.trace import Trace
    from tests.fakes.openai_server import FakeOpenAIServer

    p = profile()
    desk = FakeDesktop(tmp_path, 1920, 1080)
    coords = p.screen((1920, 1080))
    tools = p.tools({"computer": ComputerTool(desk, coords), "done": DoneTool()})
    script = [
        {"text": "Thought: Open the File menu.\nAction: click(start_box='(23,12)')"},
        {"text": "Thought: Type the name.\nAction: type(content='report.txt\\n')"},
        {"text": "Thought: Saved.\nAction: finished(content='done')"},
    ]
    result = EpisodeResult(task_id="app/task", app="app")
    trace = Trace(tmp_path / "trace.jsonl")
    with FakeOpenAIServer(script) as server:
        provider = OpenAICompatProvider(
            base_url=server.base_url,
            model="ByteDance-Seed/UI-TARS-1.5-7B",
            temperature=0.0,
            top_p=0.9,
            frequency_penalty=1.0,
            max_tokens=1000,
            retry_base_s=0.001,
        )
        provider.text_calls = p.text_calls
        loop = AgentLoop(provider, tools, Limits(10, 10, 30.0, p.keep_screenshots(3)), trace, result, profile=p)
        system = p.system_prompt(PromptContext(list(tools), coords.image))
        try:
            await loop.run(system, "Save the document as report.txt", coords.fit(desk.screenshot()))
        finally:
            await provider.aclose()
            trace.close()
    assert result.termination == "done" and result.final_action == "DONE"
    assert desk.actions == [
        {"kind": "click", "button": 1, "count": 1, "x": 22, "y": 11},
        {"kind": "type", "text": "report.txt"},
        {"kind": "key", "keys": "Return"},
    ]
    first, _, last = server.requests
    assert "tools" not in first and (first["top_p"], first["frequency_penalty"], first["max_tokens"]) == (0.9, 1.0, 1000)
    assert [m["role"] for m in first["messages"]] == ["system", "user", "user"]
    assert first["messages"][1]["content"][0]["text"].endswith("## User Instruction\nSave the document as report.txt\n")
    assert [m["role"] for m in last["messages"]] == ["system", "user", "user", "assistant", "user", "assistant", "user"]
    assert last["messages"][3]["content"][0]["text"].endswith("click(start_box='<|box_start|>(23,12)<|box_end|>')")
    url = last["messages"][-1]["content"][0]["image_url"]["url"]
    import base64
    import io

    size = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size
    assert size == (1932, 1092)  # the smart_resize size the model answers in
