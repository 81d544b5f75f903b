"""Tool calls as open models really write them, mapped onto our tools before dispatch.

Qwen-VL emits ``computer_use`` with ``keys: ["ctrl", "s"]`` and ``terminate``; others call an action
as if it were a tool (``left_click``), use ``click``/``press``/``hotkey``, write ``Ctrl + S`` or
``ctrl-s``. These are the same intent, so they are mapped here — but only onto tools the modality
offers: a call to a tool outside it stays a hallucination.
"""

from __future__ import annotations

import re
from collections.abc import Container

from mcpworld.agent.messages import JSON, JSONObject
from mcpworld.agent.tools.base import number
from mcpworld.agent.tools.computer import ACTIONS

TOOL_ALIASES = {
    "computer": ("computer_use", "computer-use", "computeruse", "gui", "mouse", "keyboard"),
    "bash": ("shell", "terminal", "run_command", "execute_bash", "run_bash", "bash_command", "cmd"),
    "done": ("terminate", "finish", "finished", "complete", "task_complete", "claim_done", "stop"),
}
ACTION_ALIASES = {
    "left_click": ("click", "leftclick", "tap", "single_click", "mouse_click"),
    "double_click": ("doubleclick", "dblclick", "double"),
    "triple_click": ("tripleclick",),
    "right_click": ("rightclick", "context_click"),
    "middle_click": ("middleclick",),
    "key": ("press", "hotkey", "keypress", "key_press", "keys", "press_key", "shortcut"),
    "type": ("type_text", "typing", "write", "input", "input_text", "text", "typewrite"),
    "mouse_move": ("move", "moveto", "move_to", "hover", "mousemove"),
    "left_click_drag": ("drag", "left_drag", "drag_to", "dragto"),
    "wait": ("sleep", "pause"),
    "screenshot": ("take_screenshot", "capture"),
}
_ACTION_OF = {alias: action for action, aliases in ACTION_ALIASES.items() for alias in aliases}
_TOOL_OF = {alias: tool for tool, aliases in TOOL_ALIASES.items() for alias in aliases}
MODIFIERS = {
    "control": "ctrl",
    "ctl": "ctrl",
    "cmd": "super",
    "command": "super",
    "win": "super",
    "windows": "super",
    "meta": "super",
    "option": "alt",
    "opt": "alt",
}
_CHORD_SPLIT = re.compile(r"\s*\+\s*")
_DASHED = re.compile(r"(^|\+)(ctrl|control|alt|shift|super|cmd|win|meta)-(?=\S)", re.I)  # "ctrl-shift-t"


def normalize_chord(chord: str) -> str:
    """``Ctrl + S`` / ``control-s`` / ``CMD+shift+T`` → ``ctrl+s`` / ``super+shift+t``."""
    chord = chord.strip()
    while _DASHED.search(chord):
        chord = _DASHED.sub(r"\1\2+", chord, count=1)
    chord = re.sub(r"(?<=.)\+\s*\+$", "+plus", chord)  # "ctrl++": the last key is the plus key itself
    parts = [p for p in _CHORD_SPLIT.split(chord) if p] or [chord]
    if len(parts) == 1:
        return parts[0]
    keys = [MODIFIERS.get(p.lower(), p.lower() if len(p) > 1 or p.isalpha() else p) for p in parts]
    return "+".join(keys)


def normalize_keys(value: JSON) -> JSON:
    """One chord string, a space-separated chord sequence, or a list of keys pressed together."""
    if isinstance(value, list) and value and all(isinstance(k, str) for k in value):
        return normalize_chord("+".join(str(k) for k in value))
    if isinstance(value, str) and value.strip():
        text = re.sub(r"\s*\+\s*", "+", value.strip())  # "ctrl + s" is one chord, not three keys
        return " ".join(normalize_chord(c) for c in text.split())
    return value


def _computer_args(args: JSONObject) -> JSONObject:
    out = dict(args)
    action = str(out.get("action", "")).strip().lower().replace(" ", "_")
    if action in ("scroll_up", "scroll_down", "scroll_left", "scroll_right"):
        out.setdefault("scroll_direction", action.split("_")[1])
        action = "scroll"
    out["action"] = _ACTION_OF.get(action, action)
    for alias in ("coordinates", "position", "point", "xy", "location"):
        if alias in out and "coordinate" not in out:
            out["coordinate"] = out.pop(alias)
    if "coordinate" not in out and "x" in out and "y" in out:
        out["coordinate"] = [out.pop("x"), out.pop("y")]
    if "start" in out and "start_coordinate" not in out:
        out["start_coordinate"] = out.pop("start")
    for alias in ("keys", "key", "hotkey", "content", "value", "string"):
        if alias in out and "text" not in out:
            out["text"] = out.pop(alias)
    if out["action"] == "key" and "text" in out:
        out["text"] = normalize_keys(out["text"])
    for alias in ("time", "seconds", "secs"):
        if alias in out and "duration" not in out:
            out["duration"] = out.pop(alias)
    if "direction" in out and "scroll_direction" not in out:
        out["scroll_direction"] = out.pop("direction")
    for alias in ("amount", "clicks"):
        if alias in out and "scroll_amount" not in out:
            out["scroll_amount"] = out.pop(alias)
    if out["action"] == "scroll" and "pixels" in out and "scroll_amount" not in out:  # Qwen: signed pixels
        pixels = number(out.pop("pixels"))
        out.setdefault("scroll_direction", "up" if pixels > 0 else "down")
        out["scroll_amount"] = max(1, round(abs(pixels) / 100))
    return out


def _done_args(args: JSONObject) -> JSONObject:
    out = dict(args)
    status = str(out.get("status", "DONE")).strip().lower()
    out["status"] = (
        "FAIL"
        if status in ("failure", "fail", "failed", "infeasible", "impossible")
        else "DONE"
        if status in ("success", "succeeded", "done", "completed", "complete", "")
        else out.get("status")
    )
    return out


def normalize_call(name: str, args: JSONObject, offered: Container[str]) -> tuple[str, JSONObject]:
    """``(tool name, arguments)`` for a call as a model wrote it; unchanged when nothing applies."""
    if "_raw" in args:
        return name, args
    key = name.strip().lower().replace(" ", "_")
    tool = key if key in offered else _TOOL_OF.get(key)
    if tool is None and "computer" in offered and _ACTION_OF.get(key, key) in (*ACTIONS, "scroll_up", "scroll_down"):
        tool, args = "computer", {"action": key, **args}  # an action called as if it were a tool
    if tool is None or tool not in offered:
        return name, args
    if tool == "computer":
        return tool, _computer_args(args)
    if tool == "done":
        return tool, _done_args(args)
    return tool, args
