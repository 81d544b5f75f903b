"""Qwen3-VL, driven as OSWorld's Qwen3-VL agent drives it (mm_agents/qwen3vl_agent.py, the agent the
Qwen team's OSWorld numbers come from), with the action set of Qwen's own cookbook.

- system prompt: the reference's, with the ``computer_use`` function inside ``<tools>`` and the
  relative statement "The screen's resolution is 1000x1000." (mcpworld/data/prompts/qwen3vl.json);
- request: no ``tools`` field; the last ``history_n`` (4) screenshots with the replies made on them,
  the instruction and the "Previous actions" (older steps' ``Action:`` lines) in the first user turn,
  image before text, then the current screenshot;
- reply: ``<tool_call>`` blocks (or bare call objects on a line) read from the text, as the reference
  reads them;
- screen: QwenGrid (smart_resize on our side, the 0..999 grid mapped back by the reference's rule).

Our extension (the reference has a GUI only): bash, MCP and Toolathlon's local tools are further
functions in ``<tools>``, one JSON object a line as Qwen's chat template lists tools, and their
results come back as ``<tool_response>`` user turns as that template renders tool messages. The task's
own system prompt (Toolathlon's) follows the reference's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from mcpworld.agent.messages import Content, ContentPart, ImagePart, Message, TextPart, ToolSchema, text_of
from mcpworld.agent.profiles.base import LoopRules, ModelView, NoCall, Profile, PromptContext
from mcpworld.agent.profiles.qwen3vl_screen import QwenGrid
from mcpworld.agent.profiles.qwen3vl_tool import QwenComputerUse, reference_prompt
from mcpworld.agent.providers.base import Reply, ToolCall, parse_arguments
from mcpworld.agent.tools.base import Tool
from mcpworld.agent.tools.computer import ComputerTool, CoordinateMap

HISTORY_N = 4  # the reference's default: screenshots+replies kept in full
# the reference's finishing rule, and ours where no computer_use (so no terminate) is offered
TERMINATE_RULE = "- If finishing, use action=terminate in the tool call."
DONE_RULE = "- If finishing, call done with status DONE (or FAIL if the task cannot be done)."
GUI_TOOL = "computer_use"
# the pyautogui call the reference writes for an action: its "Performing <call> action" fallback
PYAUTOGUI = {
    "left_click": "click",
    "right_click": "rightClick",
    "middle_click": "middleClick",
    "double_click": "doubleClick",
    "triple_click": "tripleClick",
    "type": "typewrite",
    "scroll": "scroll",
    "hscroll": "hscroll",
    "mouse_move": "moveTo",
    "left_click_drag": "dragTo",
}


def read_calls(text: str) -> tuple[str, list[ToolCall]]:
    """(the ``Action:`` line, the calls) of a reply, by the reference's rules: lines inside
    ``<tool_call>``…``</tool_call>`` joined and read as one JSON object; outside a tag, a line that is
    a whole ``{"name", "arguments"}`` object. A tag whose JSON does not parse becomes a call with
    ``_raw`` arguments (the loop reports it; the reference logs and skips it)."""
    action, inside = "", False
    calls: list[ToolCall] = []
    block: list[str] = []

    def take(blob: str) -> None:
        try:
            obj = json.loads(blob)
        except json.JSONDecodeError:
            calls.append(ToolCall(f"qwen_call_{len(calls)}", "unparsed_tool_call", {"_raw": blob}))
            return
        if isinstance(obj, dict) and isinstance(obj.get("name"), str):
            args = obj.get("arguments", {})
            args = parse_arguments(args) if isinstance(args, str) else args
            args = args if isinstance(args, dict) else {"_raw": str(args)}
            calls.append(ToolCall(f"qwen_call_{len(calls)}", obj["name"], args))

    for line in (raw.strip() for raw in text.split("\n")):
        if not line:
            continue
        if line.lower().startswith("action:"):
            action = action or line.split("Action:")[-1].strip()
        elif line.startswith("<tool_call>"):
            inside = True
            rest = line.removeprefix("<tool_call>").strip()  # (the reference drops text after the tag)
            if rest.endswith("</tool_call>"):  # our addition: a one-line block
                take(rest.removesuffix("</tool_call>").strip())
                inside = False
        elif line.startswith("</tool_call>"):
            if block:
                take("\n".join(block))
                block = []
            inside = False
        elif inside:
            block.append(line)
        elif line.startswith("{") and line.endswith("}"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict) and "name" in obj and "arguments" in obj:
                take(line)
    if block:
        take("\n".join(block))
    return action, calls


def step_line(text: str) -> str:
    """What the reference records for a step in "Previous actions": the reply's ``Action:`` line,
    else "Performing <pyautogui call> action" for its first call."""
    action, calls = read_calls(text)
    if action or not calls:
        return action
    first = calls[0].arguments.get("action") if calls[0].name == GUI_TOOL else calls[0].name
    if first == "key":
        keys = calls[0].arguments.get("keys")
        first = "hotkey" if isinstance(keys, list) and len(keys) > 1 else "press"
    return f"Performing {PYAUTOGUI.get(str(first), first)} action"


def _first_text(content: Content) -> str:
    if isinstance(content, str):
        return content
    return next((p["text"] for p in content if p["type"] == "text"), "")


def _image(content: Content) -> ImagePart | None:
    images = [p for p in content if p["type"] == "image_url"] if isinstance(content, list) else []
    return images[-1] if images else None


@dataclass
class _Turn:
    """One model turn as the reference's history shows it."""

    image: ImagePart | None  # the screen the model saw
    text: str  # what it wrote
    responses: list[str] = field(default_factory=list)  # other tools' results (our extension)


class Qwen3VLProfile(Profile):
    name = "qwen3vl"
    version = "2"
    reference = (
        "OSWorld mm_agents/qwen3vl_agent.py (karakuri-ai/OSWorld-JP@3301bf9fd54c); action set: "
        "QwenLM/Qwen3-VL cookbooks/utils/agent_function_call.py@96588727e44c"
    )
    text_calls = False  # the reply's <tool_call> blocks are read here, not by the provider
    # lib_run_single: a turn with no action is a step and the next predict sees the same screen; an
    # unparsable <tool_call> is logged and skipped (parse_response's except branch)
    loop = LoopRules(no_call=NoCall.skip, show_unreadable=False)

    def __init__(self, model: ModelView):
        super().__init__(model)
        self.history_n = int(self.model.options.get("history_n", HISTORY_N))
        self.offered: dict[str, Tool] = {}

    def screen(self, screen: tuple[int, int]) -> CoordinateMap:
        return QwenGrid(screen)

    def keep_screenshots(self, configured: int) -> int:
        return self.history_n + 1  # the reference's window, whatever agent.keep_screenshots says

    def tools(self, tools: dict[str, Tool]) -> dict[str, Tool]:
        """``computer`` and ``done`` become ``computer_use`` (``terminate`` ends the episode); other
        tools stay as they are. Without a screen, ``done`` stays too."""
        computer = tools.get("computer")
        if isinstance(computer, ComputerTool):
            rest = {n: t for n, t in tools.items() if n not in ("computer", "done")}
            # the reference ends DONE on every terminate; profile_options.terminate_failure=infeasible: FAIL
            fails = self.model.options.get("terminate_failure", "done") == "infeasible"
            tools = {GUI_TOOL: QwenComputerUse(computer, terminate_failure_fails=fails), **rest}
        self.offered = dict(tools)
        return tools

    def system_prompt(self, context: PromptContext) -> str:
        entries = [t.schema() for t in self.offered.values()] or [reference_prompt()["computer_use"]]
        listed = "\n".join(json.dumps(e) for e in entries)
        template = context.template or reference_prompt()["system"]
        if self.offered and GUI_TOOL not in self.offered:  # no computer_use, so no terminate: the done tool ends
            template = template.replace(TERMINATE_RULE, DONE_RULE)
        prompt = template.replace("{tools}", listed)
        return prompt + ("\n" + context.task_prompt if context.task_prompt else "")

    # -- the conversation ---------------------------------------------------------------------------
    def request(self, messages: list[Message], schemas: list[ToolSchema]) -> tuple[list[Message], list[ToolSchema]]:
        """The reference's layout rebuilt from the loop's conversation (see module docstring)."""
        system, instruction, current = "", "", None
        turns: list[_Turn] = []
        names: dict[str, str] = {}
        for message in messages:
            if message["role"] == "system":
                system = text_of(message["content"])
            elif message["role"] == "user" and not instruction:  # the task: its first text part (later parts: pruning's)
                instruction, current = _first_text(message["content"]), _image(message["content"])
            elif message["role"] == "assistant":
                turns.append(_Turn(current, text_of(message["content"])))
                names.update({c["id"]: c["function"]["name"] for c in message.get("tool_calls") or []})
            elif message["role"] == "tool" and turns and names.get(message["tool_call_id"]) != GUI_TOOL:
                turns[-1].responses.append(text_of(message["content"]))  # our extension: other tools' results
            elif message["role"] == "user":
                current = _image(message["content"]) or current  # (a text-only nudge keeps the last screen)
        shown, older = turns[-self.history_n :] if self.history_n else [], turns[: -self.history_n] if self.history_n else turns
        steps = "\n".join(f"Step {i + 1}: {step_line(t.text)}" for i, t in enumerate(older)) or "None"
        prompt: TextPart = {
            "type": "text",
            "text": reference_prompt()["instruction"].format(instruction=instruction, previous_actions=steps),
        }
        out: list[Message] = [{"role": "system", "content": [{"type": "text", "text": system}]}]
        for i, turn in enumerate(shown):
            shows: list[ContentPart] = [*([turn.image] if turn.image else []), *([prompt] if i == 0 else [])]
            out.append({"role": "user", "content": shows})
            out.append({"role": "assistant", "content": [{"type": "text", "text": turn.text}]})
            if turn.responses:
                out.append(
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "text",
                                "text": "\n".join(f"<tool_response>\n{r}\n</tool_response>" for r in turn.responses),
                            }
                        ],
                    }
                )
        last: list[ContentPart] = [*([current] if current else []), *([] if shown else [prompt])]
        if last:
            out.append({"role": "user", "content": last})
        return [m for m in out if m["content"]], []

    def parse(self, reply: Reply) -> Reply:
        """Calls read from the text by the reference's rules (a server that parsed them already wins)."""
        if reply.tool_calls:
            return reply
        _, calls = read_calls(reply.text)
        reply.tool_calls = calls
        return reply
