"""env.stage on real desktops (env=local): each episode after a worker's first is set up on its other
desktop while the one before runs, handed over whole, and its oracle still passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.desktop, pytest.mark.slow]


def test_a_job_with_staging_hands_each_worker_its_next_episode_set_up_on_its_other_desktop(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpworld",
            "provider=oracle",
            "task=[mousepad/append_line,mousepad/create_todo]",
            "attempts=2",
            "env.stage=true",
            "tracking=none",
            f"hydra.run.dir={tmp_path}/run",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    episodes = [
        tmp_path / "run/episodes" / t / str(a) for t in ("mousepad/append_line", "mousepad/create_todo") for a in range(2)
    ]
    results = [json.loads((e / "result.json").read_text()) for e in episodes]
    assert [r["status"] for r in results] == ["success"] * 4, [r["reason"] for r in results]
    assert results[0]["staged"] == {}  # the worker's first: nothing was staged for it
    for r in results[1:]:
        staged = r["staged"]
        assert staged["ready"] >= staged["began"] and staged["stage_s"] > 0, staged
        assert r["setup_s"] < 0.5  # handed over: its setup ran before it began
    displays = [json.loads((e / "logs/desktop.json").read_text())["display"] for e in episodes]
    assert displays[0] != displays[1] and displays[1] != displays[2]  # the worker's two desktops take turns
    # each staged desktop served its own episode: its app's log is in that episode's folder
    assert all(list((e / "logs").glob("*mousepad*.log")) for e in episodes)
    traces = [(e / "trace.jsonl").read_text() for e in episodes]
    assert all('"type": "staged"' in t for t in traces[1:]) and '"type": "staged"' not in traces[0]
