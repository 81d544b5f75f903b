"""The managed windows as rows (title, class, geometry), the form the oracle's ``wait_for`` matches.

Any desktop lists them through its shell (``LIST_WINDOWS``: EWMH's client list via xprop and xdotool,
which every desktop has, local, in the container or on a suite's VM); a desktop the harness reaches
in-process reads the same rows from its X server instead, without starting three programs a window
on every poll. The class reads as xprop prints WM_CLASS (``"xterm", "XTerm"``) either way.
"""

from __future__ import annotations

WindowRow = tuple[str, str, str]  # title, class, geometry (compared only with itself: placed yet?)

LIST_WINDOWS = (
    "for w in $(xprop -root _NET_CLIENT_LIST 2>/dev/null | grep -o '0x[0-9a-fA-F]*'); do "
    'printf \'%s\\t%s\\t%s\\n\' "$(xdotool getwindowname "$w" 2>/dev/null)" '
    '"$(xprop -id "$w" WM_CLASS 2>/dev/null | sed -n \'s/^[^=]*= //p\')" '
    "\"$(xdotool getwindowgeometry \"$w\" 2>/dev/null | tr '\\n' ' ')\"; done"
)


def parse(listing: str) -> list[WindowRow]:
    """Rows from ``LIST_WINDOWS``'s output (tab-separated, missing fields empty)."""
    rows = (([*line.split("\t"), "", ""])[:3] for line in listing.splitlines())
    return [(title, cls, geometry) for title, cls, geometry in rows]


def xprop_class(instance_and_class: tuple[str, ...]) -> str:
    """WM_CLASS as xprop prints it: each string quoted, comma-separated."""
    return ", ".join(f'"{part}"' for part in instance_and_class)
