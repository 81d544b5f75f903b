"""MLflow stores for tests: a real tracking server on a sqlite file, and a small job logged into one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from mcpworld.core.result import EpisodeResult

RESOLUTIONS = ("square", "rect")  # the two episodes of log_two_episodes, one per resolution


def start_mlflow_server(db: Path, port: int) -> subprocess.Popen:
    """A real server on ``db``; the artifacts jobs send it (``mlflow-artifacts:/``) go next to it."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            f"sqlite:///{db}",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--artifacts-destination",
            str(db.parent / "mlartifacts"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
    )
    return answering(proc, port)


def answering(proc: subprocess.Popen, port: int) -> subprocess.Popen:
    """``proc``, an MLflow server started on ``port``, once it answers /health (the test fails after 90 s)."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    pytest.fail("mlflow server did not answer /health within 90 s")


def log_two_episodes(tmp_path: Path) -> tuple[str, str]:
    """A job of two episodes, one per resolution, logged with their traces as a run logs them;
    the store's URI and the experiment's id."""
    from mcpworld.telemetry.tracking.keys import JOB_DIR
    from mcpworld.telemetry.tracking.logger import MlflowLogger

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    logger = MlflowLogger(uri, str(tmp_path / "art"), "filter")
    job_dir = tmp_path / "job"
    logger.start_job("job", {"model": "oracle"}, {JOB_DIR: str(job_dir)})
    start = time.time() - 60
    for n, resolution in enumerate(RESOLUTIONS):
        labels = {"model": "oracle", "provider": "oracle", "resolution": resolution, "modality": "gui", "env": "local"}
        result = EpisodeResult(
            task_id="mousepad/create_todo", app="mousepad", attempt=n, status="success", score=1.0, duration_s=2.0, labels=labels
        )
        folder = job_dir / "episodes" / result.task_id / str(n)
        folder.mkdir(parents=True)
        events: list[dict[str, Any]] = [
            {"type": "episode_start", "t": 0.0, "ts": start, "task": result.task_id, "attempt": n, **labels},
            {"type": "episode_end", "t": 2.0, "ts": start + 2.0, "status": "success", "score": 1.0},
        ]
        (folder / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
        result.write(folder / "result.json")
        logger.log_episode(result, folder)
    assert logger.finish_job({}, [], job_dir=job_dir) == []
    return uri, logger.experiment_id or ""
