"""The oracle: replays a task's solution through the same tools an agent uses.

This is how every shipped task is proven solvable, and (with an empty solution) that an
untouched desktop never passes. Its spoiled replay (``provider.replay=spoiled``) is the nearly
right answer that must fail too: the solution as its steps' ``spoil:`` declare it, or, where none
does, the solution without its last state-changing step (docs/certify.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from mcpworld.agent.messages import JSONObject, Message, ToolSchema
from mcpworld.agent.providers.base import Provider, Reply, ToolCall
from mcpworld.core.task_parts import OracleStep

# computer actions that only look or wait: leaving one out changes nothing on the desktop
LOOKING_ACTIONS = frozenset({"wait", "screenshot", "mouse_move", "zoom", "cursor_position"})
# tools that never change state: the oracle's own wait for app state, and the end of the episode
# (Toolathlon's local claim_done is its done: leaving it out would spoil nothing the grader reads)
PASSIVE_TOOLS = frozenset({"wait_for", "done", "local-claim_done"})
# MCP tools named as readers (``filesystem-read_text_file``, ``excel-list_sheets``) only look
READER_PREFIXES = ("read", "list", "search", "get")


def changes_state(step: OracleStep) -> bool:
    """Whether leaving this step out could change what the grader sees: a computer action other
    than looking or waiting, a shell command, an MCP (or Toolathlon local) tool that is not a reader."""
    if step.tool in PASSIVE_TOOLS:
        return False
    if step.tool == "computer" or step.tool.startswith("computer_"):
        return str(step.args.get("action", "")) not in LOOKING_ACTIONS
    if "-" in step.tool:
        return not step.tool.split("-", 1)[1].startswith(READER_PREFIXES)
    return True  # bash, shell and any other tool: assume it acts


def declares_spoil(solution: Sequence[OracleStep]) -> bool:
    return any(step.spoil is not None for step in solution)


def spoiled(solution: Sequence[OracleStep]) -> list[OracleStep] | None:
    """The nearly right replay of ``solution``, or None when it has none (no step declares ``spoil:``
    and no step changes state, so leaving one out would replay the same thing)."""
    if declares_spoil(solution):
        return [variant for variant in (step.spoiled() for step in solution) if variant is not None]
    acting = [i for i, step in enumerate(solution) if changes_state(step)]
    if not acting:
        return None
    # the last acting step goes, and the waits after it with it: they wait for its effect, which never
    # comes (a wait_for would only run to its timeout before the grader looks)
    return list(solution[: acting[-1]])


class OracleProvider(Provider):
    name = "oracle"
    vision = False  # it never looks at the screen

    def __init__(self, solution: Sequence[OracleStep], spoil: bool = False):
        variant = spoiled(solution) if spoil else None
        steps = list(solution) if variant is None else variant  # nothing to spoil: the solution as it is
        self.solution = [OracleStep(step.tool, step.args) for step in steps]
        self.position = 0

    async def complete(self, messages: list[Message], tools: list[ToolSchema], *, temperature: float | None = None) -> Reply:
        n = self.position
        self.position += 1
        if n < len(self.solution):
            call = self.solution[n]
            return Reply(
                tool_calls=[ToolCall(id=f"oracle-{n}", name=call.tool, arguments=cast("JSONObject", dict(call.args)))],
                latency_s=0.0,
            )
        return Reply(tool_calls=[ToolCall(id=f"oracle-{n}", name="done", arguments={"status": "DONE"})])
