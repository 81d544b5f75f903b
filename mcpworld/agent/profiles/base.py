"""The Profile seam: how one model family is driven, as its makers' own reference agent drives it.

A profile decides everything a model was trained to expect — the system prompt, the tool schema and
action vocabulary, the coordinate statement and the size of the screenshot it sees, how the
conversation is laid out in the request, and how its reply is read — while the loop, the tools and
the providers stay family-neutral:

- the loop keeps the conversation in the OpenAI chat format (see providers/base.py) and asks the
  profile to render each request from it (``request``), then to read the reply (``parse``): a family
  that answers in text (``<tool_call>`` blocks, Python call lists, ``Action: click(...)``) gets its
  tool calls here, so providers never guess at a family's format;
- the tools are ours (computer, bash, MCP, done); ``tools`` may re-present them as the family knows
  them (Qwen's one ``computer_use`` function with ``terminate``) — still executing on our desktop;
- ``screen`` fixes the image the model is sent and the coordinate space it answers in, so a model
  coordinate maps back to exactly the pixel the reference would click.

A profile also says how the family's reference *loop* runs (``loop``: ``LoopRules``): the loop
counts one step per model turn for every family (OSWorld's runner does), and asks the rules what a
reply without a call does and whether a call that could not be read is shown to the model.

``version`` is logged as a param: bump it whenever what a profile sends changes.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from mcpworld.agent.messages import Message, ToolSchema
from mcpworld.agent.providers.base import Reply
from mcpworld.agent.tools.base import Tool
from mcpworld.agent.tools.computer import CoordinateMap


@dataclass(frozen=True)
class ModelView:
    """What a profile needs to know of the model config (pieces of ``cfg.model``)."""

    name: str
    id: str
    coordinates: str = "pixels"
    image_max: tuple[int, int] | None = None
    variant: str = "instruct"  # instruct | thinking, for families that ship both
    options: dict[str, Any] = field(default_factory=dict)  # family-specific knobs (model.profile_options)
    computer_tool: str | None = None  # Anthropic's computer tool version (model.computer_tool), for Claude


class NoCall(StrEnum):
    """What a model turn that holds no tool call does (the turn is a step of the budget either way)."""

    nudge = "nudge"  # ours: the model is asked for a call (families whose makers publish no loop)
    skip = "skip"  # OSWorld's runner: nothing is acted on and the next turn starts from the same screen
    end = "end"  # Anthropic's sampling loop: the episode ends (termination "end_turn"), the grader judges


@dataclass(frozen=True)
class LoopRules:
    """How the family's reference loop treats what a turn holds (docs/models.md, "The loop")."""

    no_call: NoCall = NoCall.nudge
    # NoCall.end: the episode's termination and final action (Claude: "end_turn", none; UI-TARS after its
    # retries: its reference's "client error" DONE)
    end_as: tuple[str, str | None] = ("end_turn", None)
    # a call whose arguments could not be read (``_raw``): its error goes back to the model (True), or
    # it is dropped unseen, as OSWorld's Qwen3-VL agent logs and skips it (False); counted either way
    show_unreadable: bool = True
    # requests for a turn whose reply holds no readable action: the retries are asked with the same
    # messages at ``retry_temperature`` and leave nothing in the history (UI-TARS: 3, at temperature 1)
    unreadable_tries: int = 1
    retry_temperature: float | None = None
    # on the budget's last turn, actions other than finishing or waiting are replaced by FAIL (UI-TARS's
    # reference: running out of steps ends FAIL, which scores 1 on an infeasible task)
    last_turn_fails: bool = False


@dataclass(frozen=True)
class PromptContext:
    """What the system prompt is written from."""

    tool_names: list[str]
    image: tuple[int, int] | None  # the screenshot size the model is sent (None: no screen)
    template: str = ""  # agent.system_prompt: a researcher's own template, when set
    task_prompt: str = ""  # the task's own system prompt (Toolathlon's), appended after ours


class Profile(abc.ABC):
    """One model family's way of being driven. Subclasses are registered in profiles/__init__.py."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    reference: ClassVar[str] = ""  # what it follows: repo/path@commit or a documentation URL
    # the provider reads tool calls written into the reply text (Hermes <tool_call>, JSON objects)
    # when the server parsed none; a profile that reads its family's own format in ``parse`` sets this
    # False and gets the text as the model wrote it (its history then holds the reply verbatim)
    text_calls: ClassVar[bool] = True
    loop: ClassVar[LoopRules] = LoopRules()  # the reference loop's rules (generic: our own nudge)

    def __init__(self, model: ModelView):
        self.model = model

    # -- the screen -------------------------------------------------------------------------------
    def screen(self, screen: tuple[int, int]) -> CoordinateMap:
        """The screenshot size the model is sent and how its coordinates map back to the screen."""
        from mcpworld.agent.tools.computer import image_size

        return CoordinateMap(self.model.coordinates, screen, image_size(screen, self.model.image_max))

    def keep_screenshots(self, configured: int) -> int:
        """How many recent screenshots the conversation keeps: ``agent.keep_screenshots``, unless the
        family's reference keeps a window of its own."""
        return configured

    # -- the tools --------------------------------------------------------------------------------
    def tools(self, tools: dict[str, Tool]) -> dict[str, Tool]:
        """The episode's tools as this family knows them (names and schemas); default: unchanged."""
        return tools

    # -- the conversation -------------------------------------------------------------------------
    @abc.abstractmethod
    def system_prompt(self, context: PromptContext) -> str:
        """The system prompt, rendered."""

    def request(self, messages: list[Message], schemas: list[ToolSchema]) -> tuple[list[Message], list[ToolSchema]]:
        """The request for the next turn: (messages, tool schemas) as the provider sends them.
        Default: the conversation as it stands, tools as OpenAI function schemas."""
        return messages, schemas

    def parse(self, reply: Reply) -> Reply:
        """The reply with its tool calls read; default: as the server parsed it."""
        return reply

    # -- provenance -------------------------------------------------------------------------------
    def params(self) -> dict[str, str]:
        """What identifies this rendering in the results (logged as params)."""
        return {"profile": self.name, "profile.version": self.version}
