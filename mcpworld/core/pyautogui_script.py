"""OSWorld's ``python -c "import pyautogui; pyautogui.hotkey('ctrl', 's'); time.sleep(0.5)"`` steps.

OSWorld tasks drive the VM's GUI from setup and postconfig ``execute`` steps with short pyautogui
scripts (mostly "save the document before grading"). pyautogui is not in our environments, and
running task-supplied code is not needed for it: the script is parsed (never executed) and each
call becomes one of our input actions. Only literal arguments and the calls below are understood;
anything else is reported by name so the task can be skipped with a reason.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass
from typing import Any

from mcpworld.core.actions import Action

PYTHON = re.compile(r"^(?:.*/)?python(?:3(?:\.\d+)?)?$")
BUTTONS = {"left": 1, "middle": 2, "right": 3, "primary": 1, "secondary": 3}
SUPPORTED = (
    "hotkey",
    "press",
    "typewrite",
    "write",
    "click",
    "doubleClick",
    "tripleClick",
    "rightClick",
    "moveTo",
    "scroll",
    "sleep",
    "mouseDown",
    "mouseUp",
)


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Raises:
    """Where the script raises under real pyautogui: it stops there, as it does on OSWorld's VM."""

    why: str


Step = Action | Pause | Raises


class Unsupported(ValueError):
    """The script does something we do not replay (named in the message)."""


def script_of(command: list[str] | str) -> str | None:
    """The pyautogui source of a ``python -c`` command, or None for any other command."""
    try:
        argv = shlex.split(command) if isinstance(command, str) else [str(c) for c in command]
    except ValueError:
        return None
    if len(argv) >= 3 and PYTHON.match(argv[0]) and argv[1] == "-c" and "pyautogui" in argv[2]:
        return argv[2]
    return None


def _literal(node: ast.AST, call: str) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise Unsupported(f"{call}() with a non-literal argument {ast.unparse(node)!r}") from None


def _keys(value: Any, call: str) -> list[str]:
    keys = value if isinstance(value, list) else [value]
    if not keys or not all(isinstance(k, str) and k for k in keys):
        raise Unsupported(f"{call}() needs key names, got {value!r}")
    return keys


def _point(args: list[Any], kw: dict[str, Any]) -> dict[str, Any]:
    x, y = ([*args, None, None])[:2] if args else (kw.get("x"), kw.get("y"))
    if isinstance(x, (tuple, list)):
        x, y = x
    return {} if x is None or y is None else {"x": float(x), "y": float(y)}


def _translate(name: str, args: list[Any], kw: dict[str, Any]) -> list[Step]:
    if name == "sleep":
        return [Pause(float(args[0] if args else kw.get("secs", 0)))]
    if name == "hotkey":
        if args and isinstance(args[0], (list, tuple)):  # pyautogui calls .lower() on each argument
            return [Raises(f"pyautogui.hotkey({args[0]!r}) raises AttributeError: a list is not a key")]
        return [{"kind": "key", "keys": "+".join(_keys(list(args), name))}]
    if name == "press":
        keys = _keys(args[0] if args else kw.get("keys"), name)
        return [{"kind": "key", "keys": k} for _ in range(int(kw.get("presses", 1))) for k in keys]
    if name in ("typewrite", "write"):
        message = args[0] if args else kw.get("message")
        if isinstance(message, str):
            return [{"kind": "type", "text": message}]
        return [{"kind": "key", "keys": k} for k in _keys(message, name)]
    if name == "moveTo":
        point = _point(list(args), kw)
        return [dict(kind="move", **point)] if point else []
    if name == "scroll":
        clicks = int(args[0] if args else kw.get("clicks", 0))
        point = _point(list(args[1:]), kw)
        return [dict(kind="scroll", direction="up" if clicks > 0 else "down", amount=abs(clicks), **point)]
    button = (
        "right"
        if name == "rightClick"
        else str(args[2] if name in ("mouseDown", "mouseUp") and len(args) > 2 else kw.get("button", "left"))
    )
    if button not in BUTTONS:
        raise Unsupported(f"{name}() with button {button!r}")
    if name in ("mouseDown", "mouseUp"):  # press or release where the pointer is, or after moving to x, y
        point = _point(list(args[:2]), kw)
        moved: list[Step] = [dict(kind="move", **point)] if point else []
        return [*moved, {"kind": "down" if name == "mouseDown" else "up", "button": BUTTONS[button]}]
    count = {"doubleClick": 2, "tripleClick": 3}.get(name, int(kw.get("clicks", 1)))
    return [dict(kind="click", button=BUTTONS[button], count=count, **_point(list(args), kw))]


def parse(source: str) -> list[Step]:
    """The input actions and pauses a pyautogui script performs, in order; Unsupported otherwise."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise Unsupported(f"the script is not valid Python ({exc.msg})") from None
    modules: dict[str, str] = {}
    steps: list[Step] = []
    for statement in tree.body:
        if isinstance(statement, ast.Import) and all(a.name in ("pyautogui", "time") for a in statement.names):
            modules.update({a.asname or a.name: a.name for a in statement.names})
            continue
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id in modules
        ):
            raise Unsupported(f"the statement {ast.unparse(statement)!r}")
        module, name = modules[call.func.value.id], call.func.attr
        if (module == "time") != (name == "sleep") or name not in SUPPORTED:
            raise Unsupported(f"{module}.{name}()")
        args = [_literal(a, name) for a in call.args]
        kw = {k.arg: _literal(k.value, name) for k in call.keywords if k.arg}
        steps.extend(_translate(name, args, kw))
        if steps and isinstance(steps[-1], Raises):
            break
    return steps
