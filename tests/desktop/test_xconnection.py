"""A core X error on our connections is a catchable XError, not a crash inside python-xlib."""

from __future__ import annotations

import os

import pytest
from Xlib import error as xerror

from mcpworld.env.display import VirtualDisplay
from mcpworld.env.xconnection import open_display

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
