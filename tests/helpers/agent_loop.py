"""Driving the agent loop in a test: a provider that replies from a script, the loop on a FakeDesktop's
tools, and the trace it wrote."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from PIL import Image

from mcpworld.agent.loop import AgentLoop, Limits
from mcpworld.agent.providers.base import Provider, Reply, ToolCall, Usage
from mcpworld.agent.tools.computer import ComputerTool, CoordinateMap
from mcpworld.agent.tools.done import DoneTool
from mcpworld.core.result import EpisodeResult
from mcpworld.telemetry.trace import Trace, read_trace
from tests.helpers.environments import FakeDesktop


class Scripted(Provider):
    """Returns the scripted replies in order (then done DONE); records what it was sent."""

    name = "scripted"

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.calls: list[list[dict[str, Any]]] = []
        self.tools: list[list[dict[str, Any]]] = []

    async def complete(self, messages, tools):
        self.calls.append(copy.deepcopy(messages))
        self.tools.append(tools)
        if self.replies:
            reply = self.replies.pop(0)
            if isinstance(reply, BaseException):
                raise reply
            return reply
        return Reply(tool_calls=[ToolCall("end", "done", {"status": "DONE"})])


def call(name: str, n: int = 0, **args: Any) -> Reply:
    return Reply(tool_calls=[ToolCall(f"c{n}", name, args)], usage=Usage(10, 2), latency_s=0.01, ttft_s=0.005)


def gui_tools(env: FakeDesktop, convention: str = "pixels") -> dict[str, Any]:
    return {"computer": ComputerTool(env, CoordinateMap(convention, (env.width, env.height))), "done": DoneTool()}


def make_loop(
    tmp_path: Path,
    provider: Provider,
    tools: dict[str, Any],
    *,
    max_steps: int = 20,
    max_llm_calls: int = 20,
    timeout_s: float = 10.0,
    keep: int = 3,
    **kw: Any,
):
    trace = Trace(tmp_path / "trace.jsonl")
    result = EpisodeResult(task_id="app/task", app="app")
    loop = AgentLoop(provider, tools, Limits(max_steps, max_llm_calls, timeout_s, keep), trace, result, **kw)
    return loop, result, trace


async def run(loop: AgentLoop, trace: Trace, first: Image.Image | None = None) -> None:
    try:
        await loop.run("system prompt", "do the task", first)
    finally:
        trace.close()


def events(tmp_path: Path, kind: str | None = None) -> list[dict[str, Any]]:
    evs = read_trace(tmp_path / "trace.jsonl")
    return [e for e in evs if kind is None or e["type"] == kind]
