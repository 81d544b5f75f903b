"""The oracle's ``wait_for`` step: file waits through real bash on a temp home, its failure, the
loop offering it to the oracle's replay only, and the solution files' checks. Window waits run on a
real desktop: tests/desktop/test_wait_for_windows.py."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from mcpworld.agent.providers.oracle import OracleProvider
from mcpworld.agent.tools import replay_tools
from mcpworld.agent.tools.base import ToolError
from mcpworld.agent.tools.wait_for import WaitForTool
from mcpworld.core.errors import TaskFileError
from mcpworld.tasks.native import load_task
from mcpworld.tasks.solutions import read_solution
from tests.agent.test_loop import Scripted, call, events, gui_tools, make_loop, run
from tests.agent.test_tools import FakeDesktop


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


@pytest.mark.parametrize("args, complaint", [
    ({"file": "~/x", "chanegd": True}, "unknown key(s) chanegd"),
    ({"gone": True}, "waits for nothing"),
    ({"file": "~/x", "gone": True}, "'gone' needs 'window'"),
    ({"window": "Save (", "timeout": 5}, "not a regular expression"),
    ({"window": "Save", "timeout": "soon"}, "timeout='soon' has the wrong type"),
    ({"window": "Save", "timeout": 0}, "must be between 0 and"),
])
async def test_bad_arguments_are_a_tool_error(desk: FakeDesktop, args: dict, complaint: str) -> None:
    with pytest.raises(ToolError, match=complaint.replace("(", r"\(").replace(")", r"\)")):
        await WaitForTool(desk).call(args)


async def test_the_oracle_replays_wait_for_and_the_trace_records_it(tmp_path: Path, desk: FakeDesktop) -> None:
    desk.write("~/notes.txt", "done: yes\n")
    solution = [{"tool": "computer", "args": {"action": "key", "text": "ctrl+s"}},
                {"tool": "wait_for", "args": {"file": "~/notes.txt", "contains": "done: yes"}},
                {"tool": "wait_for", "args": {"file": "~/notes.txt", "contains": "never", "timeout": 0.3}}]
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
    loop, result, trace = make_loop(tmp_path, model, gui_tools(desk))
    await run(loop, trace)
    assert all(s["function"]["name"] != "wait_for" for tools in model.tools for s in tools)
    (bad,) = events(tmp_path, "hallucination")
    assert bad["kind"] == "unknown_tool" and bad["tool"] == "wait_for"
    (tmp_path / "oracle").mkdir()
    replaying = make_loop(tmp_path / "oracle", OracleProvider([]), gui_tools(desk), replay=replay_tools(desk))[0]
    assert [s["function"]["name"] for s in replaying.schemas] == ["computer", "done"]


def test_solution_files_turn_wait_for_into_a_checked_tool_call(tmp_path: Path) -> None:
    overlay = tmp_path / "abc.yaml"
    overlay.write_text("solution:\n  - computer: {action: key, text: ctrl+s}\n"
                       "  - wait_for: {window: 'Keep current format'}\n"
                       "  - {tool: wait_for, args: {file: ~/a.xlsx, changed: true, timeout: 60}}\n")
    assert read_solution(overlay)[1]["gui"][1:] == [
        {"tool": "wait_for", "args": {"window": "Keep current format"}},
        {"tool": "wait_for", "args": {"file": "~/a.xlsx", "changed": True, "timeout": 60}}]
    task = tmp_path / "t" / "task.yaml"
    task.parent.mkdir()
    task.write_text("app: mousepad\ninstruction: x\nevaluator: {func: infeasible}\n"
                    "solution:\n  - wait_for: {file: ~/a.txt, changd: true}\n")
    with pytest.raises(TaskFileError, match=r"task.yaml: wait_for has unknown key\(s\) changd; known: window"):
        load_task(task)


async def test_the_oracles_waits_take_no_step_of_the_budget(tmp_path: Path, desk: FakeDesktop) -> None:
    """A model never gets wait_for, so the oracle's waits must not eat the steps its actions have."""
    desk.write("~/notes.txt", "ok\n")
    wait = {"tool": "wait_for", "args": {"file": "~/notes.txt", "contains": "ok"}}
    key = {"tool": "computer", "args": {"action": "key", "text": "a"}}
    loop, result, trace = make_loop(tmp_path, OracleProvider([key, wait, key, wait]), gui_tools(desk),
                                    replay=replay_tools(desk), max_steps=3)
    await run(loop, trace)
    # two actions and done: within 3 steps (counting the waits, the limit came before done)
    assert result.termination == "done" and result.steps == 3 and len(desk.actions) == 2
