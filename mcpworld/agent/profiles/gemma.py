"""Gemma 3, driven by Google's documented function calling (ai.google.dev/gemma/docs/capabilities/
function-calling): Gemma has no tool tokens and no tool role, so

- the functions are described in the prompt — the documented format instruction, then the function
  definitions as a JSON list — and no API tools are sent (a served template's own tool handling,
  e.g. a community Ollama build's JSON tool calls, is therefore not used: the makers' path is this);
- the model answers with a Python call list ``[func(param=value, ...)]`` (possibly in a
  ``tool_code`` fence), read safely by pycalls.py; the documentation's JSON form
  ``{"name": …, "parameters": …}`` is read as a fallback; text that is not a call stays text;
- results go back in the next user turn inside a ``tool_output`` fence, the new screenshot after it;
- Gemma has no system role: the system prompt opens the first user turn, as Gemma's chat template
  itself renders a system message, so the result does not depend on the served template.

Screen: Gemma 3's vision encoder sees every image at 896x896 (the model card; pan & scan aside), so
the screenshot is sent at exactly 896x896 (squashed, as the processor would squash it) and the model
answers in pixels of that image; x and y map back to the screen each with its own scale. Override
with ``model.profile_options.image_size``.
"""

from __future__ import annotations

import json
from dataclasses import replace

from mcpworld.agent.messages import JSON, AssistantMessage, Content, ContentPart, Message, ToolSchema, as_object
from mcpworld.agent.profiles.base import Profile, PromptContext
from mcpworld.agent.profiles.pycalls import calls_in_text, render_calls
from mcpworld.agent.prompts import system_prompt
from mcpworld.agent.providers.base import Reply, ToolCall
from mcpworld.agent.providers.content_calls import calls_in_text as json_calls
from mcpworld.agent.tools.computer import CoordinateMap

IMAGE_SIZE = 896  # Gemma 3's SigLIP encoder input, both sides
# The documented format instruction (the Python-style variant), kept as the model was shown it.
CALL_FORMAT = (
    "You have access to functions. If you decide to invoke any of the function(s), you MUST put it in "
    "the format of\n[func_name1(params_name1=params_value1, params_name2=params_value2...), "
    "func_name2(params)]\n\nYou SHOULD NOT include any other text in the response if you call a function\n"
)


def functions_block(schemas: list[ToolSchema]) -> str:
    """The format instruction and the function definitions (name, description, parameters)."""
    functions = [
        {"name": f["name"], "description": f.get("description", ""), "parameters": f.get("parameters", {})}
        for f in (as_object(s.get("function", s)) for s in schemas)
    ]
    return CALL_FORMAT + json.dumps(functions, indent=2, ensure_ascii=False)


def tool_output(text: str) -> str:
    return f"```tool_output\n{text}\n```"


def _parts(content: Content | None) -> list[ContentPart]:
    if isinstance(content, list):
        return [p.copy() for p in content]
    return [{"type": "text", "text": content}] if content else []


def _calls(message: AssistantMessage) -> list[ToolCall]:
    calls = []
    for c in message.get("tool_calls") or []:
        fn = c["function"]
        args: JSON
        try:
            args = json.loads(fn["arguments"] or "{}")
        except json.JSONDecodeError:
            args = {"_raw": fn["arguments"]}
        calls.append(ToolCall(c["id"], fn["name"], args if isinstance(args, dict) else {}))
    return calls


class GemmaProfile(Profile):
    name = "gemma"
    version = "1"
    reference = "https://ai.google.dev/gemma/docs/capabilities/function-calling (Python-style calls)"
    text_calls = False  # the reply is read here (call lists; the documented JSON form as a fallback)

    def screen(self, screen: tuple[int, int]) -> CoordinateMap:
        side = int(self.model.options.get("image_size", IMAGE_SIZE))
        return CoordinateMap("pixels", screen, (side, side))

    def system_prompt(self, context: PromptContext) -> str:
        width, height = context.image or (0, 0)
        prompt = system_prompt(context.template, context.tool_names, width, height, "pixels")
        return prompt + ("\n" + context.task_prompt if context.task_prompt else "")

    def request(self, messages: list[Message], schemas: list[ToolSchema]) -> tuple[list[Message], list[ToolSchema]]:
        """Alternating user/model turns: [system + functions + instruction, screenshot], then per step
        the model's call list and a user turn with the ``tool_output`` results and the new screenshot."""
        system = "\n".join(str(m["content"] or "") for m in messages if m["role"] == "system").strip()
        preamble = "\n\n".join(p for p in (system, functions_block(schemas) if schemas else "") if p)
        out: list[Message] = []
        pending: list[ContentPart] = []
        for message in messages:
            if message["role"] == "system":
                continue
            if message["role"] == "assistant":
                if pending:
                    out.append({"role": "user", "content": pending})
                    pending = []
                out.append({"role": "assistant", "content": self._replay(message)})
            elif message["role"] == "tool":
                pending.append({"type": "text", "text": tool_output(str(message["content"]))})
            else:
                pending += _parts(message["content"])
        if pending:
            out.append({"role": "user", "content": pending})
        if out and out[0]["role"] == "user" and preamble:
            first = out[0]["content"]
            if not isinstance(first, list):  # (never: user turns are built from parts above)
                raise TypeError(f"a user turn built from parts holds {first!r}")
            if first and first[0]["type"] == "text":
                first[0] = {"type": "text", "text": preamble + "\n" + first[0]["text"]}
            else:
                first.insert(0, {"type": "text", "text": preamble})
        return out, []

    @staticmethod
    def _replay(message: AssistantMessage) -> str:
        """The model's turn as it wrote it; calls the server parsed out of the text are written back."""
        text = str(message["content"] or "")
        calls = _calls(message)
        if calls and calls_in_text(text) is None:
            text = (text + "\n" if text else "") + render_calls(calls)
        return text

    def parse(self, reply: Reply) -> Reply:
        """Calls the server already parsed stay; otherwise the call list in the text. The text is kept
        whole, to be replayed as the model wrote it."""
        if reply.tool_calls:
            return reply
        calls = calls_in_text(reply.text) or json_calls(reply.text)[1]
        return replace(reply, tool_calls=calls) if calls else reply
