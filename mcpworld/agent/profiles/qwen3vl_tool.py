"""``computer_use``: our desktop as Qwen3-VL knows it — one function whose ``action`` names what to
do, coordinates on the relative grid (QwenGrid), ``terminate`` and ``answer`` ending the episode.

The schema the model is shown is the reference's, byte for byte (mcpworld/data/prompts/qwen3vl.json).
Every action Qwen3-VL was trained on runs, including the ones OSWorld's agent lists in the action
description but leaves out of its enum and does not execute (``triple_click``, ``hscroll``,
``answer``): those follow Qwen's cookbook (cookbooks/utils/agent_function_call.py). Where the
reference is silent we say what we do, here and in docs/models.md.
"""

from __future__ import annotations

import json
import time
from functools import cache
from typing import TypedDict

from mcpworld.agent.messages import JSON, JSONObject, as_object
from mcpworld.agent.tools.base import Observation, Tool, ToolError, number
from mcpworld.agent.tools.computer import ComputerTool
from mcpworld.agent.tools.normalize import normalize_keys
from mcpworld.core.paths import DATA

CLICKS = {"left_click": (1, 1), "right_click": (3, 1), "middle_click": (2, 1), "double_click": (1, 2), "triple_click": (1, 3)}
ACTIONS = (*CLICKS, "key", "type", "mouse_move", "left_click_drag", "scroll", "hscroll", "wait", "terminate", "answer")
MAX_WAIT_S = 60.0  # a model's ``time`` beyond this is cut (the reference waits a fixed pause instead)
WAIT_DEFAULT_S = 2.0  # no ``time``: OSWorld's pause after WAIT


class ReferencePrompt(TypedDict):
    """mcpworld/data/prompts/qwen3vl.json: the reference's prompt pieces."""

    system: str  # the system prompt, with {tools}
    instruction: str  # the user turn, with {instruction} and {previous_actions}
    computer_use: JSONObject  # the computer_use function entry as <tools> lists it


@cache
def reference_prompt() -> ReferencePrompt:
    """The reference's prompt pieces, captured by running it (see the file's ``_source``)."""
    prompt: ReferencePrompt = json.loads((DATA / "prompts" / "qwen3vl.json").read_text(encoding="utf-8"))
    return prompt


def clean_keys(keys: JSON) -> str:
    """``keys: ["ctrl", "s"]`` (pressed together, released in reverse) → ``ctrl+s``. Strings the model
    wrapped in list syntax (``"['ctrl'"``) are unwrapped as the reference unwraps them."""
    if isinstance(keys, str):
        keys = [keys]
    if not isinstance(keys, list) or not keys:
        raise ToolError(f"action 'key' needs 'keys', a list such as [\"ctrl\", \"s\"]; got {keys!r}")
    cleaned = []
    for key in keys:
        key = str(key).strip()
        key = key.removeprefix("keys=[").removesuffix("]").strip()
        key = key[2:] if key[:2] in ("['", '["') and len(key) > 2 else key
        key = key[:-2] if key[-2:] in ("']", '"]') and len(key) > 2 else key
        cleaned.append(key.strip().strip("'\""))
    return str(normalize_keys([k for k in cleaned if k]))


def _point(args: JSONObject) -> tuple[float, float] | None:
    value = args.get("coordinate")
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ToolError(f"'coordinate' must be [x, y], got {value!r}")
    try:
        return number(value[0]), number(value[1])
    except (TypeError, ValueError):
        raise ToolError(f"'coordinate' must be two numbers, got {value!r}") from None


def _amount(args: JSONObject) -> int:
    """``pixels``, as pyautogui.scroll takes it: wheel clicks, the sign is the direction."""
    try:
        return int(number(args.get("pixels", 0)))
    except (TypeError, ValueError):
        raise ToolError(f"'pixels' must be a number, got {args.get('pixels')!r}") from None


class QwenComputerUse(Tool):
    name = "computer_use"
    family = "computer"

    def __init__(self, computer: ComputerTool, terminate_failure_fails: bool = False):
        self.env, self.coords = computer.env, computer.coords
        # OSWorld's agent ends DONE on any terminate (so an infeasible task never scores 1); True: the
        # cookbook's meaning, failure → FAIL (model.profile_options.terminate_failure=infeasible)
        self.terminate_failure_fails = terminate_failure_fails
        function = as_object(reference_prompt()["computer_use"]["function"])
        self.description, self.parameters = str(function["description"]), as_object(function["parameters"])

    def schema(self) -> JSONObject:
        """The reference's function entry as it is written into <tools> (``name_for_human`` and
        ``args_format`` included)."""
        return dict(reference_prompt()["computer_use"])

    async def call(self, args: JSONObject) -> Observation:
        action = args.get("action")
        if action not in ACTIONS:
            raise ToolError(f"unknown computer_use action {action!r}; use one of {', '.join(ACTIONS)}")
        if action == "terminate":  # success: the task is done; failure: the agent says it cannot be done
            status = str(args.get("status", "success")).lower()
            if status not in ("success", "failure"):
                raise ToolError(f"terminate 'status' must be success or failure, got {args.get('status')!r}")
            final = "FAIL" if status == "failure" and self.terminate_failure_fails else "DONE"
            return Observation(text=f"Episode ended: {final}", final=final)
        if action == "answer":
            text = args.get("text")
            if not isinstance(text, str):
                raise ToolError("action 'answer' needs 'text', the answer")
            return Observation(text=f"Answer recorded: {text}", final="DONE", answer=text)
        env = self.env
        if action == "wait":
            seconds = args.get("time", WAIT_DEFAULT_S)
            time.sleep(min(max(number(seconds), 0.0), MAX_WAIT_S))
            return Observation(image=self.coords.fit(env.screenshot()))
        before = env.screenshot()
        point = _point(args)
        xy = self.coords.to_screen(*point) if point else None
        if action in CLICKS:  # no coordinate: where the cursor is (pyautogui.click())
            button, count = CLICKS[action]
            env.act({"kind": "click", "button": button, "count": count, **({"x": xy[0], "y": xy[1]} if xy else {})})
        elif action == "type":
            text = args.get("text")
            if not isinstance(text, str) or not text:
                raise ToolError("action 'type' needs 'text'")
            env.act({"kind": "type", "text": text})
        elif action == "key":
            env.act({"kind": "key", "keys": clean_keys(args.get("keys", args.get("text")))})
        elif action == "mouse_move":
            if not xy:
                raise ToolError("action 'mouse_move' needs 'coordinate'")
            env.act({"kind": "move", "x": xy[0], "y": xy[1]})
        elif action == "left_click_drag":  # from where the cursor is, as pyautogui.dragTo
            if not xy:
                raise ToolError("action 'left_click_drag' needs 'coordinate' (the drag's end)")
            x0, y0 = env.cursor_position()
            env.act({"kind": "drag", "x0": x0, "y0": y0, "x": xy[0], "y": xy[1]})
        else:  # scroll / hscroll at the cursor, |pixels| wheel clicks (pyautogui.scroll / hscroll)
            amount = _amount(args)
            if amount:
                vertical = action == "scroll"
                direction = ("up" if amount > 0 else "down") if vertical else ("right" if amount > 0 else "left")
                env.act({"kind": "scroll", "direction": direction, "amount": abs(amount)})
        return Observation(image=self.coords.fit(env.settle(before)))
