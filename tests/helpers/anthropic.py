"""Anthropic-family provider tests' shared parts: a provider on a fake Messages server, the tool schemas an
episode offers, a sleep that records instead of waiting, and a walk over content blocks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcpworld.agent.providers.anthropic import AnthropicProvider
from mcpworld.agent.tools.bash import BashTool
from mcpworld.agent.tools.computer import ComputerTool, CoordinateMap
from mcpworld.agent.tools.done import DoneTool
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.helpers.environments import FakeDesktop

USER = [{"role": "user", "content": "hi"}]


def tool_schemas(tmp_path: Path) -> list[dict[str, Any]]:
    """The computer, bash and done tools of a 1024x768 desktop, and one MCP tool, as the loop offers them."""
    desk = FakeDesktop(tmp_path, 1024, 768)
    computer = ComputerTool(desk, CoordinateMap("pixels", (1024, 768)))
    mcp = {
        "type": "function",
        "function": {"name": "calc_sum", "description": "Add numbers", "parameters": {"type": "object", "properties": {}}},
    }
    return [computer.schema(), BashTool(desk).schema(), DoneTool().schema(), mcp]


def make(server: FakeAnthropicServer, **kw: Any) -> AnthropicProvider:
    """An AnthropicProvider on ``server`` with the 2025-01-24 computer-use tools and near-instant retries."""
    kw.setdefault("retry_base_s", 0.001)
    kw.setdefault("computer_tool", "computer_20250124")
    kw.setdefault("bash_tool", "bash_20250124")
    kw.setdefault("betas", ["computer-use-2025-01-24"])
    return AnthropicProvider(
        base_url=server.base_url, model="claude-fake", display_size=(1024, 768), api_version="2023-06-01", **kw
    )


class Sleeps(list):
    """A recording stand-in for asyncio.sleep: retries without real waits."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


def walk_blocks(blocks: list[dict[str, Any]]):
    """Every content block, and the blocks inside tool results."""
    for b in blocks:
        yield b
        yield from walk_blocks(b.get("content") or []) if b.get("type") == "tool_result" else ()
