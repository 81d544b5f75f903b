"""What an MCP sandbox declares (mcp/servers.py: Sandbox): a hosted one gives the agent its own workspace and
cannot be staged ahead; a plain function from outside the package is a sandbox on this host."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from mcpworld.core.task import Task
from mcpworld.env.base import Environment
from mcpworld.mcp import servers
from mcpworld.mcp.servers import McpSettings, agent_workspace, hosted
from tests.helpers.config import make

TASK = Task(id="t/x", app="notes", instruction="-", dir=Path("."), source=Path("task.yaml"), workspace="~/work")
DESKTOP = cast(Environment, SimpleNamespace(resolve=lambda path: Path("/home/desk") / path.removeprefix("~/")))


def test_a_hosted_sandbox_names_its_own_workspace_when_the_modality_offers_mcp():
    klavis = McpSettings.of(make("modality=mcp", "env.mcp_sandbox=klavis"))
    assert agent_workspace(klavis, TASK, DESKTOP) == klavis.klavis.workspace
    assert agent_workspace(McpSettings.of(make("modality=gui", "env.mcp_sandbox=klavis")), TASK, DESKTOP) == "/home/desk/work"
    assert agent_workspace(McpSettings.of(make("modality=mcp")), TASK, DESKTOP) == "/home/desk/work"  # local


def test_a_plain_function_from_outside_is_a_sandbox_on_this_host(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(servers.SANDBOXES._entries, "mine", lambda *args: None)
    assert not hosted("mine") and hosted("klavis") and not hosted("local")
    mine = McpSettings.of(make("modality=mcp"))
    mine = McpSettings(mine.modality, mine.app, mine.mcp, "mine", mine.klavis)
    assert agent_workspace(mine, TASK, DESKTOP) == "/home/desk/work"
