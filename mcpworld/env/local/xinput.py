"""Keyboard and mouse through the XTest extension, in-process (no xdotool subprocess)."""

from __future__ import annotations

import contextlib
import time

from Xlib import XK, X
from Xlib.ext import xtest

from mcpworld.core.errors import UserError
from mcpworld.env.local.xconnection import open_display

# xdotool/Anthropic-style key names → X keysym names
KEY_ALIASES = {
    "ctrl": "Control_L",
    "control": "Control_L",
    "lctrl": "Control_L",
    "rctrl": "Control_R",
    "shift": "Shift_L",
    "alt": "Alt_L",
    "option": "Alt_L",
    "altgr": "ISO_Level3_Shift",
    "super": "Super_L",
    "win": "Super_L",
    "meta": "Super_L",
    "cmd": "Super_L",
    "command": "Super_L",
    "enter": "Return",
    "return": "Return",
    "esc": "Escape",
    "escape": "Escape",
    "backspace": "BackSpace",
    "del": "Delete",
    "delete": "Delete",
    "ins": "Insert",
    "insert": "Insert",
    "tab": "Tab",
    "space": "space",
    "pgup": "Prior",
    "pageup": "Prior",
    "page_up": "Prior",
    "pgdn": "Next",
    "pagedown": "Next",
    "page_down": "Next",
    "home": "Home",
    "end": "End",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "arrowup": "Up",
    "arrowdown": "Down",
    "arrowleft": "Left",
    "arrowright": "Right",
    "capslock": "Caps_Lock",
    "menu": "Menu",
    "print": "Print",
    "minus": "minus",
    "plus": "plus",
    "equal": "equal",
    "comma": "comma",
    "period": "period",
    "slash": "slash",
    "backslash": "backslash",
    "semicolon": "semicolon",
    "apostrophe": "apostrophe",
    # pyautogui's names (OSWorld setup scripts)
    "ctrlleft": "Control_L",
    "ctrlright": "Control_R",
    "shiftleft": "Shift_L",
    "shiftright": "Shift_R",
    "altleft": "Alt_L",
    "altright": "Alt_R",
    "winleft": "Super_L",
    "winright": "Super_R",
    "printscreen": "Print",
    "prtsc": "Print",
    "numlock": "Num_Lock",
}
SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}
SPECIAL_CHARS = {"\n": "Return", "\r": "Return", "\t": "Tab", " ": "space"}


def keysym_for(name: str) -> int:
    """Keysym of one key name: alias, X keysym name (any case), single character, F-keys."""
    alias = KEY_ALIASES.get(name.lower())
    if alias:
        return XK.string_to_keysym(alias)
    keysym = XK.string_to_keysym(name)
    if keysym == X.NoSymbol and len(name) > 1:
        for candidate in (name.capitalize(), name.upper(), name.lower()):
            keysym = XK.string_to_keysym(candidate)
            if keysym != X.NoSymbol:
                break
    if keysym == X.NoSymbol and len(name) == 1:
        keysym = char_keysym(name)
    if keysym == X.NoSymbol:
        raise UserError(f"unknown key name {name!r}")
    return keysym


def char_keysym(char: str) -> int:
    if char in SPECIAL_CHARS:
        return XK.string_to_keysym(SPECIAL_CHARS[char])
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code  # Latin-1 keysyms equal their code points
    return 0x01000000 | code  # Unicode keysym


class XInput:
    """Synthesises input on one display. Not thread-safe: one per episode thread."""

    def __init__(self, display_name: str, key_delay_s: float = 0.0):
        self.d = open_display(display_name)
        if not self.d.query_extension("XTEST"):
            raise RuntimeError(f"display {display_name} has no XTEST extension")
        self.root = self.d.screen().root
        self.key_delay_s = key_delay_s
        self._spares = self._find_spare_keycodes()  # keycodes with no keysym, lent to other characters
        self._lent: dict[int, tuple[int, float]] = {}  # keysym -> (keycode, last used)

    # --- mouse -----------------------------------------------------------------------------
    def move(self, x: int, y: int) -> None:
        xtest.fake_input(self.d, X.MotionNotify, x=int(x), y=int(y))
        self.d.sync()

    def button(self, button: int, press: bool) -> None:
        xtest.fake_input(self.d, X.ButtonPress if press else X.ButtonRelease, button)
        self.d.sync()

    def click(self, x: int | None, y: int | None, button: int = 1, count: int = 1) -> None:
        if x is not None and y is not None:
            self.move(x, y)
        for _ in range(count):
            xtest.fake_input(self.d, X.ButtonPress, button)
            xtest.fake_input(self.d, X.ButtonRelease, button)
        self.d.sync()

    def drag(self, x0: int, y0: int, x1: int, y1: int, steps: int = 10) -> None:
        self.move(x0, y0)
        self.button(1, True)
        for i in range(1, steps + 1):  # intermediate motion so toolkits see a drag gesture
            self.move(x0 + (x1 - x0) * i // steps, y0 + (y1 - y0) * i // steps)
            time.sleep(0.005)
        self.button(1, False)

    def scroll(self, direction: str, amount: int = 3, x: int | None = None, y: int | None = None) -> None:
        if direction not in SCROLL_BUTTONS:
            raise UserError(f"unknown scroll direction {direction!r}: use up, down, left or right")
        if x is not None and y is not None:
            self.move(x, y)
        self.click(None, None, SCROLL_BUTTONS[direction], max(1, int(amount)))

    def pointer(self) -> tuple[int, int]:
        reply = self.root.query_pointer()
        return reply.root_x, reply.root_y

    # --- keyboard --------------------------------------------------------------------------
    def key(self, chords: str) -> None:
        """Press chords like ``ctrl+s`` or a space-separated sequence ``ctrl+a Delete``."""
        for chord in chords.split():
            names = [n for n in chord.split("+") if n] or ["plus"]
            codes = [self._keycode(keysym_for(n)) for n in names]
            for code, shift in codes:
                if shift:
                    xtest.fake_input(self.d, X.KeyPress, self._shift)
                xtest.fake_input(self.d, X.KeyPress, code)
            for code, shift in reversed(codes):
                xtest.fake_input(self.d, X.KeyRelease, code)
                if shift:
                    xtest.fake_input(self.d, X.KeyRelease, self._shift)
            self.d.sync()

    def hold(self, chords: str, down: bool) -> None:
        """Press (``down``) or release the keys of ``shift``, ``ctrl+shift`` or ``ctrl shift`` and leave
        them so: a key held across other input (a shift-click) or for a while (Claude's hold_key).
        Keys are released in reverse order of pressing."""
        names = [n for n in chords.replace("+", " ").split() if n] or ["plus"]
        codes = [self._keycode(keysym_for(n))[0] for n in names]
        for code in codes if down else list(reversed(codes)):
            xtest.fake_input(self.d, X.KeyPress if down else X.KeyRelease, code)
        self.d.sync()

    def type(self, text: str) -> None:
        for char in text:
            code, shift = self._keycode(char_keysym(char))
            if shift:
                xtest.fake_input(self.d, X.KeyPress, self._shift)
            xtest.fake_input(self.d, X.KeyPress, code)
            xtest.fake_input(self.d, X.KeyRelease, code)
            if shift:
                xtest.fake_input(self.d, X.KeyRelease, self._shift)
            self.d.sync()
            if self.key_delay_s:
                time.sleep(self.key_delay_s)

    @property
    def _shift(self) -> int:
        return self.d.keysym_to_keycode(XK.XK_Shift_L)

    def _keycode(self, keysym: int) -> tuple[int, bool]:
        """(keycode, needs shift); characters missing from the keymap go on a spare keycode."""
        if keysym in self._lent:
            code = self._lent[keysym][0]
            self._lent[keysym] = (code, time.monotonic())
            return code, False
        for code, index in self.d.keysym_to_keycodes(keysym):
            if index in (0, 1) and code not in self._spares:
                return code, index == 1
        if not self._spares:
            raise UserError(f"cannot type keysym {keysym:#x}: the keymap has no spare keycode")
        in_use = {code for code, _ in self._lent.values()}
        free = [c for c in self._spares if c not in in_use]
        if free:
            code = free[0]
        else:  # re-lend the least recently used; clients may still be reading its old meaning
            victim = min(self._lent, key=lambda k: self._lent[k][1])
            code, last_used = self._lent.pop(victim)
            time.sleep(max(0.0, 0.05 - (time.monotonic() - last_used)))
        self.d.change_keyboard_mapping(code, [(keysym, keysym)])
        self.d.sync()
        time.sleep(0.01)  # clients must see the MappingNotify before the key event
        self._lent[keysym] = (code, time.monotonic())
        return code, False

    def _find_spare_keycodes(self) -> list[int]:
        first = self.d.display.info.min_keycode
        count = self.d.display.info.max_keycode - first + 1
        mapping = self.d.get_keyboard_mapping(first, count)
        return [first + offset for offset in range(count - 1, -1, -1) if not any(mapping[offset])]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.d.close()
