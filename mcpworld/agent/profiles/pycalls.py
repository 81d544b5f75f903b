"""Python-style call lists in a reply's text — ``[click(x=1, y=2), done(status="DONE")]`` — read safely.

Families that were taught to answer with a call list (Gemma 3's documented function calling) need
their calls read from the text. Reading goes through ``ast`` and accepts literals only (strings,
numbers, lists, dicts, True/False/None and the JSON spellings true/false/null): nothing is ever
evaluated, so a reply cannot run code. Text that is not a call list stays text.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from mcpworld.agent.providers.base import ToolCall

# ```tool_code / ```python / bare ``` fences: the calls may come inside one (Google's agent guides)
FENCE = re.compile(r"```[ \t]*(?:tool_code|python|py|tool_call)?[ \t]*\n?(.*?)```", re.S)
LIST_START = re.compile(r"\[\s*[A-Za-z_][\w.]*\s*\(")
JSON_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


class NotLiteral(ValueError):
    """An argument that is not a literal (a variable, an expression, a call)."""


def literal(node: ast.AST) -> Any:
    """The value of a literal expression; NotLiteral for anything else (never evaluated)."""
    if isinstance(node, ast.Constant) and not isinstance(node.value, bytes):
        return node.value
    if isinstance(node, ast.Name) and node.id in JSON_NAMES:
        return JSON_NAMES[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise NotLiteral("**unpacking in a dict")
        return {literal(k): literal(v) for k, v in zip(node.keys, node.values, strict=True) if k is not None}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = literal(node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    raise NotLiteral(f"not a literal: {ast.dump(node)[:80]}")


def _name(func: ast.AST) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):  # default_api.click(...) → click
        return func.attr
    return None


def _calls(node: ast.AST) -> list[ast.Call] | None:
    """The calls an expression is made of: a list/tuple of calls, one call, or print(call)."""
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_unprint(e) for e in node.elts]
        return items if items and all(isinstance(e, ast.Call) for e in items) else None  # type: ignore[return-value]
    node = _unprint(node)
    return [node] if isinstance(node, ast.Call) else None


def _unprint(node: ast.AST) -> ast.AST:
    if isinstance(node, ast.Call) and _name(node.func) == "print" and len(node.args) == 1 and isinstance(node.args[0], ast.Call):
        return node.args[0]
    return node


def _parse(source: str) -> list[ast.Call] | None:
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return None
    return _calls(tree.body)


def _to_tool_call(call: ast.Call, source: str, index: int) -> ToolCall:
    name = _name(call.func) or "unparsed_call"
    cid = f"pycall_{index}"
    try:
        if call.args:
            raise NotLiteral("positional arguments: write name=value")
        args = {kw.arg: literal(kw.value) for kw in call.keywords if kw.arg is not None}
        if len(args) != len(call.keywords):
            raise NotLiteral("**unpacking in a call")
    except NotLiteral:
        segment = ast.get_source_segment(source, call) or source
        return ToolCall(id=cid, name=name, arguments={"_raw": segment})
    return ToolCall(id=cid, name=name, arguments=args)


def _candidates(text: str) -> list[str]:
    """Where a call list may be: fenced blocks first, then the whole text, then each ``[name(`` on."""
    found = [m.group(1) for m in FENCE.finditer(text)]
    found.append(text)
    for m in LIST_START.finditer(text):
        tail = text[m.start() :]
        found += [tail[: end + 1] for end in (i for i, ch in enumerate(tail) if ch == "]")]
    return found


def calls_in_text(text: str) -> list[ToolCall] | None:
    """The calls written in ``text`` as a Python call list (or one call), or None when there are none."""
    for candidate in _candidates(text):
        calls = _parse(candidate)
        if calls:
            source = candidate.strip()
            return [_to_tool_call(c, source, i) for i, c in enumerate(calls)]
    return None


def py_literal(value: object) -> str:
    """A value written as a Python literal (strings double-quoted, as the documented examples are)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(py_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value), ensure_ascii=False)


def render_calls(calls: list[ToolCall]) -> str:
    """Calls written back as a call list, for replaying a turn whose text did not carry them."""
    return (
        "["
        + ", ".join(f"{c.name}(" + ", ".join(f"{k}={py_literal(v)}" for k, v in c.arguments.items()) + ")" for c in calls)
        + "]"
    )
