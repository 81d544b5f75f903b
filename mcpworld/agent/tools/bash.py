"""The bash tool: a command in the episode's environment (scrubbed env, timeout, capped output)."""

from __future__ import annotations

from mcpworld.agent.messages import JSONObject
from mcpworld.agent.tools.base import Observation, Tool, ToolError
from mcpworld.env.base import Environment


class BashTool(Tool):
    name = "bash"
    family = "bash"
    description = "Run a bash command in the user's home directory and return its output."
    parameters = {  # noqa: RUF012 - never mutated; an instance attribute MCP tools set
        "type": "object",
        "properties": {"command": {"type": "string", "description": "the bash command to run"}},
        "required": ["command"],
    }

    def __init__(self, env: Environment, timeout_s: float = 30.0, max_output: int = 10_000):
        self.env, self.timeout_s, self.max_output = env, timeout_s, max_output

    async def call(self, args: JSONObject) -> Observation:
        command = args.get("command")
        if args.get("restart") and not command:  # Anthropic's bash tool; every command gets a fresh shell anyway
            return Observation(text="bash restarted (each command runs in a fresh shell in the home directory)")
        if not isinstance(command, str) or not command.strip():
            raise ToolError("bash needs a non-empty 'command'")
        r = self.env.shell(command, timeout=self.timeout_s, max_output=self.max_output)
        parts = []
        if r.stdout:
            parts.append(r.stdout)
        if r.stderr:
            parts.append(f"[stderr]\n{r.stderr}")
        if r.truncated:
            parts.append(f"[output truncated to {self.max_output} characters]")
        if r.timed_out:
            parts.append(f"[timed out after {self.timeout_s:.0f}s and was killed]")
        parts.append(f"[exit code {r.returncode}]")
        return Observation(text="\n".join(parts), ok=r.returncode == 0 and not r.timed_out)
