"""UI-TARS-1.5, driven as its makers' OSWorld agent drives it (mm_agents/uitars15_v1.py, infer mode
``qwen25vl_normal``; action parser of bytedance/UI-TARS codes/ui_tars).

- prompt: system "You are a helpful assistant."; the first user turn is UI-TARS's computer-use prompt
  (output format, action space, note, the instruction); no API tools — the model answers in text;
- history: every past reply replayed as an assistant turn (with its ``<|box_start|>`` tokens put
  back), each screenshot as its own user turn, only the last ``history_n`` (5) screenshots kept;
- screen: the screenshot is sent at ``smart_resize`` size (multiples of 28 within min/max pixels) and
  the model answers in pixels of it; a point maps back as ``int(x / width * screen_width)``, as the
  reference's pyautogui does;
- ``finished(content=…)`` ends the episode DONE; ``call_user()`` ends it FAIL (infeasible).

Where we differ on purpose: we resize the screenshot to the smart_resize size ourselves (the
reference sends it as is and the server's processor does the same resize), so the coordinate space
does not depend on the server's image settings; ``type`` types the text instead of pasting it through
the clipboard; ``call_user`` ends the episode at once (the reference waits up to 3 times for a user
who never comes, then fails); a failed tool call's error is shown as text; ``Thought`` language defaults to English
(the OSWorld run uses Chinese): ``model.profile_options.language``.
"""

from __future__ import annotations

import re
from dataclasses import replace

from mcpworld.agent.messages import ContentPart, ImagePart, Message, ToolSchema, text_of
from mcpworld.agent.profiles.base import LoopRules, NoCall, Profile, PromptContext
from mcpworld.agent.profiles.smart_resize import smart_resize as qwen_smart_resize
from mcpworld.agent.profiles.uitars_actions import reply_calls
from mcpworld.agent.providers.base import Reply
from mcpworld.agent.tools.computer import CoordinateMap

SYSTEM = "You are a helpful assistant."
FINISHED = (
    "finished(content='xxx') # Use escape characters \\', \\\", and \\n in content part to ensure we can "
    "parse the content in normal python string format."
)
# The model's trained interface (OSWorld mm_agents/uitars15_v1.py: UITARS_USR_PROMPT_THOUGHT with
# UITARS_NORMAL_ACTION_SPACE) as the reference's Python evaluates it (one backslash before n, ' and ",
# where its source writes two): tests/data/parity/uitars checks it against the reference's request.
ACTION_SPACE = (
    """
click(start_box='<|box_start|>(x1,y1)<|box_end|>')
left_double(start_box='<|box_start|>(x1,y1)<|box_end|>')
right_single(start_box='<|box_start|>(x1,y1)<|box_end|>')
drag(start_box='<|box_start|>(x1,y1)<|box_end|>', end_box='<|box_start|>(x3,y3)<|box_end|>')
hotkey(key='')
type(content='') #If you want to submit your input, use "\\n" at the end of `content`.
scroll(start_box='<|box_start|>(x1,y1)<|box_end|>', direction='down or up or right or left')
wait() #Sleep for 5s and take a screenshot to check for any changes.
"""
    + FINISHED
    + "\n"
)
USER_PROMPT = (
    (
        "You are a GUI agent. You are given a task and your action history, with screenshots. "
        "You need to perform the next action to complete the task. \n"
    )
    + """
## Output Format
```
Thought: ...
Action: ...
```

## Action Space
{action_space}

## Note
- Use {language} in `Thought` part.
- Write a small plan and finally summarize your next action (with its target element) in one sentence in `Thought` part.

## User Instruction
{instruction}
"""
)  # the space after "the task." is the reference's
FACTOR, MIN_PIXELS, MAX_PIXELS = 28, 100 * 28 * 28, 16384 * 28 * 28
BOX = re.compile(r"(start_box|end_box)='\((\d+),\s*(\d+)\)'")


def smart_resize(width: int, height: int, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS) -> tuple[int, int]:
    """The (width, height) Qwen2.5-VL's processor resizes an image to (factor 28)."""
    return qwen_smart_resize(width, height, factor=FACTOR, min_pixels=min_pixels, max_pixels=max_pixels)


class TruncatingMap(CoordinateMap):
    """Image pixels → screen pixels the way the reference lands them: the relative position scaled to
    the screen, rounded to 3 decimals, then truncated by pyautogui's ``int()``."""

    def to_screen(self, x: float, y: float) -> tuple[int, int]:
        super().to_screen(x, y)  # the bounds check (OffScreen)
        (sw, sh), (bx, by) = self.screen, self.bounds
        px, py = int(round(x / bx * sw, 3)), int(round(y / by * sh, 3))
        return min(max(px, 0), sw - 1), min(max(py, 0), sh - 1)


def add_box_tokens(reply: str) -> str:
    """A past reply as the model wrote it: the server strips ``<|box_start|>``/``<|box_end|>``
    (special tokens) from what it returns; the reference puts them back when replaying history."""
    return BOX.sub(lambda m: f"{m.group(1)}='<|box_start|>({m.group(2)},{m.group(3)})<|box_end|>'", reply)


def _parts(message: Message) -> list[ContentPart]:
    content = message["content"]
    if isinstance(content, list):
        return content
    return [{"type": "text", "text": content}] if content else []


class UITarsProfile(Profile):
    name = "uitars"
    version = "2"
    reference = (
        "OSWorld mm_agents/uitars15_v1.py (qwen25vl_normal) + bytedance/UI-TARS "
        "codes/ui_tars/action_parser.py@582f3a7ea5d285ee8ed9e2e84048d1ab01453c49"
    )

    text_calls = False  # the reply's Action is read here; the history replays it as written
    # uitars15_v1.predict: a reply it cannot parse is asked again with the same messages at temperature 1,
    # 3 tries in all, none kept in the history, then the episode ends DONE ("client error"); on the last
    # turn of the budget any action but finished/wait/call_user becomes FAIL
    loop = LoopRules(
        no_call=NoCall.end,
        end_as=("unreadable", "DONE"),
        show_unreadable=False,
        unreadable_tries=3,
        retry_temperature=1.0,
        last_turn_fails=True,
    )

    @property
    def history_n(self) -> int:
        return int(self.model.options.get("history_n", 5))

    def keep_screenshots(self, configured: int) -> int:
        """The reference's own window (``history_n``), whatever agent.keep_screenshots says."""
        return self.history_n

    def screen(self, screen: tuple[int, int]) -> CoordinateMap:
        o = self.model.options
        image = smart_resize(*screen, int(o.get("min_pixels", MIN_PIXELS)), int(o.get("max_pixels", MAX_PIXELS)))
        return TruncatingMap("pixels", screen, image)

    def system_prompt(self, context: PromptContext) -> str:
        return SYSTEM + ("\n" + context.task_prompt if context.task_prompt else "")

    def user_prompt(self, instruction: str) -> str:
        return USER_PROMPT.format(
            action_space=ACTION_SPACE, language=self.model.options.get("language", "English"), instruction=instruction
        )

    def request(self, messages: list[Message], schemas: list[ToolSchema]) -> tuple[list[Message], list[ToolSchema]]:
        """The reference's layout rebuilt from the loop's conversation (see the module docstring);
        no tool schemas: the action space is in the prompt."""
        system = next((text_of(m["content"]) for m in messages if m["role"] == "system"), SYSTEM)
        first = next(i for i, m in enumerate(messages) if m["role"] == "user")
        instruction = "\n".join(p["text"] for p in _parts(messages[first]) if p["type"] == "text")
        events: list[tuple[str, str | ImagePart]] = []  # ("image", part) | ("reply", text) | ("text", text), in order
        for message in messages[first:]:
            if message["role"] == "assistant":
                events.append(("reply", text_of(message["content"])))
            elif message["role"] == "tool":
                content = message["content"]
                if isinstance(content, str) and content.startswith("Error:"):
                    events.append(("text", content))
            elif message["role"] == "user":
                for part in _parts(message):
                    if part["type"] == "image_url":
                        events.append(("image", part))
                    elif message is not messages[first] and part["text"]:
                        events.append(("text", part["text"]))
        # one screenshot per step, as the reference takes: an action that became several tool calls
        # (type + Enter) left several, of which the last is the step's
        after = [kind for kind, _ in events]
        images = [
            i
            for i, kind in enumerate(after)
            if kind == "image"
            and "image" not in after[i + 1 : next((j for j in range(i + 1, len(after)) if after[j] == "reply"), len(after))]
        ]
        shown = set(images[-self.history_n :])
        out: list[Message] = [
            {"role": "system", "content": [{"type": "text", "text": system}]},
            {"role": "user", "content": [{"type": "text", "text": self.user_prompt(instruction)}]},
        ]
        for i, (kind, value) in enumerate(events):
            if not isinstance(value, str):  # an image
                if i in shown:
                    out.append({"role": "user", "content": [value]})
            elif kind == "reply":
                out.append({"role": "assistant", "content": [{"type": "text", "text": add_box_tokens(value)}]})
            elif kind == "text":
                out.append({"role": "user", "content": [{"type": "text", "text": value}]})
        return out, []

    def parse(self, reply: Reply) -> Reply:
        """The reply's ``Action:`` as tool calls; its text is kept whole, to be replayed as written."""
        calls = reply_calls(reply.text)
        return replace(reply, tool_calls=calls) if calls is not None else replace(reply, tool_calls=[])
