"""The oracle's ``wait_for`` step: file waits through real bash on a temp home, its failure, the
loop offering it to the oracle's replay only, and the solution files' checks. Window waits run on a
real desktop: tests/desktop/test_wait_for_windows.py."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

import pytest
from PIL import Image

from mcpworld.agent.providers.oracle import OracleProvider
from mcpworld.agent.tools import replay_tools
from mcpworld.agent.tools.base import ToolError
from mcpworld.agent.tools.wait_for import HOLD_S, WaitForTool
from mcpworld.core.errors import TaskFileError
from mcpworld.core.task_parts import OracleStep
from mcpworld.tasks.native import load_task
from mcpworld.tasks.solutions import read_solution
from tests.helpers.agent_loop import Scripted, call, events, gui_tools, make_loop, run
from tests.helpers.environments import FakeDesktop


@pytest.fixture
def desk(tmp_path: Path) -> FakeDesktop:
    return FakeDesktop(tmp_path)


async def write_later(path: Path, text: str, delay: float) -> None:
    await asyncio.sleep(delay)
    await asyncio.to_thread(path.write_text, text)


async def test_changed_waits_for_a_write_after_the_episode_began_and_then_for_the_next(desk: FakeDesktop) -> None:
    target = desk.write("~/budget.xlsx", "as the setup left it")  # older than the episode
    tool = WaitForTool(desk, poll_s=0.05)
    early = await tool.call({"file": "~/budget.xlsx", "changed": True, "timeout": 0.3})
    assert not early.ok and "was not written since the episode began" in early.text
    writer = asyncio.create_task(write_later(target, "saved", 0.4))
    t0 = time.monotonic()
    seen = await tool.call({"file": "~/budget.xlsx", "changed": True, "timeout": 10})
    await writer
    assert seen.ok and 0.4 <= time.monotonic() - t0 < 5, seen.text
    assert "~/budget.xlsx written" in seen.text
    again = await tool.call({"file": "~/budget.xlsx", "changed": True, "timeout": 0.3})  # that write is spent
    assert not again.ok and "not written since the last wait_for" in again.text
    writer = asyncio.create_task(write_later(target, "saved twice", 0.2))
    assert (await tool.call({"file": "~/budget.xlsx", "changed": True, "timeout": 10})).ok
    await writer


async def test_contains_and_a_missing_file(desk: FakeDesktop) -> None:
    tool = WaitForTool(desk, poll_s=0.05)
    missing = await tool.call({"file": "~/todo.txt", "contains": "milk", "timeout": 0.2})
    assert not missing.ok and missing.text.startswith("wait_for timed out after 0.2s") and "does not exist" in missing.text
    writer = asyncio.create_task(write_later(desk.resolve("~/todo.txt"), "buy milk\n", 0.2))
    assert (await tool.call({"file": "~/todo.txt", "contains": "milk", "timeout": 10})).ok
    await writer
    wrong = await tool.call({"file": "~/todo.txt", "contains": "bread", "timeout": 0.2})
    assert not wrong.ok and "does not contain 'bread'" in wrong.text


@pytest.mark.parametrize(
    "args, complaint",
    [
        ({"file": "~/x", "chanegd": True}, "unknown key(s) chanegd"),
        ({"gone": True}, "waits for nothing"),
        ({"file": "~/x", "gone": True}, "'gone' needs 'window'"),
        ({"window": "Save (", "timeout": 5}, "not a regular expression"),
        ({"window": "Save", "timeout": "soon"}, "timeout='soon' has the wrong type"),
        ({"window": "Save", "timeout": 0}, "must be between 0 and"),
        ({"widget": "^OK$", "state": "focussed"}, "'focussed' is not an AT-SPI state"),
        ({"state": "focused"}, "waits for nothing"),
        ({"file": "~/x", "state": "focused"}, "'state' needs 'widget' or 'role'"),
        ({"screen": "settled"}, "must be 'changed'"),
        ({"window": "x", "region": [0, 0, 10, 10]}, "'region' needs 'text' or 'screen'"),
        ({"text": "OK", "region": [10, 0, 5, 10]}, "must be [x1, y1, x2, y2]"),
        ({"text": "OK", "region": [0, 0, 10]}, "must be [x1, y1, x2, y2]"),
        ({"text": "OK ("}, "text='OK (' is not a regular expression"),
        ({"widget": "OK", "gone": "yes"}, "gone='yes' has the wrong type"),
    ],
)
async def test_bad_arguments_are_a_tool_error(desk: FakeDesktop, args: dict, complaint: str) -> None:
    with pytest.raises(ToolError, match=re.escape(complaint)):
        await WaitForTool(desk).call(args)


async def test_the_oracle_replays_wait_for_and_the_trace_records_it(tmp_path: Path, desk: FakeDesktop) -> None:
    desk.write("~/notes.txt", "done: yes\n")
    solution = [
        OracleStep("computer", {"action": "key", "text": "ctrl+s"}),
        OracleStep("wait_for", {"file": "~/notes.txt", "contains": "done: yes"}),
        OracleStep("wait_for", {"file": "~/notes.txt", "contains": "never", "timeout": 0.3}),
    ]
    loop, result, trace = make_loop(tmp_path, OracleProvider(solution), gui_tools(desk), replay=replay_tools(desk))
    await run(loop, trace)
    calls = events(tmp_path, "tool_call")
    assert [(e["tool"], e["ok"]) for e in calls] == [("computer", True), ("wait_for", True), ("wait_for", False), ("done", True)]
    assert json.loads(calls[1]["args"]) == {"file": "~/notes.txt", "contains": "done: yes"}
    assert "timed out after 0.3s: ~/notes.txt does not contain 'never'" in calls[2]["output"]
    assert result.tool_calls["wait_for"].ok == 1 and result.tool_calls["wait_for"].error == 1
    assert result.hallucinations == 0


async def test_no_model_is_offered_wait_for(tmp_path: Path, desk: FakeDesktop) -> None:
    """Replay tools never reach a request's schemas; a model that calls one anyway (without the
    oracle's replay) calls an unknown tool."""
    model = Scripted([call("wait_for", file="~/x")])
    loop, _result, trace = make_loop(tmp_path, model, gui_tools(desk))
    await run(loop, trace)
    assert all(s["function"]["name"] != "wait_for" for tools in model.tools for s in tools)
    (bad,) = events(tmp_path, "hallucination")
    assert bad["kind"] == "unknown_tool" and bad["tool"] == "wait_for"
    (tmp_path / "oracle").mkdir()
    replaying = make_loop(tmp_path / "oracle", OracleProvider([]), gui_tools(desk), replay=replay_tools(desk))[0]
    assert [s["function"]["name"] for s in replaying.schemas] == ["computer", "done"]


def test_solution_files_turn_wait_for_into_a_checked_tool_call(tmp_path: Path) -> None:
    overlay = tmp_path / "abc.yaml"
    overlay.write_text(
        "solution:\n  - computer: {action: key, text: ctrl+s}\n"
        "  - wait_for: {window: 'Keep current format'}\n"
        "  - {tool: wait_for, args: {file: ~/a.xlsx, changed: true, timeout: 60}}\n"
    )
    assert list(read_solution(overlay)[1].get("gui")[1:]) == [
        OracleStep("wait_for", {"window": "Keep current format"}),
        OracleStep("wait_for", {"file": "~/a.xlsx", "changed": True, "timeout": 60}),
    ]
    task = tmp_path / "t" / "task.yaml"
    task.parent.mkdir()
    task.write_text(
        "app: mousepad\ninstruction: x\nevaluator: {func: infeasible}\nsolution:\n  - wait_for: {file: ~/a.txt, changd: true}\n"
    )
    with pytest.raises(TaskFileError, match=r"task.yaml: wait_for has unknown key\(s\) changd; known: window"):
        load_task(task)


async def test_the_oracles_waits_take_no_step_of_the_budget(tmp_path: Path, desk: FakeDesktop) -> None:
    """A model never gets wait_for, so the oracle's waits must not eat the steps its actions have."""
    desk.write("~/notes.txt", "ok\n")
    wait = OracleStep("wait_for", {"file": "~/notes.txt", "contains": "ok"})
    key = OracleStep("computer", {"action": "key", "text": "a"})
    loop, result, trace = make_loop(
        tmp_path, OracleProvider([key, wait, key, wait]), gui_tools(desk), replay=replay_tools(desk), max_steps=3
    )
    await run(loop, trace)
    # two actions and done: within 3 steps (counting the waits, the limit came before done)
    assert result.termination == "done" and result.steps == 3 and len(desk.actions) == 2


# -------------------------------------------------------------------- what the app shows


class Showing(FakeDesktop):
    """A desktop whose screen, accessibility tree and screen text a test sets."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.frame = Image.new("RGB", (200, 100), "white")
        self.tree = '<desktop-frame name="desktop"/>'
        self.dumps = 0

    def screenshot(self) -> Image.Image:
        self.screenshots += 1
        return self.frame.copy()

    def accessibility_tree(self, timeout_s: float = 60.0) -> str:
        self.dumps += 1
        return self.tree


MENU_OPEN = (
    '<desktop-frame name="desktop" xmlns:st="https://mcpworld.invalid/ns/a11y/st">'
    '<application name="soffice"><menu-bar name=""><menu name="Insert" st:selected="true" st:showing="true">'
    '<menu-item name="Page Break" st:selected="true" st:showing="true"/>'
    '<menu-item name="Field" st:showing="true"/></menu></menu-bar></application></desktop-frame>'
)


async def later(delay: float, change) -> None:
    await asyncio.sleep(delay)
    change()


async def test_screen_changed_waits_for_a_redraw_after_the_last_action_and_then_for_stillness(tmp_path: Path) -> None:
    from mcpworld.agent.tools.computer import BEFORE_LAST_ACTION

    desk = Showing(tmp_path)
    BEFORE_LAST_ACTION[desk] = desk.frame.copy()  # the computer tool's frame before its last action
    tool = WaitForTool(desk, poll_s=0.05)
    unchanged = await tool.call({"screen": "changed", "timeout": 0.3})
    assert not unchanged.ok and "has not changed since the last computer action" in unchanged.text

    def draw_menu() -> None:
        desk.frame = desk.frame.copy()
        desk.frame.paste((0, 0, 0), (10, 10, 60, 50))

    t0 = time.monotonic()
    drawer = asyncio.create_task(later(0.3, draw_menu))
    seen = await tool.call({"screen": "changed", "timeout": 10})
    await drawer
    took = time.monotonic() - t0
    assert seen.ok and "screen changed and still" in seen.text, seen.text
    assert 0.3 + HOLD_S <= took < 3, took  # the redraw, then held still
    # a region the redraw missed has not changed
    missed = await tool.call({"screen": "changed", "region": [100, 0, 200, 100], "timeout": 0.3})
    assert not missed.ok and "has not changed" in missed.text
    assert (await tool.call({"screen": "still", "region": [100, 0, 200, 100], "timeout": 5})).ok


async def test_screen_still_waits_while_it_keeps_changing(tmp_path: Path) -> None:
    desk = Showing(tmp_path)
    stop = time.monotonic() + 0.8

    async def animate() -> None:
        shade = 0
        while time.monotonic() < stop:
            shade = (shade + 40) % 256
            desk.frame = Image.new("RGB", (200, 100), (shade, shade, shade))
            await asyncio.sleep(0.05)

    t0 = time.monotonic()
    animation = asyncio.create_task(animate())
    assert (await WaitForTool(desk, poll_s=0.05).call({"screen": "still", "timeout": 10})).ok
    await animation
    assert time.monotonic() - t0 >= 0.8 + HOLD_S - 0.1


async def test_a_widget_by_name_role_and_state_in_the_accessibility_tree(tmp_path: Path) -> None:
    desk = Showing(tmp_path)
    tool = WaitForTool(desk, poll_s=0.05)
    absent = await tool.call({"widget": "^Page Break$", "role": "menu item", "state": "selected", "timeout": 0.2})
    assert not absent.ok and "no accessible has role 'menu item', name '^Page Break$', state selected" in absent.text
    opener = asyncio.create_task(later(0.2, lambda: setattr(desk, "tree", MENU_OPEN)))
    found = await tool.call({"widget": "^Page Break$", "role": "menu item", "state": "selected", "timeout": 10})
    await opener
    assert found.ok and "accessible role 'menu item', name '^Page Break$', state selected there" in found.text
    assert (await tool.call({"widget": "^insert$", "role": "^menu$", "state": ["selected", "showing"]})).ok
    unselected = await tool.call({"widget": "^Field$", "state": "selected", "timeout": 0.2})
    assert not unselected.ok
    still_open = await tool.call({"role": "^menu$", "gone": True, "timeout": 0.2})
    assert not still_open.ok and "the accessible menu 'Insert' is still there" in still_open.text
    closer = asyncio.create_task(later(0.2, lambda: setattr(desk, "tree", '<desktop-frame name="desktop"/>')))
    assert (await tool.call({"role": "^menu$", "gone": True, "timeout": 10})).ok
    await closer


async def test_text_on_the_screen_by_ocr_in_a_region(tmp_path: Path) -> None:
    import shutil

    from PIL import ImageDraw, ImageFont

    if shutil.which("tesseract") is None:
        pytest.skip("tesseract is not installed (apt-get install tesseract-ocr)")
    desk = Showing(tmp_path)
    desk.frame = Image.new("RGB", (400, 100), "white")
    ImageDraw.Draw(desk.frame).text((220, 40), "Slide Transition", fill="black", font=ImageFont.load_default(size=18))
    tool = WaitForTool(desk, poll_s=0.05)
    assert (await tool.call({"text": "slide transition", "timeout": 20})).ok
    elsewhere = await tool.call({"text": "Slide Transition", "region": [0, 0, 200, 100], "timeout": 0.1})
    assert not elsewhere.ok and "the screen does not show 'Slide Transition'" in elsewhere.text
    assert (await tool.call({"text": "Transition", "region": [200, 0, 400, 100], "timeout": 20})).ok
    shown = await tool.call({"text": "Transition", "gone": True, "timeout": 0.1})
    assert not shown.ok and "the screen still shows 'Transition'" in shown.text
