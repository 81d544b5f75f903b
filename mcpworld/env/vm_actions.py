"""Our input actions as the pyautogui code a suite's VM runs: OSWorld's and WAA's harnesses drive
their VMs by sending ``python -c "import pyautogui; …"`` to the VM server's ``/execute``, so
``env=vm`` sends every action that way too (the VM's own pyautogui does the input)."""

from __future__ import annotations

from mcpworld.core.actions import Action
from mcpworld.core.errors import UserError

# OSWorld's PythonController prefix (pkgs_prefix): what every command it sends starts with
PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "
BUTTONS = {1: "left", 2: "middle", 3: "right"}
# xdotool / X keysym names (what our actions carry) → pyautogui's key names
KEYS = {
    "return": "enter", "kp_enter": "enter", "escape": "esc", "backspace": "backspace", "prior": "pageup",
    "next": "pagedown", "page_up": "pageup", "page_down": "pagedown", "control_l": "ctrlleft",
    "control_r": "ctrlright", "control": "ctrl", "shift_l": "shiftleft", "shift_r": "shiftright",
    "alt_l": "altleft", "alt_r": "altright", "super_l": "winleft", "super_r": "winright", "super": "win",
    "meta": "win", "cmd": "win", "command": "win", "caps_lock": "capslock", "num_lock": "numlock",
    "print": "printscreen", "menu": "apps", "minus": "-", "plus": "+", "equal": "=", "comma": ",",
    "period": ".", "slash": "/", "backslash": "\\", "semicolon": ";", "apostrophe": "'", "grave": "`",
    "bracketleft": "[", "bracketright": "]", "iso_level3_shift": "altright", "delete": "delete",
    "insert": "insert", "arrowup": "up", "arrowdown": "down", "arrowleft": "left", "arrowright": "right",
}


def key_name(name: str) -> str:
    return KEYS.get(name.lower(), name if len(name) == 1 else name.lower())


def _chord(chord: str) -> list[str]:
    return [key_name(k) for k in chord.split("+") if k]


def _at(action: Action) -> str:
    return f"{int(action['x'])}, {int(action['y'])}" if action.get("x") is not None else ""


def pyautogui_code(action: Action) -> str:
    """One action as pyautogui statements (without the prefix)."""
    kind = action["kind"]
    if kind == "move":
        return f"pyautogui.moveTo({_at(action)})"
    if kind == "click":
        at = _at(action)
        return (f"pyautogui.click({at + ', ' if at else ''}clicks={int(action.get('count', 1))}, "
                f"button={BUTTONS[int(action.get('button', 1))]!r})")
    if kind in ("down", "up"):
        call = "mouseDown" if kind == "down" else "mouseUp"
        return f"pyautogui.{call}(button={BUTTONS[int(action.get('button', 1))]!r})"
    if kind == "drag":
        return (f"pyautogui.moveTo({int(action['x0'])}, {int(action['y0'])}); "
                f"pyautogui.dragTo({int(action['x'])}, {int(action['y'])}, duration=0.5, button='left')")
    if kind == "scroll":
        amount = int(action.get("amount", 1))
        at = _at(action)
        where = f", x={int(action['x'])}, y={int(action['y'])}" if at else ""
        direction = action.get("direction", "down")
        if direction in ("left", "right"):
            return f"pyautogui.hscroll({amount if direction == 'right' else -amount}{where})"
        return f"pyautogui.scroll({amount if direction == 'up' else -amount}{where})"
    if kind == "key":
        return "; ".join(f"pyautogui.hotkey({', '.join(repr(k) for k in _chord(chord))})"
                         for chord in str(action["keys"]).split())
    if kind in ("key_down", "key_up"):
        call = "keyDown" if kind == "key_down" else "keyUp"
        keys = _chord(str(action["keys"]))
        return "; ".join(f"pyautogui.{call}({k!r})" for k in (keys if kind == "key_down" else reversed(keys)))
    if kind == "type":
        return f"pyautogui.write({str(action['text'])!r})"
    raise UserError(f"env=vm cannot send a {kind!r} action to the VM")
