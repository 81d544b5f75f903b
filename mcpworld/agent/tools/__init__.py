"""Tools the agent may call. The modality decides which families exist — strictly."""

from __future__ import annotations

from typing import Any

from mcpworld.agent.tools.base import Tool
from mcpworld.core.errors import UserError
from mcpworld.env.base import Environment

FAMILIES = ("computer", "bash", "done", "mcp")


def build_toolset(families: list[str], env: Environment, coordinates: str, agent_cfg: Any,
                  image_max: list[int] | None = None) -> dict[str, Tool]:
    """The modality's computer, bash and done tools, by name. Unknown families are a config error."""
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise UserError(f"modality.tools has unknown tool family {unknown[0]!r}; known: {', '.join(FAMILIES)}")
    tools: list[Tool] = []
    if "computer" in families:
        from mcpworld.agent.tools.computer import ComputerTool, CoordinateMap, image_size

        screen = (env.width, env.height)
        tools.append(ComputerTool(env, CoordinateMap(coordinates, screen, image_size(screen, image_max))))
    if "bash" in families:
        from mcpworld.agent.tools.bash import BashTool

        tools.append(BashTool(env, agent_cfg.bash_timeout_s, agent_cfg.bash_max_output))
    # the mcp family's tools exist only while the episode's servers run: see tools.mcp and tools.local
    from mcpworld.agent.tools.done import DoneTool

    tools.append(DoneTool())  # every modality can end its episode
    return {t.name: t for t in tools}
