"""The episode's deadline bounds every call it makes, hosted MCP tools included: a tool call that
hangs is cancelled at ``agent.timeout_s`` (not at ``mcp.call_timeout_s``), the episode ends
``timeout``, and every Klavis sandbox it held is released."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from mcpworld.agent.providers.oracle import OracleProvider
from mcpworld.agent.tools.base import Observation, Tool
from mcpworld.agent.tools.done import DoneTool
from mcpworld.core.task import Task
from mcpworld.core.task_parts import EvaluatorSpec, OracleStep
from mcpworld.env.local.home import HomeEnvironment
from mcpworld.mcp.klavis_leases import Leases
from mcpworld.run.episode import run_episode
from mcpworld.telemetry.trace import read_trace
from tests.fakes.klavis_server import FakeKlavisServer
from tests.helpers.agent_loop import events, make_loop, run
from tests.helpers.config import make

KEY = "sk-klavis-DEADLINE-1357"


class Hangs(Tool):
    """A tool whose call never returns (as a hosted server that stopped answering)."""

    name, family, description = "hangs", "mcp", "never answers"
    parameters: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012 - never mutated; an instance attribute MCP tools set

    def __init__(self) -> None:
        self.cancelled = False

    async def call(self, args: dict[str, Any]) -> Observation:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return Observation(text="never")


async def test_a_tool_call_that_hangs_is_cancelled_at_the_episodes_deadline(tmp_path: Path) -> None:
    tool = Hangs()
    oracle = OracleProvider([OracleStep("hangs", {}), OracleStep("done", {"status": "DONE"})])
    loop, result, trace = make_loop(tmp_path, oracle, {"hangs": tool, "done": DoneTool()}, timeout_s=0.5)
    started = time.monotonic()
    await run(loop, trace)
    assert time.monotonic() - started < 3
    assert result.termination == "timeout" and tool.cancelled
    (cancelled,) = events(tmp_path, "tool_cancelled")
    assert cancelled["tool"] == "hangs" and cancelled["seconds"] < 3
    (call,) = events(tmp_path, "tool_call")
    assert not call["ok"] and "agent.timeout_s" in call["output"]
    assert result.hallucinations == 0  # the harness's limit, not the model's mistake


class Workspace(HomeEnvironment):
    """A home folder standing in for a desktop (modality=mcp needs no screen)."""

    def reset(self, task: Any, episode_dir: Path) -> None:
        (self.home / "workspace").mkdir(exist_ok=True)


@pytest.mark.slow
def test_an_episode_whose_hosted_tool_hangs_ends_at_its_timeout_with_nothing_left_acquired(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    task = Task(
        id="t/hangs",
        app="t",
        instruction="call the hosted tool",
        dir=tmp_path,
        source=tmp_path / "task.yaml",
        mcp_servers=["filesystem", "github"],
        workspace="~/workspace",
        evaluator=EvaluatorSpec({"func": "infeasible"}),
        solution={
            "mcp": [
                OracleStep("filesystem-echo", {"text": "hi"}),
                OracleStep("github-hang", {"text": "x"}),
                OracleStep("done", {"status": "DONE"}),
            ]
        },
    )
    with FakeKlavisServer(token=KEY) as fake:
        fake.host_mcp("filesystem")  # in the local sandbox
        fake.host_mcp("github")  # an individual sandbox
        cfg = make(
            "env=klavis",
            "modality=mcp",
            "provider=oracle",
            "tracking=none",
            "agent.timeout_s=4",
            "mcp.call_timeout_s=60",
            f"env.klavis.base_url={fake.base_url}",
            f"env.klavis.api_key={KEY}",
            f"env.klavis.leases_dir={tmp_path / 'leases'}",
        )
        started = time.monotonic()
        result = run_episode(cfg, task, 0, tmp_path / "episode", Workspace(tmp_path / "home"))
        took = time.monotonic() - started
        assert fake.held() == [] and Leases(str(tmp_path / "leases")).all() == []
        assert fake.releases == 2
    assert result.status == "timeout" and result.termination == "timeout", result.reason
    assert took < 4 + 8, took  # agent.timeout_s, plus the sandboxes' acquire and release: not the 60 s call bound
    trace = read_trace(tmp_path / "episode" / "trace.jsonl")
    calls = [e for e in trace if e["type"] == "mcp_call"]
    assert [(c["server"], c["tool"], c["ok"]) for c in calls] == [("filesystem", "echo", True)]
    (cancelled,) = [e for e in trace if e["type"] == "tool_cancelled"]
    assert cancelled["tool"] == "github-hang"
    assert {e["server"] for e in trace if e["type"] == "klavis_individual"} == {"github"}
