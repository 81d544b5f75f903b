"""UI-TARS replies — ``Thought: … Action: click(start_box='(x,y)')`` — read into our tool calls.

The reply's action calls are split and read with ``ast`` (literals only, nothing evaluated); a
``type(content='…')`` is read by hand first, because the model writes its content with the escapes
its prompt asks for (``\\'``, ``\\n``) and unescaped quotes inside. Points come as ``(x,y)``,
``<|box_start|>(x,y)<|box_end|>``, a box ``(x1,y1,x2,y2)`` (its centre) or ``<point>x y</point>``, in
pixels of the image the model was sent.
"""

from __future__ import annotations

import ast
import re

from mcpworld.agent.messages import JSON, JSONObject
from mcpworld.agent.providers.base import ToolCall

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
CALL_START = re.compile(r"^[ \t]*([A-Za-z_]\w*)[ \t]*\(", re.M)
TYPE_CALL = re.compile(r"^\s*type\s*\(\s*content\s*=\s*(['\"])(.*)\1\s*\)\s*$", re.S)
ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}
ARROWS = {"arrowleft": "left", "arrowright": "right", "arrowup": "up", "arrowdown": "down"}
CLICKS = {
    "click": "left_click",
    "left_single": "left_click",
    "left_double": "double_click",
    "right_single": "right_click",
    "hover": "mouse_move",
}
SCROLL_CLICKS = 5  # the reference scrolls 5 wheel clicks per scroll action


class Unreadable(ValueError):
    """An action the reference parser would reject too."""


def split_reply(text: str) -> tuple[str, str] | None:
    """(thought, action block) of a reply; None when it has no ``Action:``."""
    if "Action:" not in text:
        return None
    head, _, actions = text.strip().rpartition("Action:")
    thought = head.split("Thought:", 1)[-1].strip()
    return thought, actions.strip()


def unescape(content: str) -> str:
    out, i = [], 0
    while i < len(content):
        if content[i] == "\\" and i + 1 < len(content) and content[i + 1] in ESCAPES:
            out.append(ESCAPES[content[i + 1]])
            i += 2
            continue
        out.append(content[i])
        i += 1
    return "".join(out)


def read_call(source: str) -> tuple[str, dict[str, str]]:
    """One action call: its name and keyword arguments (strings)."""
    typed = TYPE_CALL.match(source)
    if typed:
        return "type", {"content": unescape(typed.group(2))}
    try:
        node = ast.parse(source.strip().replace("\n", "\\n"), mode="eval").body
    except SyntaxError as exc:
        raise Unreadable(f"cannot read action {source!r}: {exc.msg}") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise Unreadable(f"not an action call: {source!r}")
    args: dict[str, str] = {}
    for kw in node.keywords:
        if kw.arg is None or not isinstance(kw.value, ast.Constant):
            raise Unreadable(f"action arguments must be literals: {source!r}")
        args[kw.arg] = str(kw.value.value)
    return node.func.id, args


def split_calls(block: str) -> list[str]:
    """The calls in an action block (several may follow one another, one per line or paragraph)."""
    starts = [m.start() for m in CALL_START.finditer(block)]
    if not starts or block[: starts[0]].strip():
        raise Unreadable(f"no action call in {block!r}")
    calls, begin = [], starts[0]
    for start in starts[1:]:  # a new call starts only where the text before it reads as a whole call
        piece = block[begin:start].strip()
        try:
            read_call(piece)
        except Unreadable:
            continue
        calls.append(piece)
        begin = start
    calls.append(block[begin:].strip())
    return calls


def point(value: str) -> list[JSON]:
    """A point or box written any of the ways UI-TARS writes them → [x, y] (a box's centre)."""
    numbers: list[float] = [float(n) for n in NUMBER.findall(value.replace("<|box_start|>", "").replace("<|box_end|>", ""))]
    if len(numbers) == 2:
        return [*numbers]
    if len(numbers) == 4:
        return [(numbers[0] + numbers[2]) / 2, (numbers[1] + numbers[3]) / 2]
    raise Unreadable(f"a point needs 2 numbers (or a box 4), got {value!r}")


def to_tool_calls(name: str, args: dict[str, str], index: int) -> list[ToolCall]:
    """One UI-TARS action as our tool calls (computer / done), coordinates still in image pixels."""
    cid = f"uitars_{index}"
    start = args.get("start_box") or args.get("point") or args.get("start_point")
    end = args.get("end_box") or args.get("end_point")
    computer = "computer"
    if name in CLICKS:
        call: JSONObject = {"action": CLICKS[name]}
        if start:
            call["coordinate"] = point(start)
        return [ToolCall(cid, computer, call)]
    if name in ("drag", "select"):
        if not (start and end):
            raise Unreadable(f"{name} needs start_box and end_box")
        return [
            ToolCall(cid, computer, {"action": "left_click_drag", "start_coordinate": point(start), "coordinate": point(end)})
        ]
    if name in ("hotkey", "press"):
        keys = args.get("key") or args.get("hotkey") or args.get("press") or ""
        keys = ARROWS.get(keys, keys)
        if not keys.strip():
            raise Unreadable(f"{name} needs key")
        return [ToolCall(cid, computer, {"action": "key", "text": "+".join(keys.split())})]
    if name == "type":
        content = args.get("content", "")
        submit = content.endswith("\n") or content.endswith("\\n")
        text = content[:-2] if content.endswith("\\n") else content.rstrip("\n") if submit else content
        calls = [ToolCall(cid, computer, {"action": "type", "text": text})] if text else []
        if submit:  # the reference pastes the text, then presses enter
            calls.append(ToolCall(f"{cid}_enter", computer, {"action": "key", "text": "Return"}))
        return calls
    if name == "scroll":
        call = {
            "action": "scroll",
            "scroll_direction": args.get("direction", "down").strip().lower(),
            "scroll_amount": SCROLL_CLICKS,
        }
        if start:
            call["coordinate"] = point(start)
        return [ToolCall(cid, computer, call)]
    if name == "wait":
        return [ToolCall(cid, computer, {"action": "wait", "duration": 5})]
    if name == "finished":
        return [ToolCall(cid, "done", {"status": "DONE", "answer": args.get("content", "")})]
    if name == "call_user":  # no user will answer: the agent has given up (see uitars.py)
        return [ToolCall(cid, "done", {"status": "FAIL", "answer": "call_user: the agent asked for the user's help"})]
    return [ToolCall(cid, name, dict(args))]  # not in the action space: the loop reports an unknown tool


def reply_calls(text: str) -> list[ToolCall] | None:
    """The tool calls a reply asks for; None when it has no readable action."""
    parts = split_reply(text)
    if parts is None:
        return None
    block = re.sub(r"<point>\s*(-?[\d.]+)\s+(-?[\d.]+)\s*</point>", r"(\1,\2)", parts[1])
    try:
        calls: list[ToolCall] = []
        for n, source in enumerate(split_calls(block)):
            name, args = read_call(source)
            calls += to_tool_calls(name, args, n)
    except Unreadable as exc:
        return [ToolCall("uitars_0", "unparsed_action", {"_raw": str(exc)})]
    return calls
