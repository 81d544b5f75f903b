"""/evaluate on an env=docker desktop: the service runs with the harness and grades the container's
desktop through the Environment seam (the accessibility tree and the active window are read inside
the container), giving the in-process judge's verdict."""

from __future__ import annotations

import threading
import time

import pytest

from mcpworld.apps.catalog import programs
from mcpworld.env.docker import image as docker_image
from mcpworld.env.docker.environment import DockerEnvironment
from mcpworld.evaluation.client import EvaluationClient
from mcpworld.evaluation.live import LiveDesktop
from mcpworld.evaluation.server import make_live_server
from tests.helpers.live_evaluate import MOUSEPAD_TASK, TOKEN, TYPED, same_verdict

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_a_container_desktop_is_graded_live_as_in_the_episode(tmp_path):
    client = docker_image.engine()
    env = DockerEnvironment(1000, 800, image=docker_image.desktop_image(), client=client, programs=programs())
    server = make_live_server(LiveDesktop(env, tmp_path / "served", display_here=False), TOKEN)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        evaluator = EvaluationClient(f"http://127.0.0.1:{server.server_address[1]}", TOKEN)
        about = evaluator.reset(MOUSEPAD_TASK)
        assert about["task"] == "live-mousepad" and about["viewer_url"].startswith("http://127.0.0.1:")
        assert about["display"] is None  # the container's own, of no use on this host
        before = evaluator.evaluate(MOUSEPAD_TASK)
        assert [m["score"] for m in before["metrics"]] == [1.0, 0.0], before
        same_verdict(before, env, MOUSEPAD_TASK, {"check_include_exclude"})

        env.act({"kind": "type", "text": TYPED})
        deadline = time.monotonic() + 30
        while (after := evaluator.evaluate(MOUSEPAD_TASK))["score"] != 1.0 and time.monotonic() < deadline:
            time.sleep(0.3)
        assert after["score"] == 1.0, after
        same_verdict(after, env, MOUSEPAD_TASK, {"check_include_exclude"})
    finally:
        server.shutdown()
        server.server_close()
        env.close()
