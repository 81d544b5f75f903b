"""Claude's computer-tool actions on a real X display: a shift-click is a click with Shift down, a
ctrl-scroll a wheel click with Control down, and hold_key keeps the key down for its duration, as
an X client on the display sees them (its events' own state and server timestamps, no sleeps)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from Xlib import XK, X

from mcpworld.agent.tools.computer import ComputerTool, CoordinateMap
from mcpworld.core.task import Task
from mcpworld.env.local.environment import LocalEnvironment
from mcpworld.env.local.xconnection import open_display

pytestmark = pytest.mark.desktop


class EventWindow:
    """A window over the whole screen, on top and focused, that records what it receives."""

    MASK = X.KeyPressMask | X.KeyReleaseMask | X.ButtonPressMask | X.ButtonReleaseMask

    def __init__(self, display_name: str, width: int, height: int):
        self.d = open_display(display_name)
        root = self.d.screen().root
        self.window = root.create_window(
            0, 0, width, height, 0, self.d.screen().root_depth, override_redirect=True, event_mask=self.MASK
        )
        self.window.map()
        self.window.set_input_focus(X.RevertToParent, X.CurrentTime)
        self.d.sync()
        self.events: list[tuple[str, int, int, int]] = []  # (kind, detail: keysym or button, state, server ms)

    def read(self, until: int, timeout_s: float = 5.0) -> list[tuple[str, int, int, int]]:
        """Events until ``until`` of them have arrived (or the timeout)."""
        deadline = time.monotonic() + timeout_s
        while len(self.events) < until and time.monotonic() < deadline:
            if not self.d.pending_events():
                time.sleep(0.005)
                continue
            e = self.d.next_event()
            if e.type in (X.KeyPress, X.KeyRelease):
                kind = "key_press" if e.type == X.KeyPress else "key_release"
                self.events.append((kind, self.d.keycode_to_keysym(e.detail, 0), e.state, e.time))
            elif e.type in (X.ButtonPress, X.ButtonRelease):
                kind = "button_press" if e.type == X.ButtonPress else "button_release"
                self.events.append((kind, e.detail, e.state, e.time))
        return self.events

    def close(self) -> None:
        self.d.close()


@pytest.fixture
def desktop(tmp_path: Path):
    task = Task(
        id="t/claude_input",
        app="none",
        instruction="test",
        dir=tmp_path / "task",
        source=tmp_path / "task" / "task.yaml",
        context=[],
        setup=[],
    )
    with LocalEnvironment(1024, 768) as env:
        env.reset(task, tmp_path / "ep")
        window = EventWindow(env.display.name, env.width, env.height)
        try:
            yield env, window
        finally:
            window.close()
            env.end_episode()


SHIFT = XK.string_to_keysym("Shift_L")
CONTROL = XK.string_to_keysym("Control_L")


async def test_shift_click_ctrl_scroll_and_hold_key_reach_the_display(desktop) -> None:
    env, window = desktop
    computer = ComputerTool(env, CoordinateMap("pixels", (1024, 768)), version="computer_20250124")

    await computer.call({"action": "left_click", "coordinate": [300, 200], "text": "shift"})
    events = window.read(4)
    assert [(kind, detail) for kind, detail, _, _ in events] == [
        ("key_press", SHIFT),
        ("button_press", 1),
        ("button_release", 1),
        ("key_release", SHIFT),
    ]
    assert events[1][2] & X.ShiftMask  # the click itself carries Shift
    assert env.cursor_position() == (300, 200)

    await computer.call(
        {"action": "scroll", "coordinate": [10, 10], "scroll_direction": "down", "scroll_amount": 2, "text": "ctrl"}
    )
    wheel = window.read(10)[4:]
    assert [(kind, detail) for kind, detail, _, _ in wheel] == [
        ("key_press", CONTROL),
        ("button_press", 5),
        ("button_release", 5),
        ("button_press", 5),
        ("button_release", 5),
        ("key_release", CONTROL),
    ]
    assert all(state & X.ControlMask for kind, _, state, _ in wheel if kind == "button_press")

    await computer.call({"action": "hold_key", "text": "shift", "duration": 0.5})
    held = window.read(12)[10:]
    assert [(kind, detail) for kind, detail, _, _ in held] == [("key_press", SHIFT), ("key_release", SHIFT)]
    assert held[1][3] - held[0][3] >= 450  # the X server's own clock: held for the duration

    await computer.call({"action": "left_click", "coordinate": [50, 50]})  # and released: a plain click is plain
    plain = window.read(14)[12:]
    assert [kind for kind, *_ in plain] == ["button_press", "button_release"]
    assert not plain[0][2] & (X.ShiftMask | X.ControlMask)
