"""Finding and activating top-level windows through EWMH (what the window manager publishes).

Two ways to name a window: ``find``/``wait`` take a regex searched in the title or the class (what
mcpworld's own launches and tests use); ``find_named``/``wait_named`` take a suite's window name the
way OSWorld's ``activate_window``/``close_window`` steps give it to ``wmctrl``: a case-insensitive
part of the title, or with ``strict`` the whole title exactly, or with ``by_class`` the WM_CLASS
(``instance.Class``) instead of the title. Names the suites' machines give windows that this
desktop shows under another name (``SUITE_NAMES``) match those windows too.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Collection

from Xlib import X
from Xlib import error as xerror
from Xlib.protocol import event as xevent

from mcpworld.env.local.xconnection import open_display
from mcpworld.env.window_rows import WindowRow, xprop_class

# (the suite machine's name, this desktop's name) of the same window: OSWorld's Ubuntu runs Google
# Chrome, titled "… - Google Chrome" with class google-chrome.Google-chrome; this desktop runs
# Debian's Chromium, titled "… - Chromium" with class chromium.Chromium (see conf/app/chromium.yaml).
SUITE_NAMES: tuple[tuple[str, str], ...] = (
    ("Google Chrome", "Chromium"),
    ("google-chrome", "chromium"),
    ("Google-chrome", "Chromium"),
)


def name_variants(name: str, strict: bool = False) -> list[str]:
    """``name`` and what it becomes with each suite name replaced by this desktop's (case-sensitively
    for a ``strict`` name, as wmctrl -F compares)."""
    variants = [name]
    for theirs, ours in SUITE_NAMES:
        flags = 0 if strict else re.I
        for known in list(variants):
            other = re.sub(re.escape(theirs), ours, known, flags=flags)
            if other not in variants:
                variants.append(other)
    return variants


def name_matches(name: str, title: str, cls: str, strict: bool = False, by_class: bool = False) -> bool:
    """Whether a window (``title``, ``cls`` as ``instance.Class``) answers to a suite's window name,
    as ``wmctrl -a`` (``-F`` for strict, ``-x`` for by_class) finds it."""
    text = cls if by_class else title
    return any(text == variant if strict else variant.lower() in text.lower() for variant in name_variants(name, strict))


class Windows:
    def __init__(self, display_name: str):
        self.d = open_display(display_name)
        self.root = self.d.screen().root
        self._client_list = self.d.intern_atom("_NET_CLIENT_LIST")
        self._active = self.d.intern_atom("_NET_ACTIVE_WINDOW")
        self._net_name = self.d.intern_atom("_NET_WM_NAME")
        self._utf8 = self.d.intern_atom("UTF8_STRING")
        self._pid = self.d.intern_atom("_NET_WM_PID")

    def restore_access_control(self) -> bool:
        """Access control back on when a client holding the cookie turned it off (``xhost +``): with it
        off any local user opens the display (docs/security.md). True when it was off."""
        if self.d.list_hosts().mode == X.EnableAccess:
            return False
        self.d.set_access_control(X.EnableAccess)
        self.d.sync()
        return True

    def rows(self) -> list[WindowRow]:
        """Each managed window as ``wait_for`` reads it (env/window_rows.py): title, class as xprop
        prints it, and where it is (position on the screen and size)."""
        return [(title, xprop_class(cls), place) for _, title, cls, place in self._described(placed=True)]

    def _described(self, placed: bool = False) -> list[tuple[int, str, tuple[str, ...], str]]:
        """(window id, title, WM_CLASS strings, and with ``placed`` "x,y WxH") of each managed window."""
        prop = self.root.get_full_property(self._client_list, X.AnyPropertyType)
        out = []
        for wid in prop.value if prop else []:
            win = self.d.create_resource_object("window", wid)
            try:
                title_prop = win.get_full_property(self._net_name, self._utf8)
                title = title_prop.value.decode("utf-8", "replace") if title_prop else (win.get_wm_name() or "")
                cls = tuple(win.get_wm_class() or ())
                place = ""
                if placed:
                    size, at = win.get_geometry(), win.translate_coords(self.root, 0, 0)
                    place = f"{-at.x},{-at.y} {size.width}x{size.height}"
            except xerror.XError:  # gone meanwhile
                continue
            out.append((wid, str(title), cls, place))
        return out

    def list(self) -> list[tuple[int, str, str]]:
        """(window id, title, WM_CLASS joined by '.') of each managed window."""
        return [(wid, title, ".".join(cls)) for wid, title, cls, _ in self._described()]

    def find(self, pattern: str, ignore: Collection[int] = ()) -> int | None:
        """First window whose title or class matches the regex (case-insensitive), not in ``ignore``."""
        rx = re.compile(pattern, re.I)
        for wid, title, cls in self.list():
            if wid not in ignore and (rx.search(title) or rx.search(cls)):
                return wid
        return None

    def find_named(self, name: str, strict: bool = False, by_class: bool = False) -> int | None:
        """The first window a suite's step names (see ``name_matches``). A plain name that matches
        no window as wmctrl would is still tried as ``find``'s regex (what mcpworld's own steps meant)."""
        windows = self.list()
        for wid, title, cls in windows:
            if name_matches(name, title, cls, strict, by_class):
                return wid
        if strict or by_class:
            return None
        try:
            return self.find(name)
        except re.error:
            return None

    def wait(
        self, pattern: str, timeout_s: float, give_up: Callable[[], bool] | None = None, ignore: Collection[int] = ()
    ) -> int | None:
        """The first window matching ``pattern`` (and not in ``ignore``) within ``timeout_s``, or
        None (also as soon as ``give_up()`` is true, after one last look)."""
        return self._wait(lambda: self.find(pattern, ignore), timeout_s, give_up)

    def wait_named(self, name: str, timeout_s: float, strict: bool = False, by_class: bool = False) -> int | None:
        """``find_named`` within ``timeout_s``, or None."""
        return self._wait(lambda: self.find_named(name, strict, by_class), timeout_s)

    def _wait(self, look: Callable[[], int | None], timeout_s: float, give_up: Callable[[], bool] | None = None) -> int | None:
        deadline = time.monotonic() + timeout_s
        while True:
            stop = give_up is not None and give_up()
            wid = look()
            if wid is not None or stop or time.monotonic() >= deadline:
                return wid
            time.sleep(0.03)

    def pid(self, wid: int) -> int | None:
        """The process that owns the window (``_NET_WM_PID``, set by GTK/Qt/Chromium), or None."""
        try:
            prop = self.d.create_resource_object("window", wid).get_full_property(self._pid, X.AnyPropertyType)
        except xerror.XError:
            return None
        return int(prop.value[0]) if prop and len(prop.value) else None

    def activate(self, wid: int) -> None:
        win = self.d.create_resource_object("window", wid)
        ev = xevent.ClientMessage(window=win, client_type=self._active, data=(32, [2, X.CurrentTime, 0, 0, 0]))
        self.root.send_event(ev, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
        self.d.sync()

    def maximize(self, wid: int) -> None:
        """Ask the window manager to maximize the window (EWMH _NET_WM_STATE, both directions)."""
        win = self.d.create_resource_object("window", wid)
        state = self.d.intern_atom("_NET_WM_STATE")
        horz, vert = self.d.intern_atom("_NET_WM_STATE_MAXIMIZED_HORZ"), self.d.intern_atom("_NET_WM_STATE_MAXIMIZED_VERT")
        ev = xevent.ClientMessage(window=win, client_type=state, data=(32, [1, horz, vert, 2, 0]))  # 1: add
        self.root.send_event(ev, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
        self.d.sync()

    def close_window(self, wid: int) -> None:
        """Ask the window manager to close it politely (apps flush their config on close)."""
        win = self.d.create_resource_object("window", wid)
        atom = self.d.intern_atom("_NET_CLOSE_WINDOW")
        ev = xevent.ClientMessage(window=win, client_type=atom, data=(32, [X.CurrentTime, 2, 0, 0, 0]))
        self.root.send_event(ev, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
        self.d.sync()

    def responds(self, wid: int, timeout_s: float) -> bool:
        """True once the window's client answers an EWMH ``_NET_WM_PING``: its event loop runs and
        takes input (a window can be mapped long before that: a splash, a loading document).
        A client that does not speak the protocol counts as responding (nothing better to ask)."""
        win = self.d.create_resource_object("window", wid)
        protocols, ping = self.d.intern_atom("WM_PROTOCOLS"), self.d.intern_atom("_NET_WM_PING")
        try:
            if ping not in (win.get_wm_protocols() or []):
                return True
        except xerror.XError:
            return False
        # the answer is sent to the root with SubstructureNotify (GTK) or StructureNotify (Qt 5)
        self.root.change_attributes(event_mask=X.SubstructureNotifyMask | X.StructureNotifyMask)
        deadline = time.monotonic() + timeout_s
        stamp = 0
        try:
            while time.monotonic() < deadline:
                stamp += 1
                ev = xevent.ClientMessage(window=win, client_type=protocols, data=(32, [ping, stamp, wid, 0, 0]))
                gone = xerror.CatchError(xerror.BadWindow)  # closed meanwhile (a browser being killed)
                win.send_event(ev, event_mask=X.NoEventMask, onerror=gone)
                self.d.sync()
                if gone.get_error():
                    return False
                answer_by = time.monotonic() + 0.25
                while time.monotonic() < min(answer_by, deadline):
                    while self.d.pending_events():
                        got = self.d.next_event()
                        if (
                            got.type == X.ClientMessage
                            and got.client_type == protocols
                            and got.data[1][0] == ping
                            and got.data[1][2] == wid
                        ):
                            return True
                    time.sleep(0.005)
            return False
        finally:
            self.root.change_attributes(event_mask=X.NoEventMask)

    def active(self) -> int | None:
        prop = self.root.get_full_property(self._active, X.AnyPropertyType)
        return int(prop.value[0]) if prop and len(prop.value) else None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.d.close()
