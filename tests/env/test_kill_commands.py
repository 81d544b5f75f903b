"""pkill/killall steps: what they end, read as pkill and killall read it, and waited for until gone."""

from __future__ import annotations

import subprocess
import time

import pytest

from mcpworld.env.local.kill_commands import Target, await_gone, kill_target


@pytest.mark.parametrize(
    "argv, target",
    [
        (["pkill", "chrome"], Target("chrome")),
        (["pkill", "-f", "chrome"], Target("chrome", full=True)),
        (["pkill", "-9", "-x", "vlc"], Target("vlc", exact=True)),
        (["/usr/bin/killall", "-q", "vlc"], Target("vlc", exact=True)),
        (["pkill", "-u", "user", "--full", "code-server"], Target("code-server", full=True)),
        (["pkill", "--signal=STOP", "vlc"], None),  # pauses it: nothing to wait for
        (["pkill", "-0", "vlc"], None),
        (["pkill", "a", "b"], None),
        (["sleep", "1"], None),
    ],
)
def test_what_a_kill_command_ends(argv, target):
    assert kill_target(argv) == target


def test_await_gone_waits_for_a_process_that_takes_its_time_to_exit():
    proc = subprocess.Popen(
        ["bash", "-c", "trap 'sleep 1; exit 0' TERM; while :; do sleep 0.05; done", "lingering-mcpworld-test"]
    )
    try:
        time.sleep(0.3)  # its trap is set
        target = Target("lingering-mcpworld-test", full=True)
        proc.terminate()
        assert not await_gone(target, lambda: [proc.pid], timeout_s=0.2)  # still shutting down
        assert await_gone(target, lambda: [proc.pid] if proc.poll() is None else [], timeout_s=10)
        assert proc.poll() == 0
    finally:
        proc.kill()
        proc.wait()
