"""An interrupted certify stops its running job the way the job stops itself, never by SIGKILL (a
killed job leaves its desktops running until another run reaps them)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest

from mcpworld.certify import episodes


def test_ctrl_c_reaches_the_job_as_sigterm_and_its_clean_stop_is_awaited(tmp_path, monkeypatch):
    stopped = tmp_path / "stopped"
    ready = tmp_path / "ready"
    job = f"trap 'sleep 0.5; echo clean > {stopped}; exit 143' TERM; touch {ready}; while :; do sleep 0.1; done"
    real_popen = subprocess.Popen
    monkeypatch.setattr(episodes.subprocess, "Popen", lambda argv, **kw: real_popen(["bash", "-c", job], **kw))

    def ctrl_c_to_certify_alone() -> None:
        deadline = time.monotonic() + 10
        while not ready.exists() and time.monotonic() < deadline:  # the job's trap is set
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=ctrl_c_to_certify_alone).start()
    with pytest.raises(KeyboardInterrupt):
        episodes.run_job([], tmp_path)
    assert stopped.read_text() == "clean\n"


def test_a_job_that_ignores_the_stop_is_killed_after_the_grace(tmp_path):
    ready = tmp_path / "ready"
    proc = subprocess.Popen(["bash", "-c", f"trap '' TERM; touch {ready}; while :; do sleep 0.1; done"])
    deadline = time.monotonic() + 10
    while not ready.exists() and time.monotonic() < deadline:  # its trap is set
        time.sleep(0.02)
    episodes.stop_job(proc, grace_s=0.5)
    assert proc.returncode == -signal.SIGKILL
