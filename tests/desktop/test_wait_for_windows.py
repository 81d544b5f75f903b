"""``wait_for`` on a real desktop: a dialog's window appears and goes, and the app's own save is
what a ``changed`` wait sees (mousepad's Save As dialog and its write)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpworld.agent.tools.wait_for import WaitForTool
from mcpworld.env.local.environment import LocalEnvironment
from tests.helpers.desktops import make_task

pytestmark = pytest.mark.desktop


async def test_waits_for_a_dialog_to_open_and_close_and_for_the_save(tmp_path: Path) -> None:
    task = make_task(tmp_path, [{"launch": {"command": ["mousepad", "~/docs/notes.txt"], "window": "notes.txt"}}])
    with LocalEnvironment(1000, 1000) as env:
        env.reset(task, tmp_path / "ep")
        wait = WaitForTool(env, poll_s=0.1)
        assert (await wait.call({"window": "notes.txt"})).ok
        absent = await wait.call({"window": "^Save As$", "timeout": 0.5})
        assert not absent.ok and "no window matches '^Save As$' (open: " in absent.text and "notes.txt" in absent.text
        env.act({"kind": "key", "keys": "ctrl+End"})
        env.act({"kind": "type", "text": "beta\n"})
        env.act({"kind": "key", "keys": "ctrl+shift+s"})  # Save As: a dialog of its own
        opened = await wait.call({"window": "^Save As$", "timeout": 30})
        assert opened.ok, opened.text
        open_still = await wait.call({"window": "^Save As$", "gone": True, "timeout": 0.5})
        assert not open_still.ok and "is still open" in open_still.text
        env.act({"kind": "key", "keys": "ctrl+a"})
        env.act({"kind": "type", "text": str(env.resolve("~/docs/copy.txt")) + "\n"})
        saved = await wait.call(
            {"window": "^Save As$", "gone": True, "file": "~/docs/copy.txt", "changed": True, "contains": "beta", "timeout": 30}
        )
        assert saved.ok, saved.text
        assert env.read_file("~/docs/copy.txt").decode().endswith("alpha\nbeta\n")
        assert (await wait.call({"process": r"^mousepad .*notes\.txt", "timeout": 5})).ok
        env.act({"kind": "key", "keys": "ctrl+q"})
        assert (await wait.call({"process": "^mousepad", "gone": True, "window": "copy.txt", "timeout": 30})).ok


async def test_a_process_of_another_desktop_does_not_count(tmp_path: Path) -> None:
    """Two desktops at once: one's mousepad is not the other's (the pattern is never in a command line)."""
    task = make_task(tmp_path, [{"launch": {"command": ["mousepad", "~/docs/notes.txt"], "window": "notes.txt"}}])
    with LocalEnvironment(1000, 1000) as busy, LocalEnvironment(1000, 1000) as idle:
        busy.reset(task, tmp_path / "busy")
        idle.reset(make_task(tmp_path / "idle", []), tmp_path / "idle-ep")
        assert (await WaitForTool(busy).call({"process": "^mousepad", "timeout": 10})).ok
        missing = await WaitForTool(idle).call({"process": "^mousepad", "timeout": 0.5})
        assert not missing.ok and "no process of this desktop matches '^mousepad'" in missing.text


async def test_a_window_still_moving_is_not_there_yet(tmp_path: Path) -> None:
    """A window is awaited where it stays: one that the app (or the window manager) still moves
    after mapping it takes no clicks where its controls will be."""
    import threading
    import time

    from tests.desktop.x_client import bare_window

    with LocalEnvironment(1000, 1000) as env:
        env.reset(make_task(tmp_path, []), tmp_path / "ep")
        app, win = bare_window(env.display.name, "Moving Dialog", (10, 10, 200, 100))
        try:
            stop = time.monotonic() + 1.5

            def drift() -> None:  # moved every 50 ms for 1.5 s, then left where it is
                x = 10
                while time.monotonic() < stop:
                    x += 5
                    win.configure(x=x)
                    app.sync()
                    time.sleep(0.05)

            mover = threading.Thread(target=drift)
            mover.start()
            began = time.monotonic()
            placed = await WaitForTool(env, poll_s=0.2).call({"window": "^Moving Dialog$", "timeout": 10})
            mover.join()
            assert placed.ok, placed.text
            assert time.monotonic() - began >= 1.3  # not while it moved
        finally:
            app.close()


def test_the_in_process_window_rows_read_as_the_shell_listing(tmp_path: Path) -> None:
    """env=local reads the windows from its X server; docker and vm list them through the shell
    (Environment.window_rows): the same title and class, the same size (where a window is only ever
    compared with where it was a poll before: xdotool's position leaves out the frame's offset)."""
    import re

    from mcpworld.env.base import Environment

    task = make_task(tmp_path, [{"launch": {"command": ["mousepad", "~/docs/notes.txt"], "window": "notes.txt"}}])
    with LocalEnvironment(1000, 1000) as env:
        env.reset(task, tmp_path / "ep")
        native, listed = env.window_rows(), Environment.window_rows(env)
        assert [(t, c) for t, c, _ in native] == [(t, c) for t, c, _ in listed]
        assert any("notes.txt" in t and c == '"mousepad", "Mousepad"' for t, c, _ in native), native
        for (_, _, place), (_, _, shown) in zip(native, listed, strict=True):
            found = re.search(r"Position: (\d+),(\d+).*Geometry: (\d+)x(\d+)", shown)
            assert found, shown
            assert re.fullmatch(r"-?\d+,-?\d+ (\d+x\d+)", place).group(1) == "{}x{}".format(*found.groups()[2:])
