"""A core X error on our connections is a catchable XError, not a crash inside python-xlib."""

from __future__ import annotations

import os

import pytest
from Xlib import error as xerror

from mcpworld.env.local.display import VirtualDisplay
from mcpworld.env.local.xconnection import open_display

pytestmark = pytest.mark.desktop


def test_bad_value_from_the_server_is_an_xerror(tmp_path):
    display = VirtualDisplay(200, 200, window_manager="", desktop_id=f"{tmp_path}/x")
    display.start(dict(os.environ))
    try:
        d = open_display(display.name)
        try:
            caught = xerror.CatchError()
            # a window 0 pixels wide: the server answers BadValue (core error 2)
            d.screen().root.create_window(0, 0, 0, 10, 0, 0, onerror=caught)
            d.sync()
            assert isinstance(caught.get_error(), xerror.BadValue)
            assert d.screen().root.get_geometry().width == 200  # the connection still works
        finally:
            d.close()
    finally:
        display.stop()


def test_a_window_closed_while_pinged_is_not_responding_and_prints_no_x_error(tmp_path, capfd):
    import threading
    import time

    from mcpworld.env.local.windows import Windows
    from tests.desktop.x_client import bare_window

    display = VirtualDisplay(200, 200, window_manager="", desktop_id=f"{tmp_path}/x")
    display.start(dict(os.environ))
    windows = Windows(display.name)
    # a client that speaks _NET_WM_PING but never answers (its event loop is stuck), then dies
    owner, win = bare_window(display.name, "Stuck", (0, 0, 50, 50), ping=True)
    try:
        closer = threading.Timer(0.6, lambda: (win.destroy(), owner.sync()))
        closer.start()
        began = time.monotonic()
        assert windows.responds(win.id, timeout_s=4.0) is False
        assert time.monotonic() - began < 2.5  # noticed the window gone, not pinged a dead one to the end
        closer.join()
        assert "X protocol error" not in capfd.readouterr().err
    finally:
        windows.d.close()
        owner.close()
        display.stop()
