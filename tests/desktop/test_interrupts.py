"""Ctrl-C, SIGTERM and kill -9 in the middle of a run, then the same command again; a sweep whose
first job fails. Real Hydra, real desktops, real MLflow (sqlite)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.desktops import left_behind

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.desktop, pytest.mark.slow]
TASKS = "task=[mousepad/*,pcmanfm/*]"  # six episodes


def command(tmp_path: Path, *overrides: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mcpworld",
        TASKS,
        "concurrency=2",
        f"hydra.run.dir={tmp_path}/run",
        f"tracking.uri=sqlite:///{tmp_path}/mlflow.db",
        f"tracking.artifact_root={tmp_path}/artifacts",
        "tracking.experiment=interrupts",
        *overrides,
    ]


def interrupt_after(cmd: list[str], episodes: int, sig: int) -> tuple[int, str]:
    """Start ``cmd`` as a terminal would (its own process group), signal the group after
    ``episodes`` progress lines, return its exit status and output."""
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.strip().startswith(f"[{episodes}/"):
            os.killpg(proc.pid, sig)
            break
    lines += proc.stdout.readlines()
    return proc.wait(timeout=60), "".join(lines)


def statuses(run: Path) -> dict[str, str]:
    return {
        str(p.parent.relative_to(run / "episodes")): json.loads(p.read_text())["status"]
        for p in (run / "episodes").rglob("result.json")
        if p.parent.name.isdigit()
    }


def mlflow_runs(tmp_path: Path) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    exp = client.get_experiment_by_name("interrupts")
    return client.search_runs([exp.experiment_id])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_run_ends_cleanly_and_the_same_command_finishes_it(tmp_path, sig):
    code, output = interrupt_after(command(tmp_path), 2, sig)
    assert code == 128 + sig, output[-3000:]
    assert "to resume" in output and "Traceback" not in output
    first = statuses(tmp_path / "run")
    assert 2 <= len(first) < 6 and set(first.values()) <= {"success", "interrupted"}, first
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "KILLED"
    assert not left_behind()
    runs = mlflow_runs(tmp_path)
    assert not [r for r in runs if r.info.status == "RUNNING"]
    (job,) = [r for r in runs if r.data.tags["mcpworld.level"] == "job"]
    assert job.info.status == "KILLED"

    again = subprocess.run(command(tmp_path), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    done_before = sum(s == "success" for s in first.values())
    assert f"{done_before} episode(s) already finished, skipped" in again.stdout
    final = statuses(tmp_path / "run")
    assert len(final) == 6 and set(final.values()) == {"success"}
    runs = mlflow_runs(tmp_path)
    jobs = [r for r in runs if r.data.tags["mcpworld.level"] == "job"]
    episodes = [r for r in runs if r.data.tags["mcpworld.level"] == "episode"]
    assert len(jobs) == 1 and jobs[0].info.status == "FINISHED"  # the same job run, reused
    keys = [r.data.tags.get("mcpworld.episode_key") for r in episodes]
    assert len(keys) == 6 == len(set(keys)), keys  # every episode once, no duplicates
    assert not [r for r in runs if r.info.status == "RUNNING"]


def test_after_kill_9_the_next_run_removes_the_leftovers(tmp_path):
    proc = subprocess.Popen(
        command(tmp_path, "tracking=none"),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    for line in proc.stdout:
        if line.strip().startswith("[1/"):
            break
    os.kill(proc.pid, signal.SIGKILL)  # the harness only: its desktops are orphaned
    proc.wait(timeout=10)
    time.sleep(0.2)
    assert left_behind(), "a killed run should leave something to reap (else this test tests nothing)"
    again = subprocess.run(command(tmp_path, "tracking=none"), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "left behind by killed runs" in again.stderr
    assert not left_behind()
    assert set(statuses(tmp_path / "run").values()) == {"success"}


def test_a_failed_job_does_not_end_the_sweep(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "mcpworld",
        "-m",
        "provider=ollama,oracle",
        "provider.base_url=http://127.0.0.1:1/v1",
        "task=mousepad/append_line",
        f"hydra.sweep.dir={tmp_path}/sweep",
        f"tracking.uri=sqlite:///{tmp_path}/mlflow.db",
        f"tracking.artifact_root={tmp_path}/artifacts",
        "tracking.experiment=interrupts",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    failed = json.loads((tmp_path / "sweep" / "0" / "summary.json").read_text())
    # the default model is the oracle: Ollama is told which real model to choose (model=…)
    assert failed["status"] == "FAILED" and "model=qwen3vl_8b" in failed["reason"]
    ok = json.loads((tmp_path / "sweep" / "1" / "summary.json").read_text())
    assert ok["status"] == "FINISHED" and ok["success"] == 1.0
    assert "job 0 FAILED:" in proc.stdout and "model=qwen3vl_8b" in proc.stdout.split("job 0 FAILED:")[1]
    assert "1 of 2 job(s) failed" in proc.stderr
    runs = mlflow_runs(tmp_path)
    (sweep,) = [r for r in runs if r.data.tags["mcpworld.level"] == "sweep"]
    assert sweep.info.status == "FAILED" and sweep.data.metrics["jobs_failed"] == 1
    assert not [r for r in runs if r.info.status == "RUNNING"]
