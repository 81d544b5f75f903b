"""Our input actions as the pyautogui code a suite's VM runs: OSWorld's and WAA's harnesses drive
their VMs by sending ``python -c "import pyautogui; …"`` to the VM server's ``/execute``, so
``env=vm`` sends every action that way too (the VM's own pyautogui does the input).

Text: ``pyautogui.write`` types printable ASCII, tab and newline, and silently skips every other
character ("café Ünïcode 日本 ok" arrived as "caf ncode  ok"). Text with any other character goes
another way, chosen by the VM:

- OSWorld's Ubuntu VM (X11): ``TYPE_X11``, run by the VM's Python with python-xlib (which its
  pyautogui is built on). Each character its keymap lacks is lent a keycode that has no keysym (its
  keysym at both shift levels, so case survives), pressed through XTest, and left mapped, so an app
  that reads the keymap late still reads that character; the keycodes lent are kept on the root
  window (``_MCPWORLD_LENT_KEYCODES``) and lent again, least recently used first, when no free one
  is left. Everything else still goes through ``pyautogui.write``. No clipboard is touched, so a
  terminal takes it as any window does.
- WAA's Windows VM: the clipboard, as OSWorld's own harness types (``pyperclip.copy`` then
  ``ctrl+v``); the clipboard then holds the text.

A character that cannot be typed (a control character, a keymap with no keycode to lend, a VM without
python-xlib or pyperclip) fails the action with the reason, never a silent loss.
"""

from __future__ import annotations

import unicodedata

from mcpworld.core.actions import Action
from mcpworld.core.errors import UserError

# OSWorld's PythonController prefix (pkgs_prefix): what every command it sends starts with
PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "
BUTTONS = {1: "left", 2: "middle", 3: "right"}
# xdotool / X keysym names (what our actions carry) → pyautogui's key names
KEYS = {
    "return": "enter",
    "kp_enter": "enter",
    "escape": "esc",
    "backspace": "backspace",
    "prior": "pageup",
    "next": "pagedown",
    "page_up": "pageup",
    "page_down": "pagedown",
    "control_l": "ctrlleft",
    "control_r": "ctrlright",
    "control": "ctrl",
    "shift_l": "shiftleft",
    "shift_r": "shiftright",
    "alt_l": "altleft",
    "alt_r": "altright",
    "super_l": "winleft",
    "super_r": "winright",
    "super": "win",
    "meta": "win",
    "cmd": "win",
    "command": "win",
    "caps_lock": "capslock",
    "num_lock": "numlock",
    "print": "printscreen",
    "menu": "apps",
    "minus": "-",
    "plus": "+",
    "equal": "=",
    "comma": ",",
    "period": ".",
    "slash": "/",
    "backslash": "\\",
    "semicolon": ";",
    "apostrophe": "'",
    "grave": "`",
    "bracketleft": "[",
    "bracketright": "]",
    "iso_level3_shift": "altright",
    "delete": "delete",
    "insert": "insert",
    "arrowup": "up",
    "arrowdown": "down",
    "arrowleft": "left",
    "arrowright": "right",
}


def key_name(name: str) -> str:
    return KEYS.get(name.lower(), name if len(name) == 1 else name.lower())


def _chord(chord: str) -> list[str]:
    return [key_name(k) for k in chord.split("+") if k]


def _at(action: Action) -> str:
    return f"{int(action['x'])}, {int(action['y'])}" if action.get("x") is not None else ""


def pyautogui_code(action: Action, vm_kind: str = "osworld") -> str:
    """One action as pyautogui statements (without the prefix) for a VM of ``vm_kind``."""
    kind = action["kind"]
    if kind == "move":
        return f"pyautogui.moveTo({_at(action)})"
    if kind == "click":
        at = _at(action)
        return (
            f"pyautogui.click({at + ', ' if at else ''}clicks={int(action.get('count', 1))}, "
            f"button={BUTTONS[int(action.get('button', 1))]!r})"
        )
    if kind in ("down", "up"):
        call = "mouseDown" if kind == "down" else "mouseUp"
        return f"pyautogui.{call}(button={BUTTONS[int(action.get('button', 1))]!r})"
    if kind == "drag":
        return (
            f"pyautogui.moveTo({int(action['x0'])}, {int(action['y0'])}); "
            f"pyautogui.dragTo({int(action['x'])}, {int(action['y'])}, duration=0.5, button='left')"
        )
    if kind == "scroll":
        amount = int(action.get("amount", 1))
        at = _at(action)
        where = f", x={int(action['x'])}, y={int(action['y'])}" if at else ""
        direction = action.get("direction", "down")
        if direction in ("left", "right"):
            return f"pyautogui.hscroll({amount if direction == 'right' else -amount}{where})"
        return f"pyautogui.scroll({amount if direction == 'up' else -amount}{where})"
    if kind == "key":
        return "; ".join(
            f"pyautogui.hotkey({', '.join(repr(k) for k in _chord(chord))})" for chord in str(action["keys"]).split()
        )
    if kind in ("key_down", "key_up"):
        call = "keyDown" if kind == "key_down" else "keyUp"
        keys = _chord(str(action["keys"]))
        return "; ".join(f"pyautogui.{call}({k!r})" for k in (keys if kind == "key_down" else reversed(keys)))
    if kind == "type":
        return type_code(str(action["text"]), vm_kind)
    raise UserError(f"env=vm cannot send a {kind!r} action to the VM")


# what pyautogui.write types on every platform (its keyboard mapping: printable ASCII, tab, newlines)
WRITABLE = frozenset(chr(c) for c in range(0x20, 0x7F)) | {"\t", "\n", "\r"}
MAX_TEXT = 100_000  # one /execute command line holds it (an argument's limit is 128 KiB)

# Runs on OSWorld's VM after PREFIX, with RUNS = [(writable?, text), …]: see the module's docstring.
TYPE_X11 = """
from Xlib import X, Xatom, display as _xdisplay
from Xlib.ext import xtest as _xtest
_d = _xdisplay.Display()
_root = _d.screen().root
_atom = _d.intern_atom('_MCPWORLD_LENT_KEYCODES')
_first = _d.display.info.min_keycode
_map = [list(s) for s in _d.get_keyboard_mapping(_first, _d.display.info.max_keycode - _first + 1)]
_prop = _root.get_full_property(_atom, X.AnyPropertyType)
_lent = [int(c) for c in (_prop.value if _prop else [])]
_free = [_first + i for i in range(len(_map) - 1, -1, -1) if not any(_map[i])]
_shift = _d.keysym_to_keycode(0xffe1)
def _keysym(c):
    o = ord(c)
    return o if 0x20 <= o <= 0x7e or 0xa0 <= o <= 0xff else 0x01000000 | o
def _type(c):
    ks = _keysym(c)
    code = level = None
    for i, syms in enumerate(_map):
        if ks in syms[:2]:
            code, level = _first + i, syms[:2].index(ks)
            break
    if code is None:
        if _free:
            code = _free.pop(0)
        elif _lent:
            code = _lent.pop(0)
            time.sleep(0.05)  # its last character has been read before it means another
        else:
            raise SystemExit('cannot type %r: the keymap has no keycode free to lend it' % c)
        _d.change_keyboard_mapping(code, [(ks, ks)])
        _d.sync()
        _map[code - _first] = [ks, ks]
        level = 0
        time.sleep(0.02)  # clients see the MappingNotify before the key
        _lent.append(code)
    elif code in _lent:  # lent before: now the most recently used
        _lent.remove(code)
        _lent.append(code)
    if level:
        _xtest.fake_input(_d, X.KeyPress, _shift)
    _xtest.fake_input(_d, X.KeyPress, code)
    _xtest.fake_input(_d, X.KeyRelease, code)
    if level:
        _xtest.fake_input(_d, X.KeyRelease, _shift)
    _d.sync()
try:
    for _writable, _text in RUNS:
        if _writable:
            pyautogui.write(_text)
        else:
            for _c in _text:
                _type(_c)
finally:
    _root.change_property(_atom, Xatom.INTEGER, 32, _lent)
    _d.sync()
"""


def _runs(text: str) -> list[tuple[bool, str]]:
    """``text`` cut where it changes between what pyautogui writes and what it skips."""
    runs: list[tuple[bool, str]] = []
    for char in text:
        writable = char in WRITABLE
        if runs and runs[-1][0] == writable:
            runs[-1] = (writable, runs[-1][1] + char)
        else:
            runs.append((writable, char))
    return runs


def type_code(text: str, vm_kind: str = "osworld") -> str:
    """Statements that type ``text`` whole on a VM of ``vm_kind``; UserError for what no key can give."""
    if len(text) > MAX_TEXT:
        raise UserError(f"env=vm types at most {MAX_TEXT} characters in one action, got {len(text)}")
    controls = sorted({c for c in text if c not in WRITABLE and unicodedata.category(c) in ("Cc", "Cs")})
    if controls:
        names = ", ".join(f"U+{ord(c):04X}" for c in controls)
        raise UserError(f"cannot type the control character(s) {names}: no key gives them (use the key action)")
    if all(c in WRITABLE for c in text):
        return f"pyautogui.write({text!r})"
    if vm_kind == "waa":  # Windows: the clipboard, as OSWorld's own harness types
        return f"import pyperclip; pyperclip.copy({text!r}); pyautogui.hotkey('ctrl', 'v')"
    return f"RUNS = {_runs(text)!r}\n" + TYPE_X11
