"""An app that writes what it holds back when it quits, as Chromium and Thunderbird do: its window
(titled by argv[2], _NET_WM_PID its own) takes WM_DELETE_WINDOW, goes away, and the process writes
argv[3] after ``argv[4]`` seconds and exits. With argv[4] ``never`` it ignores being asked to close.

    python slow_quit_app.py DISPLAY TITLE FILE SECONDS
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from Xlib import X, Xatom

from mcpworld.env.local.xconnection import open_display


def main(display_name: str, title: str, flushed: str, seconds: str) -> None:
    conn = open_display(display_name)
    win = conn.screen().root.create_window(0, 0, 80, 80, 0, X.CopyFromParent)
    win.set_wm_name(title)
    delete = conn.intern_atom("WM_DELETE_WINDOW")
    win.set_wm_protocols([delete])
    win.change_property(conn.intern_atom("_NET_WM_PID"), Xatom.CARDINAL, 32, [os.getpid()])
    win.map()
    conn.sync()
    while True:
        event = conn.next_event()
        if event.type == X.ClientMessage and event.data[1][0] == delete and seconds != "never":
            break
    win.destroy()
    conn.sync()
    time.sleep(float(seconds))
    Path(flushed).write_text("flushed")


if __name__ == "__main__":
    main(*sys.argv[1:5])
