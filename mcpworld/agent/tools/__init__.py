"""Tools the agent may call. The modality decides which families exist — strictly: each family
in ``modality.tools`` (config.schema.ToolFamily) is built by its entry in TOOL_FAMILIES."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcpworld.agent.tools.base import Tool
from mcpworld.config.schema import AgentConfig, Coordinates
from mcpworld.core.errors import UserError
from mcpworld.env.base import Environment

if TYPE_CHECKING:
    from mcpworld.agent.tools.computer import CoordinateMap


@dataclass(frozen=True)
class ToolContext:
    """What the families' tools are built from."""

    env: Environment
    coordinates: str
    agent: AgentConfig
    image_max: list[int] | None = None
    coords: CoordinateMap | None = None  # the profile's screen (Profile.screen); None: from coordinates/image_max


def _computer(c: ToolContext) -> list[Tool]:
    from mcpworld.agent.tools.computer import ComputerTool, CoordinateMap, image_size

    screen = (c.env.width, c.env.height)
    return [ComputerTool(c.env, c.coords or CoordinateMap(c.coordinates, screen, image_size(screen, c.image_max)))]


def _bash(c: ToolContext) -> list[Tool]:
    from mcpworld.agent.tools.bash import BashTool

    return [BashTool(c.env, c.agent.bash_timeout_s, c.agent.bash_max_output)]


def _done(c: ToolContext) -> list[Tool]:
    from mcpworld.agent.tools.done import DoneTool

    return [DoneTool()]


# the mcp family's tools exist only while the episode's servers run: see tools.mcp and tools.local
TOOL_FAMILIES: dict[str, Callable[[ToolContext], list[Tool]]] = {
    "computer": _computer,
    "bash": _bash,
    "mcp": lambda c: [],
    "done": _done,
}


def build_toolset(
    families: list[str],
    env: Environment,
    coordinates: str,
    agent_cfg: AgentConfig,
    image_max: list[int] | None = None,
    coords: CoordinateMap | None = None,
) -> dict[str, Tool]:
    """The modality's computer, bash and done tools, by name (done last: every modality can end
    its episode). ``coords``: the screen the model's profile chose (Profile.screen). Unknown families
    and coordinate conventions are a config error."""
    unknown = [f for f in families if f not in TOOL_FAMILIES]
    if unknown:
        raise UserError(f"modality.tools has unknown tool family {unknown[0]!r}; known: {', '.join(TOOL_FAMILIES)}")
    if coordinates not in list(Coordinates):
        raise UserError(f"model.coordinates={coordinates!r} is unknown; known: {', '.join(Coordinates)}")
    context = ToolContext(env, coordinates, agent_cfg, image_max, coords)
    tools = [
        tool for family in TOOL_FAMILIES if family in families or family == "done" for tool in TOOL_FAMILIES[family](context)
    ]
    return {t.name: t for t in tools}


def replay_tools(env: Environment) -> dict[str, Tool]:
    """Tools only the oracle's replay may call, never offered to a model (their schemas are not sent):
    ``wait_for``, its wait for the desktop's state (core/waits.py)."""
    from mcpworld.agent.tools.wait_for import WaitForTool

    tool = WaitForTool(env)
    return {tool.name: tool}
