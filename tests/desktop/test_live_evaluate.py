"""/evaluate on a live desktop: the service's verdict is the in-process judge's for the same state,
with getters that read the running desktop (Chromium over DevTools, the accessibility tree, the
active window), and ``server --live`` serves another harness that drives the desktop itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import pytest

from mcpworld.apps.catalog import programs
from mcpworld.env.local.environment import LocalEnvironment
from mcpworld.evaluation.client import EvaluationClient
from mcpworld.evaluation.live import LiveDesktop
from mcpworld.evaluation.registry import get_getter
from mcpworld.evaluation.server import make_live_server
from tests.fakes.file_server import serve_folder
from tests.helpers.live_evaluate import MOUSEPAD_TASK, TOKEN, TYPED, same_verdict

pytestmark = pytest.mark.desktop


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    (root / "a.html").write_text("<title>Page A</title><p>alpha</p><a href='b.html?q=cats'>to b</a>")
    (root / "b.html").write_text("<title>Page B</title><p>bravo</p>")
    with serve_folder(root) as url:
        yield url


@pytest.fixture
def served(tmp_path):
    """A live service over an env=local desktop, and that desktop (for the in-process judge)."""
    with LocalEnvironment(1000, 800, programs=programs()) as env:
        server = make_live_server(LiveDesktop(env, tmp_path / "served"), TOKEN)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield EvaluationClient(f"http://127.0.0.1:{server.server_address[1]}", TOKEN), env
        server.shutdown()
        server.server_close()


def until(check, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.3)


def test_chromium_tabs_over_devtools_grade_as_in_the_episode(served, site):
    client, env = served
    a, b = f"{site}/a.html", f"{site}/b.html?q=cats"
    task = {
        "id": "live-tabs",
        "instruction": "Open the link of page A in a new tab",
        "config": [
            {"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337", a]}},
            {"type": "launch", "parameters": {"command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]}},
        ],
        "evaluator": {
            "func": ["is_expected_tabs", "is_expected_active_tab"],
            "result": [{"type": "open_tabs_info"}, {"type": "active_tab_info"}],
            "expected": [
                {"type": "rule", "rules": {"type": "url", "urls": [a, b]}},
                {"type": "rule", "rules": {"type": "url", "url": b}},
            ],
        },
    }
    about = client.reset(task)
    assert about["task"] == "live-tabs" and about["display"].startswith(":")
    tabs = partial(get_getter("open_tabs_info"), env, {"type": "open_tabs_info"})
    assert until(lambda: [t["title"] for t in tabs() or []] == ["Page A"]), tabs()
    before = client.evaluate(task)
    assert before["score"] == 0.0 and before["success"] is False
    same_verdict(before, env, task, {"is_expected_tabs"})

    env.act({"kind": "key", "keys": "Tab"})  # the link, opened in a new foreground tab
    env.act({"kind": "key", "keys": "ctrl+shift+Return"})
    assert until(lambda: sorted(t["title"] for t in tabs() or []) == ["Page A", "Page B"]), tabs()
    after = client.evaluate(task)
    assert after["score"] == 1.0 and after["success"] is True
    same_verdict(after, env, task, {"is_expected_tabs", "is_expected_active_tab"})


def test_accessibility_tree_and_active_window_grade_as_in_the_episode(served):
    client, env = served
    client.reset(MOUSEPAD_TASK)
    before = client.evaluate(MOUSEPAD_TASK)
    assert [m["score"] for m in before["metrics"]] == [1.0, 0.0]  # Mousepad in front; nothing typed
    same_verdict(before, env, MOUSEPAD_TASK, {"check_include_exclude"})

    env.act({"kind": "type", "text": TYPED})
    after = until(lambda: (v := client.evaluate(MOUSEPAD_TASK))["score"] == 1.0 and v)
    assert after, client.evaluate(MOUSEPAD_TASK)
    same_verdict(after, env, MOUSEPAD_TASK, {"check_include_exclude"})


def test_server_live_serves_another_harness_that_drives_the_display(tmp_path):
    """``python -m mcpworld.evaluation.server --live --task``: the folder it prints holds the URL and
    the token; a harness types on its X display with xdotool and grades with the client's CLI."""
    task_file = tmp_path / "suite" / "live-mousepad.json"
    task_file.parent.mkdir()
    task_file.write_text(json.dumps(MOUSEPAD_TASK))
    folder = tmp_path / "served"
    env = {k: v for k, v in os.environ.items() if k != "MCPWORLD_EVAL_TOKEN"}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpworld.evaluation.server",
            "--live",
            "--task",
            str(task_file),
            "--port",
            "0",
            "--dir",
            str(folder),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        endpoint = folder / "endpoint.json"
        assert until(lambda: endpoint.is_file() or server.poll() is not None, timeout=180), "no endpoint.json"
        assert server.poll() is None, server.communicate()
        about = json.loads(endpoint.read_text())
        token = Path(about["token_file"]).read_text()
        assert about["url"].startswith("http://127.0.0.1:") and about["display"].startswith(":")

        def grade() -> dict:
            proc = subprocess.run(
                [sys.executable, "-m", "mcpworld.evaluation.client", str(folder), str(task_file)],
                capture_output=True,
                text=True,
                timeout=120,
                env=env,
            )
            assert proc.returncode == 0, proc.stderr
            assert token not in proc.stdout + proc.stderr
            return json.loads(proc.stdout)

        assert grade()["score"] == 0.0
        # the display admits only clients with its cookie: XAUTHORITY from endpoint.json where the server
        # writes it there, else from the desktop's log in the same folder
        xauthority = (
            about.get("xauthority") or json.loads((folder / "reset-001" / "logs" / "desktop.json").read_text())["xauthority"]
        )
        typed = subprocess.run(
            ["xdotool", "type", "--delay", "20", TYPED],
            env=dict(env, DISPLAY=about["display"], XAUTHORITY=xauthority),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert typed.returncode == 0, typed.stderr
        assert until(lambda: grade()["score"] == 1.0), grade()
        x_socket = Path(f"/tmp/.X11-unix/X{about['display'].lstrip(':')}")
        assert x_socket.exists()
    finally:
        server.send_signal(signal.SIGTERM)
        out, err = server.communicate(timeout=60)
    assert server.returncode == 0, err
    assert token not in out + err
    assert f"token and URL in {folder}" in out
    assert not x_socket.exists()  # the desktop stopped with the service
