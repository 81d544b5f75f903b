"""Low-level input actions, the one currency between the agent's tools, OSWorld's pyautogui
scripts and a desktop's input."""

from typing import Any

# Low-level input actions, in screen pixels. The computer tool maps model actions onto these.
#   {"kind": "move", "x", "y"}
#   {"kind": "click", "x", "y", "button": 1|2|3, "count": 1..3}   (x/y optional: current position)
#   {"kind": "down"|"up", "button"}
#   {"kind": "drag", "x0", "y0", "x", "y"}
#   {"kind": "scroll", "x", "y", "direction": up|down|left|right, "amount": n}
#   {"kind": "key", "keys": "ctrl+s"}            (xdotool-style chord, space-separated sequence)
#   {"kind": "key_down"|"key_up", "keys": "shift"} (press / release a chord's keys and leave them so:
#                                                  modifiers held through a click, Claude's hold_key)
#   {"kind": "type", "text": "..."}
Action = dict[str, Any]
