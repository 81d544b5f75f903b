"""A provider that plays a fixed script: write a greeting into a file with the shell, then say done.

A provider kind is any callable ``(ProviderSettings) -> Provider``; a Provider subclass whose
constructor takes the settings is one. Entry point: ``example_scripted`` in ``mcpworld.providers``.
"""

from __future__ import annotations

from typing import Any

from mcpworld.agent.providers import ProviderSettings
from mcpworld.agent.providers.base import Provider, Reply, ToolCall, Usage


class ScriptedProvider(Provider):
    name = "example_scripted"

    def __init__(self, settings: ProviderSettings) -> None:
        self.greeting = str((settings.model.profile_options or {}).get("greeting", "hello from outside"))
        self.turn = 0

    async def complete(self, messages: Any, tools: Any, *, temperature: float | None = None) -> Reply:
        self.turn += 1
        if self.turn == 1:
            call = ToolCall(id="call_1", name="bash", arguments={"command": f"echo '{self.greeting}' > ~/greeting.txt"})
        else:
            call = ToolCall(id=f"call_{self.turn}", name="done", arguments={})
        return Reply(text="", tool_calls=[call], usage=Usage(input_tokens=10, output_tokens=5))
