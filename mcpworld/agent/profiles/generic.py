"""The generic profile: for models whose makers publish no computer-use agent (Devstral, Ministral,
Llama 4 …). Our own prompt, OpenAI function tools, the server's tool-call parsing."""

from __future__ import annotations

from mcpworld.agent.profiles.base import Profile, PromptContext
from mcpworld.agent.prompts import system_prompt


class GenericProfile(Profile):
    name = "generic"
    version = "1"
    reference = "mcpworld's own prompt (agent/prompts.py)"

    def system_prompt(self, context: PromptContext) -> str:
        width, height = context.image or (0, 0)
        prompt = system_prompt(context.template, context.tool_names, width, height, self.model.coordinates)
        return prompt + ("\n" + context.task_prompt if context.task_prompt else "")
