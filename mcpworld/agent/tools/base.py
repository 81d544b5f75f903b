"""The Tool seam: a named JSON-schema function the agent may call, returning an observation."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcpworld.agent.messages import JSONObject, ToolSchema

if TYPE_CHECKING:
    from PIL.Image import Image


@dataclass
class Observation:
    text: str = ""
    image: Image | None = None
    ok: bool = True
    # set by the done tool: the agent's final declaration, DONE or FAIL
    final: str | None = None
    answer: str | None = None  # with final: the agent's answer to a question (Qwen's computer_use ``answer``)
    # images a tool returned already encoded (an MCP image block): (bytes, format) such as (b"...", "png")
    images: list[tuple[bytes, str]] = field(default_factory=list)


def number(value: object) -> float:
    """``float(value)`` for a number or numeric string a model wrote; anything else raises TypeError or
    ValueError as ``float`` does (the loop answers either as invalid arguments)."""
    if isinstance(value, (str, int, float)):
        return float(value)
    raise TypeError(f"a number was expected, not {value!r}")


def integer(value: object) -> int:
    """``int(value)`` for a number or numeric string a model wrote, raising as ``int`` does (see ``number``)."""
    if isinstance(value, (str, int, float)):
        return int(value)
    raise TypeError(f"an integer was expected, not {value!r}")


class ToolError(Exception):
    """A bad tool call (unknown action, bad argument): reported to the model, counted as an error
    and traced as a hallucination of this ``kind``."""

    kind = "invalid_arguments"


class OffScreen(ToolError):
    """A coordinate outside the screen the model was shown."""

    kind = "off_screen"


class Tool(abc.ABC):
    name: str
    family: str  # computer, bash, mcp, done — what modality selects on
    description: str
    parameters: JSONObject

    def schema(self) -> ToolSchema:
        """OpenAI function-tool schema."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    @abc.abstractmethod
    async def call(self, args: JSONObject) -> Observation:
        """Run the call; raise ToolError for a bad call."""
