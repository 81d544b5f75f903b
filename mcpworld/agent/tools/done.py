"""The done tool: the agent declares the task finished (DONE) or impossible (FAIL)."""

from __future__ import annotations

from mcpworld.agent.messages import JSONObject
from mcpworld.agent.tools.base import Observation, Tool, ToolError


class DoneTool(Tool):
    name = "done"
    family = "done"
    description = (
        "Call when you have finished the task (status DONE), or when the task is impossible "
        "to complete (status FAIL). Nothing runs after this."
    )
    parameters = {  # noqa: RUF012 - never mutated; an instance attribute MCP tools set
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["DONE", "FAIL"]},
            "answer": {"type": "string", "description": "optional final answer or reason"},
        },
        "required": ["status"],
    }

    async def call(self, args: JSONObject) -> Observation:
        status = str(args.get("status", "DONE")).upper()
        if status in ("INFEASIBLE", "FAILED", "FAILURE"):
            status = "FAIL"
        if status not in ("DONE", "FAIL"):
            raise ToolError(f"done 'status' must be DONE or FAIL, got {args.get('status')!r}")
        answer = args.get("answer")
        return Observation(
            text=f"Episode ended: {status}", final=status, answer=str(answer) if answer not in (None, "") else None
        )
