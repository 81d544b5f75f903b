"""Tool calls written into the reply text, which open models produce when a server's tool parser
does not catch them: Hermes/Qwen ``<tool_call>{...}</tool_call>``, a fenced or bare JSON object
``{"name": ..., "arguments": {...}}`` (or a list of them), or a bare ``{"action": ...}`` meant for
the computer tool. A tag or object that cannot be parsed still becomes a call whose arguments are
``{"_raw": text}``, so the loop reports it to the model as a hallucination instead of ignoring it.
"""

from __future__ import annotations

import json
import re

from mcpworld.agent.messages import JSON
from mcpworld.agent.providers.base import ToolCall, parse_arguments

TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
FENCED = re.compile(r"```(?:json|tool_call|tool)?\s*(.*?)```", re.S)
OPENER = re.compile(r"[{\[]")


ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")


def _as_call(obj: JSON, i: int, tagged: bool = True) -> ToolCall | None:
    """A call from a JSON object. Outside a <tool_call> tag an object needs an arguments key too:
    ``{"name": "Alice", "email": ...}`` in prose is data, not a call."""
    if not isinstance(obj, dict):
        return None
    function = obj.get("function")
    if isinstance(function, dict):  # {"type": "function", "function": {...}}
        obj = function
    name = obj.get("name") or obj.get("tool") or obj.get("tool_name")
    if isinstance(name, str) and name and (tagged or any(k in obj for k in ARGUMENT_KEYS)):
        args: JSON = next((obj[k] for k in ARGUMENT_KEYS if k in obj), {})
        if isinstance(args, str):
            args = parse_arguments(args)
        return ToolCall(id=f"text_call_{i}", name=name, arguments=args if isinstance(args, dict) else {"_raw": str(args)})
    if isinstance(obj.get("action"), str):
        return ToolCall(id=f"text_call_{i}", name="computer", arguments=dict(obj))
    return None


def _parse(blob: str, start: int, tagged: bool = True) -> list[ToolCall] | None:
    try:
        data = json.loads(blob)
    except json.JSONDecodeError:
        return None
    items = data if isinstance(data, list) else [data]
    calls = [c for n, item in enumerate(items) if (c := _as_call(item, start + n, tagged)) is not None]
    return calls if calls and len(calls) == len(items) else None  # every item a call


def calls_in_text(text: str) -> tuple[str, list[ToolCall]]:
    """(the text without the calls, the calls found in it)."""
    if "<tool_call>" in text:
        calls: list[ToolCall] = []
        for blob in TAGGED.findall(text):
            parsed = _parse(blob, len(calls))
            calls.extend(parsed or [ToolCall(id=f"text_call_{len(calls)}", name="unparsed_tool_call", arguments={"_raw": blob})])
        return TAGGED.sub("", text).strip(), calls
    for fenced in FENCED.finditer(text):
        parsed = _parse(fenced.group(1).strip(), 0, tagged=False)
        if parsed:
            return (text[: fenced.start()] + text[fenced.end() :]).strip(), parsed
    decoder = json.JSONDecoder()
    pos = 0
    while match := OPENER.search(text, pos):  # a JSON object after some prose
        try:
            data, end = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            pos = match.start() + 1
            continue
        parsed = _parse(json.dumps(data), 0, tagged=False)
        if parsed:
            return (text[: match.start()] + text[end:]).strip(), parsed
        pos = end  # JSON that is not a call: an object nested inside it is data, not a call either
    return text, []
