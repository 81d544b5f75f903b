"""A bare X client for desktop tests: a window of our own on a test desktop, made the way an app
makes one (mapped, titled, optionally speaking _NET_WM_PING and never answering it)."""

from __future__ import annotations

from typing import Any

from Xlib import X

from mcpworld.env.local.xconnection import open_display


def bare_window(
    display_name: str, title: str, geometry: tuple[int, int, int, int] = (0, 0, 80, 80), ping: bool = False
) -> tuple[Any, Any]:
    """(connection, window): close the connection to end the client."""
    conn = open_display(display_name)
    win = conn.screen().root.create_window(*geometry, 0, X.CopyFromParent)
    win.set_wm_name(title)
    if ping:
        win.set_wm_protocols([conn.intern_atom("_NET_WM_PING")])
    win.map()
    conn.sync()
    return conn, win
