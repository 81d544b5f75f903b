"""The qwen3vl profile against OSWorld's Qwen3-VL agent, run for real (tests/data/parity/qwen3vl).

The reference's captured requests are compared with the requests our loop sends over HTTP to a fake
OpenAI-compatible server for the same screenshots, instruction and replies; the reference's parsed
pyautogui actions with the desktop actions our computer_use runs for the same replies.
"""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from mcpworld.agent.loop import AgentLoop, Limits
from mcpworld.agent.profiles import ModelView, PromptContext, make_profile
from mcpworld.agent.profiles.qwen3vl import Qwen3VLProfile, read_calls
from mcpworld.agent.profiles.qwen3vl_screen import QwenGrid, smart_resize
from mcpworld.agent.profiles.qwen3vl_tool import QwenComputerUse
from mcpworld.agent.providers.base import Reply
from mcpworld.agent.providers.openai_compat import OpenAICompatProvider
from mcpworld.agent.tools.base import OffScreen, ToolError
from mcpworld.agent.tools.computer import ComputerTool
from mcpworld.agent.tools.done import DoneTool
from mcpworld.core.result import EpisodeResult
from mcpworld.telemetry.trace import Trace
from tests.fakes.openai_server import FakeOpenAIServer
from tests.helpers.environments import FakeDesktop

PARITY = Path(__file__).resolve().parents[1] / "data" / "parity" / "qwen3vl"
RUNS = {r["label"]: r for r in json.loads((PARITY / "runs.json").read_text())}
EXAMPLES = json.loads((PARITY / "actions.json").read_text())
INSTRUCTION = "Create a folder named reports and save the file."
# the Qwen3-VL README's instruct decoding (conf/model/qwen3vl/variants.yaml)
INSTRUCT = {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "presence_penalty": 1.5, "max_tokens": 32768}


def screenshot(n: int, size: tuple[int, int]) -> Image.Image:
    """The capture's screenshot n (tests/data/parity/qwen3vl/README.md): a flat colour per step."""
    img = Image.new("RGB", size, (30 + 40 * n, 60, 90))
    ImageDraw.Draw(img).rectangle([100 + 50 * n, 100, 400 + 50 * n, 300], fill=(240, 240, 240))
    return img


class Frames(FakeDesktop):
    """A desktop whose screen is the capture's screenshot of the step it is at (one per action)."""

    def __init__(self, root: Path, size: tuple[int, int]):
        super().__init__(root, *size)
        self.frame = 0

    def screenshot(self) -> Image.Image:
        return screenshot(self.frame, (self.width, self.height))

    def act(self, action: dict[str, Any]) -> None:
        super().act(action)
        self.frame += 1


def qwen(**options: Any) -> Qwen3VLProfile:
    profile = make_profile(
        "qwen3vl", ModelView(name="qwen3vl_32b", id="Qwen/Qwen3-VL-32B-Instruct", coordinates="normalized_1000", options=options)
    )
    assert isinstance(profile, Qwen3VLProfile)
    return profile


def label(part: dict[str, Any]) -> str:
    """An image part as the capture elided it: ``screenshot:<n> <w>x<h> png``."""
    head, data = part["image_url"]["url"].split(",", 1)
    image = Image.open(io.BytesIO(base64.b64decode(data)))
    assert head == "data:image/png;base64" and image.format == "PNG"
    frame = (image.getpixel((0, 0))[0] - 30) // 40  # type: ignore[index]
    return f"screenshot:{frame} {image.width}x{image.height} png"


def elided(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "role": m["role"],
            "content": [
                {"type": "image_url", "image_url": {"url": label(p)}} if p["type"] == "image_url" else p for p in m["content"]
            ],
        }
        for m in messages
    ]


async def drive(tmp_path: Path, run: dict[str, Any]) -> tuple[list[dict[str, Any]], EpisodeResult]:
    """Our loop with the qwen3vl profile, over HTTP, replying what the reference's model replied."""
    size = tuple(run["screen"])
    desk = Frames(tmp_path, size)  # type: ignore[arg-type]
    profile = qwen()
    computer = ComputerTool(desk, profile.screen(size))  # type: ignore[arg-type]
    tools = profile.tools({"computer": computer, "done": DoneTool()})
    trace = Trace(tmp_path / "trace.jsonl")
    result = EpisodeResult(task_id="parity/qwen3vl", app="parity")
    replies = [{"text": step["response"]} for step in run["steps"]]
    with FakeOpenAIServer(replies, model="Qwen/Qwen3-VL-32B-Instruct") as server:
        provider = OpenAICompatProvider(base_url=server.base_url, model="Qwen/Qwen3-VL-32B-Instruct", seed=None, **INSTRUCT)
        provider.text_calls = profile.text_calls
        limits = Limits(
            max_steps=20,
            max_llm_calls=len(replies),
            timeout_s=60,
            keep_screenshots=profile.keep_screenshots(3),
            image_format="png",
        )
        loop = AgentLoop(provider, tools, limits, trace, result, profile=profile)
        system = profile.system_prompt(PromptContext(list(tools), computer.coords.image))
        try:
            await loop.run(system, INSTRUCTION, computer.coords.fit(desk.screenshot()))
        finally:
            trace.close()
            await provider.aclose()
        return list(server.requests), result


@pytest.mark.parametrize("run", sorted(RUNS))
async def test_requests_match_the_reference_agent(tmp_path: Path, run: str) -> None:
    """Same system prompt (and so the same computer_use schema and 1000x1000 statement), message
    order, instruction and "Previous actions" text, images of the same size in the same places,
    no tools field, and the reference's output length; decoding from the model card."""
    reference = RUNS[run]
    ours, result = await drive(tmp_path, reference)
    assert len(ours) == len(reference["requests"])
    for sent, ref in zip(ours, reference["requests"], strict=True):
        assert sent["messages"][0]["content"][0]["text"] == ref["messages"][0]["content"][0]["text"]
        assert elided(sent["messages"]) == ref["messages"]
        assert "tools" not in sent and "tools" not in ref
        assert sent["model"] == ref["model"] and sent["max_tokens"] == ref["max_tokens"]
        # the reference sends no sampling (the server's generation_config.json decides, which for
        # Qwen3-VL is the model card's): we send the card's values so every server decodes alike
        assert {k: sent[k] for k in ("temperature", "top_p", "top_k", "presence_penalty")} == {
            k: INSTRUCT[k] for k in ("temperature", "top_p", "top_k", "presence_penalty")
        }
    last = reference["steps"][-1]["pyautogui"]
    assert result.termination == ("done" if last == ["DONE"] else "max_llm_calls")
    assert result.hallucinations == 0


def test_the_prompt_states_the_relative_grid_and_lists_computer_use() -> None:
    profile = qwen()
    system = profile.system_prompt(PromptContext(["computer_use"], (992, 992)))
    listed = re.search(r"<tools>\n(.*)\n</tools>", system, re.S)
    assert listed is not None
    (entry,) = [json.loads(line) for line in listed.group(1).splitlines()]
    function = entry["function"]
    assert function["name"] == "computer_use" and "The screen's resolution is 1000x1000." in function["description"]
    assert function["parameters"]["properties"]["action"]["enum"][-1] == "terminate"
    assert set(function["parameters"]["properties"]) == {"action", "keys", "text", "coordinate", "pixels", "time", "status"}


@pytest.mark.parametrize(
    "screen, sent",
    [
        ((1000, 1000), (992, 992)),
        ((1920, 1080), (1920, 1088)),
        ((1024, 768), (1024, 768)),
        ((1280, 800), (1280, 800)),
        ((5120, 2880), (4800, 2688)),
        ((20, 20), (64, 64)),
    ],
)
def test_smart_resize(screen: tuple[int, int], sent: tuple[int, int]) -> None:
    """Multiples of 32; 13,107,200 pixels at most (16*16*4*12800), 3136 at least."""
    assert smart_resize(*screen) == sent
    assert QwenGrid(screen).fit(Image.new("RGB", screen)).size == sent


def test_captured_image_sizes_are_smart_resize() -> None:
    for run in RUNS.values():
        sizes = {
            m
            for r in run["requests"]
            for msg in r["messages"]
            for p in msg["content"]
            for m in re.findall(r"(\d+x\d+) png", p.get("image_url", {}).get("url", ""))
        }
        assert sizes == {"{}x{}".format(*smart_resize(*run["screen"]))}


# --------------------------------------------------------------------------- actions

PYAUTOGUI = re.compile(r"pyautogui\.(\w+)\((.*)\)")


def expected(code: str, screen: tuple[int, int], cursor: tuple[int, int]) -> dict[str, Any] | None:
    """The desktop action our input layer gets for one of the reference's pyautogui lines (a
    coordinate past the screen's edge clamped to it, where pyautogui's X11 backend ends too)."""
    m = PYAUTOGUI.fullmatch(code)
    if m is None:
        return None  # WAIT / DONE: no input
    name, raw = m.groups()
    args = [a.strip() for a in raw.split(",")] if raw else []

    def xy() -> dict[str, int]:
        return {"x": min(int(args[0]), screen[0] - 1), "y": min(int(args[1]), screen[1] - 1)}

    clicks = {"click": (1, 1), "rightClick": (3, 1), "middleClick": (2, 1), "doubleClick": (1, 2)}
    if name in clicks:
        return {"kind": "click", "button": clicks[name][0], "count": clicks[name][1], **xy()}
    if name == "moveTo":
        return {"kind": "move", **xy()}
    if name == "dragTo":
        return {"kind": "drag", "x0": cursor[0], "y0": cursor[1], **xy()}
    if name == "typewrite":
        return {"kind": "type", "text": raw.strip("'")}
    if name in ("hotkey", "press"):
        return {"kind": "key", "keys": "+".join(a.strip("'") for a in args)}
    if name == "scroll":
        return {"kind": "scroll", "direction": "up" if int(raw) > 0 else "down", "amount": abs(int(raw))}
    raise AssertionError(f"unexpected reference action {code}")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: f"{e['screen'][0]}x{e['screen'][1]}:{e['pyautogui']}")
async def test_reference_replies_run_as_the_same_desktop_actions(
    tmp_path: Path, example: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import mcpworld.agent.profiles.qwen3vl_tool as tool_module

    slept: list[float] = []
    monkeypatch.setattr(tool_module.time, "sleep", slept.append)
    screen = tuple(example["screen"])
    desk = FakeDesktop(tmp_path, *screen)  # type: ignore[misc]
    desk.cursor = (37, 41)
    gui = QwenComputerUse(ComputerTool(desk, QwenGrid(screen)))  # type: ignore[arg-type]
    action, calls = read_calls(example["response"])
    assert action == example["action"]
    finals = []
    for call in calls:
        assert call.name == "computer_use"
        obs = await gui.call(call.arguments)
        finals.append(obs.final)
    want = [expected(code, screen, desk.cursor) for code in example["pyautogui"]]  # type: ignore[arg-type]
    assert desk.actions == [w for w in want if w is not None]
    if "WAIT" in example["pyautogui"]:
        assert slept == [2.0]
    if "DONE" in example["pyautogui"]:  # the reference ends DONE whatever terminate's status, and so do we
        assert finals[-1] == "DONE"


@pytest.mark.parametrize(
    "args, action",
    [
        ({"action": "triple_click", "coordinate": [500, 500]}, {"kind": "click", "button": 1, "count": 3, "x": 500, "y": 500}),
        ({"action": "hscroll", "pixels": -4}, {"kind": "scroll", "direction": "left", "amount": 4}),
        ({"action": "hscroll", "pixels": 2}, {"kind": "scroll", "direction": "right", "amount": 2}),
        ({"action": "key", "keys": ["Control", "s"]}, {"kind": "key", "keys": "ctrl+s"}),
        ({"action": "left_click"}, {"kind": "click", "button": 1, "count": 1}),
    ],
)
async def test_trained_actions_beyond_the_reference_enum_run(
    tmp_path: Path, args: dict[str, Any], action: dict[str, Any]
) -> None:
    """Qwen's cookbook action set: what OSWorld's agent describes but drops still runs here."""
    desk = FakeDesktop(tmp_path)
    gui = QwenComputerUse(ComputerTool(desk, QwenGrid((1000, 1000))))
    obs = await gui.call(args)
    assert desk.actions == [action] and obs.image is not None and obs.image.size == (992, 992)


async def test_answer_and_terminate_end_the_episode(tmp_path: Path) -> None:
    desk = FakeDesktop(tmp_path)
    gui = QwenComputerUse(ComputerTool(desk, QwenGrid((1000, 1000))))
    answered = await gui.call({"action": "answer", "text": "42"})
    assert (answered.final, answered.answer) == ("DONE", "42")
    assert (await gui.call({"action": "terminate", "status": "failure"})).final == "DONE"  # as OSWorld's agent
    cookbook = QwenComputerUse(ComputerTool(desk, QwenGrid((1000, 1000))), terminate_failure_fails=True)
    assert (await cookbook.call({"action": "terminate", "status": "failure"})).final == "FAIL"
    assert (
        qwen(terminate_failure="infeasible")
        .tools({"computer": ComputerTool(desk, QwenGrid((1000, 1000)))})["computer_use"]
        .terminate_failure_fails
    )  # type: ignore[attr-defined]
    with pytest.raises(ToolError):
        await gui.call({"action": "terminate", "status": "maybe"})
    with pytest.raises(OffScreen):
        await gui.call({"action": "left_click", "coordinate": [1001, 5]})
    assert desk.actions == []


async def test_an_answer_is_recorded_in_the_result(tmp_path: Path) -> None:
    call = {"name": "computer_use", "arguments": {"action": "answer", "text": "7 files"}}
    reply = f"Action: Answer.\n<tool_call>\n{json.dumps(call)}\n</tool_call>"
    _, result = await drive(tmp_path, {"screen": [1000, 1000], "steps": [{"response": reply}]})
    assert (result.termination, result.final_action, result.answer) == ("done", "DONE", "7 files")


# --------------------------------------------------------------------------- our extension


def test_other_tools_are_listed_and_their_results_come_back_as_tool_responses(tmp_path: Path) -> None:
    """bash (and MCP tools) beside computer_use: extra <tools> lines, <tool_response> user turns."""
    from mcpworld.agent.tools.bash import BashTool

    desk = FakeDesktop(tmp_path)
    profile = qwen(history_n=2)
    tools = profile.tools(
        {"computer": ComputerTool(desk, QwenGrid((1000, 1000))), "bash": BashTool(desk, 5, 1000), "done": DoneTool()}
    )
    assert list(tools) == ["computer_use", "bash"]  # terminate ends an episode: no done
    system = profile.system_prompt(PromptContext(list(tools), (992, 992), task_prompt="Work in /tmp/w."))
    lines = re.search(r"<tools>\n(.*)\n</tools>", system, re.S).group(1).splitlines()  # type: ignore[union-attr]
    assert [json.loads(line)["function"]["name"] for line in lines] == ["computer_use", "bash"]
    assert system.endswith("\nWork in /tmp/w.")
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    call = {"id": "qwen_call_0", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    conversation = [
        {"role": "system", "content": system},
        {"role": "user", "content": [{"type": "text", "text": "count files"}, image]},
        {"role": "assistant", "content": "Action: count.\n<tool_call>...", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "qwen_call_0", "content": "7"},
    ]
    messages, schemas = profile.request(conversation, [t.schema() for t in tools.values()])
    assert schemas == []
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "user"]
    assert messages[3]["content"] == [{"type": "text", "text": "<tool_response>\n7\n</tool_response>"}]
    assert messages[4]["content"] == [image]  # no new screenshot: the last one is the current screen


def test_replies_are_read_by_the_reference_rules() -> None:
    text = (
        'Action: Click OK.\n<tool_call>\n{"name": "computer_use",\n "arguments": {"action": "left_click", '
        '"coordinate": [1, 2]}}\n</tool_call>\n<tool_call>\n{not json}\n</tool_call>'
    )
    action, calls = read_calls(text)
    assert action == "Click OK."
    assert [(c.name, c.arguments) for c in calls] == [
        ("computer_use", {"action": "left_click", "coordinate": [1, 2]}),
        ("unparsed_tool_call", {"_raw": "{not json}"}),
    ]
    reply = qwen().parse(Reply(text=text))
    assert [c.name for c in reply.tool_calls] == ["computer_use", "unparsed_tool_call"]
    assert read_calls("I think I am done.") == ("", [])


async def test_the_provider_leaves_the_text_as_written_when_the_profile_reads_it() -> None:
    text = 'Action: Go.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "wait"}}\n</tool_call>'
    with FakeOpenAIServer([{"text": text}, {"text": text}]) as server:
        provider = OpenAICompatProvider(base_url=server.base_url, model="fake-model")
        generic = await provider.complete([{"role": "user", "content": "go"}], [])
        provider.text_calls = False
        raw = await provider.complete([{"role": "user", "content": "go"}], [])
        await provider.aclose()
    assert [c.name for c in generic.tool_calls] == ["computer_use"] and "<tool_call>" not in generic.text
    assert raw.text == text and raw.tool_calls == []


def test_the_grid_maps_back_as_the_reference_does() -> None:
    grid = QwenGrid((1920, 1080))
    assert grid.to_screen(500, 500) == (int(500 * 1920 / 999), int(500 * 1080 / 999)) == (960, 540)
    assert grid.to_screen(999, 999) == (1919, 1079)  # the reference's int(999 * w / 999) = w: one past the edge
    assert grid.to_screen(0, 0) == (0, 0)
    with pytest.raises(OffScreen):
        grid.to_screen(-1, 5)


# --------------------------------------------------------------------------- end to end


@pytest.mark.desktop
@pytest.mark.slow
def test_qwen3vl_32b_square_multirun_drives_the_model_as_the_reference(tmp_path: Path) -> None:
    """``python -m mcpworld model=qwen3vl_32b resolution=square -m`` against an Ollama endpoint: the
    instruct tag, Qwen's computer_use prompt with the 1000x1000 statement, a 992x992 screenshot, no
    tools field, the model card's decoding; a ``terminate`` reply ends the episode as done; the first
    request and the prompt are in the episode folder, their hashes and the profile in the job params."""
    from tests.fakes.ollama_server import FakeOllamaServer, ps_entry, tag_entry
    from tests.helpers.cli import results, run_cli

    tag = "qwen3-vl:32b-instruct"
    done = {"name": "computer_use", "arguments": {"action": "terminate", "status": "success"}}
    chat = [{"text": f"Action: The task is complete.\n<tool_call>\n{json.dumps(done)}\n</tool_call>"}]
    db = tmp_path / "mlflow.db"
    with FakeOllamaServer(
        models=[tag_entry(tag)], loaded=[ps_entry(tag)], chat_script=chat, model=tag, context_length=65536
    ) as server:
        proc = run_cli(
            tmp_path,
            "-m",
            "model=qwen3vl_32b",
            "resolution=square",
            "task=xterm/make_project_dirs",
            f"tracking.uri=sqlite:///{db}",
            f"tracking.artifact_root={tmp_path}/artifacts",
            "tracking.experiment=qwen3vl",
            env={"OLLAMA_BASE_URL": server.base_url},
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        (body,) = [c.body for c in server.calls if c.path == "/v1/chat/completions"]
    assert body["model"] == tag and "tools" not in body
    assert {k: body.get(k) for k in ("temperature", "top_p", "presence_penalty", "max_tokens")} == {
        "temperature": 0.7,
        "top_p": 0.8,
        "presence_penalty": 1.5,
        "max_tokens": 32768,
    }
    assert "top_k" not in body  # Ollama's /v1 takes none
    system, user = body["messages"]
    assert system["content"][0]["text"] == RUNS["square_six_steps"]["requests"][0]["messages"][0]["content"][0]["text"]
    assert "* The screen's resolution is 1000x1000." in system["content"][0]["text"]
    image, prompt = user["content"]
    data = base64.b64decode(image["image_url"]["url"].split(",", 1)[1])
    assert Image.open(io.BytesIO(data)).size == (992, 992)
    assert prompt["text"].startswith("\nPlease generate the next move") and prompt["text"].endswith("Previous actions:\nNone")
    (result,) = results(tmp_path / "sweep")
    assert (result["termination"], result["final_action"], result["hallucinations"]) == ("done", "DONE", 0)
    episode = next((tmp_path / "sweep").rglob("request.json")).parent
    record = json.loads((episode / "request.json").read_text())
    assert record["profile"] == "qwen3vl" and record["request"]["tools"] == []
    assert [d["function"]["name"] for d in record["tool_definitions"]] == ["computer_use"]
    assert (episode / "system_prompt.txt").read_text() == system["content"][0]["text"]

    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{db}")
    runs = client.search_runs([client.get_experiment_by_name("qwen3vl").experiment_id])
    (job,) = [r for r in runs if r.data.tags.get("mcpworld.level") == "job"]
    params = job.data.params
    assert (params["profile"], params["profile.version"]) == ("qwen3vl", "2")
    assert (params["prompt.sha256"], params["tools.sha256"]) == (record["prompt.sha256"], record["tools.sha256"])


async def test_the_generic_profile_sends_what_the_loop_sent_without_one(tmp_path: Path) -> None:
    """The seam changes nothing for the generic profile: byte-identical requests, same prompt."""
    from mcpworld.agent.prompts import system_prompt

    generic = make_profile("generic", ModelView(name="m", id="m"))
    bodies = []
    for profile in (None, generic):
        desk = FakeDesktop(tmp_path / str(profile))
        tools = {"computer": ComputerTool(desk, generic.screen((1000, 1000))), "done": DoneTool()}
        script = [
            {"tool_calls": [{"name": "computer", "arguments": {"action": "left_click", "coordinate": [5, 5]}}]},
            {"text": "thinking"},
            {"tool_calls": [{"name": "done", "arguments": {"status": "DONE"}}]},
        ]
        trace = Trace(tmp_path / f"{profile}.jsonl")
        with FakeOpenAIServer(script) as server:
            provider = OpenAICompatProvider(base_url=server.base_url, model="fake-model", temperature=0.0)
            loop = AgentLoop(
                provider,
                generic.tools(tools),
                Limits(10, 10, 30, 3),
                trace,
                EpisodeResult(task_id="a/b", app="a"),
                profile=profile,
            )
            prompt = generic.system_prompt(PromptContext(list(tools), (1000, 1000)))
            assert prompt == system_prompt("", list(tools), 1000, 1000, "pixels")
            await loop.run(prompt, "do it", desk.screenshot())
            trace.close()
            await provider.aclose()
            ids = [c["id"] for body in server.requests for m in body["messages"] for c in m.get("tool_calls") or []]
            text = json.dumps(server.requests)
            for n, call_id in enumerate(dict.fromkeys(ids)):  # the fake server's call ids are random
                text = text.replace(call_id, f"call-{n}")
            bodies.append(json.loads(text))
    assert len(bodies[0]) == 3 and bodies[0] == bodies[1]
