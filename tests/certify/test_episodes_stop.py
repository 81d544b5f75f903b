"""An interrupted certify stops its running job the way the job stops itself, never by SIGKILL (a
killed job leaves its desktops running until another run reaps them)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading

import pytest

from mcpworld.certify import episodes


def test_ctrl_c_reaches_the_job_as_sigterm_and_its_clean_stop_is_awaited(tmp_path, monkeypatch):
    stopped = tmp_path / "stopped"
    job = f"trap 'sleep 0.5; echo clean > {stopped}; exit 143' TERM; while :; do sleep 0.1; done"
    real_popen = subprocess.Popen
    monkeypatch.setattr(episodes.subprocess, "Popen", lambda argv, **kw: real_popen(["bash", "-c", job], **kw))
    threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()  # Ctrl-C to certify alone
    with pytest.raises(KeyboardInterrupt):
        episodes.run_job([], tmp_path)
    assert stopped.read_text() == "clean\n"


def test_a_job_that_ignores_the_stop_is_killed_after_the_grace(tmp_path):
    proc = subprocess.Popen(["bash", "-c", "trap '' TERM; while :; do sleep 0.1; done"])
    episodes.stop_job(proc, grace_s=0.5)
    assert proc.returncode == -signal.SIGKILL
