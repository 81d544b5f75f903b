"""Sweeps through Hydra's launcher plugins: the presets, the one-line errors (a plugin not installed,
a tracking store a job's node cannot reach), and real engines — a single-node SLURM cluster and a
Ray head started here — each running a two-job oracle sweep that ends in one MLflow sweep run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcpworld.config.launchers import PLUGINS, missing_plugin
from tests.engines.engines import ray_head, slurm_cluster

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ["provider=oracle", "task=[xterm/count_errors]", "resolution=square,rect", "-m"]


def cli(tmp_path: Path, *args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m mcpworld ARGS`` with the sweep in ``tmp_path`` (Hydra's -m after the overrides)."""
    overrides = [a for a in args if a != "-m"] + [f"hydra.sweep.dir={tmp_path}/sweep"] + ["-m"] * ("-m" in args)
    return subprocess.run(
        [sys.executable, "-m", "mcpworld", *overrides],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize("name", sorted(PLUGINS))
def test_each_preset_composes_onto_its_plugin(tmp_path, name):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpworld",
            f"hydra/launcher={name}",
            "concurrency=3",
            "--cfg",
            "all",
            "-p",
            "hydra.launcher",
            "--resolve",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "validated against ConfigStore schema" not in proc.stderr  # the presets are meant to match it
    module = PLUGINS[name][0]
    assert f"_target_: {module}." in proc.stdout
    if name != "joblib":  # a job asks its scheduler for the CPUs its episodes use
        assert "cpus_per_task: 3" in proc.stdout or "num_cpus: 3" in proc.stdout, proc.stdout


def test_a_launcher_whose_plugin_is_missing_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name.startswith("hydra_plugins.hydra_ray") else real(name, *a)
    )
    line = missing_plugin(["provider=oracle", "hydra/launcher=ray", "-m"])
    assert line and "hydra/launcher=ray" in line and "'.[ray]'" in line
    assert missing_plugin(["hydra/launcher=submitit_slurm"]) is None  # installed
    assert missing_plugin(["provider=oracle"]) is None


def results(sweep: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(sweep.rglob("result.json"))]


def one_sweep_run(db: Path, episodes: int = 2) -> tuple[list, list]:
    """The sweep runs and the job runs (each under the sweep) in the store."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{db}")
    runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    level = lambda name: [r for r in runs if r.data.tags.get("mcpworld.level") == name]  # noqa: E731
    sweeps, jobs = level("sweep"), level("job")
    assert len(sweeps) == 1 and all(j.data.tags["mlflow.parentRunId"] == sweeps[0].info.run_id for j in jobs)
    assert len(level("episode")) == episodes
    return sweeps, jobs


@pytest.mark.desktop  # runs real xterm episodes (the basic launcher, no engine)
@pytest.mark.slow
def test_a_job_whose_node_cannot_reach_the_store_fails_in_one_line_and_the_sweep_goes_on(tmp_path):
    (tmp_path / "shared").mkdir()
    proc = cli(
        tmp_path,
        "provider=oracle",
        "task=[xterm/count_errors]",
        "tracking=none,mlflow",
        f"tracking.uri=sqlite:///{tmp_path}/not-mounted-here/mlflow.db",
        "-m",
    )
    assert proc.returncode == 1, proc.stderr[-2000:]  # a job failed; the sweep ran to its end
    failed = [line for line in proc.stderr.splitlines() if line.startswith("mcpworld: job 1 failed:")]
    assert len(failed) == 1 and "cannot be reached from this node" in failed[0] and "not-mounted-here" in failed[0]
    assert [r["status"] for r in results(tmp_path / "sweep" / "0")] == ["success"]


def desktops(sweep: Path) -> list[dict]:
    """Each episode's job, display and ports, and when its desktop surely ran: from the end of its
    setup to its evaluation (a display number is free again once its desktop stops, after that)."""
    found = []
    for result in sweep.rglob("result.json"):
        folder = result.parent
        events = [json.loads(line) for line in (folder / "trace.jsonl").read_text().splitlines()]
        span = tuple(next(e["ts"] for e in events if e["type"] == kind) for kind in ("setup_done", "evaluation"))
        desktop = json.loads((folder / "logs" / "desktop.json").read_text())
        found.append(
            {
                "job": folder.relative_to(sweep).parts[0],
                "span": span,
                "display": desktop["display"],
                "ports": set(desktop["ports"].values()),
            }
        )
    return found


@pytest.mark.engines  # slurmctld/slurmd/munged as root, from apt when missing
@pytest.mark.desktop  # its jobs run real mousepad episodes
@pytest.mark.slow
def test_a_sweep_on_a_real_slurm_cluster(tmp_path):
    """Two jobs on the one node at once (a CPU each), each running its episodes two at a time: four
    desktops side by side, none sharing a display or a port with another."""
    db = tmp_path / "mlflow.db"
    with slurm_cluster(tmp_path / "slurm") as env:
        proc = cli(
            tmp_path,
            "provider=oracle",
            "task=[mousepad/*]",
            "resolution=square,rect",
            "concurrency=2",
            "hydra/launcher=submitit_slurm",
            "hydra.launcher.partition=debug",
            "hydra.launcher.cpus_per_task=1",
            f"tracking.uri=sqlite:///{db}",
            "-m",
            env=env,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [r["status"] for r in results(tmp_path / "sweep")] == ["success"] * 8
    (script,) = (tmp_path / "sweep" / ".submitit").rglob("*_submission.sh")  # one sbatch: an array of the two jobs
    assert {"#SBATCH --array=0-1%2", "#SBATCH --partition=debug", "#SBATCH --cpus-per-task=1"} <= set(
        script.read_text().splitlines()
    )
    assert len(list((tmp_path / "sweep" / ".submitit").glob("*_[01]/*_result.pkl"))) == 2  # each array task ran
    seen = desktops(tmp_path / "sweep")
    side_by_side = [
        (a, b) for a in seen for b in seen if a["job"] < b["job"] and a["span"][0] < b["span"][1] and b["span"][0] < a["span"][1]
    ]
    assert side_by_side, "the two jobs never ran at the same time"
    assert all(a["display"] != b["display"] and not a["ports"] & b["ports"] for a, b in side_by_side)
    _, jobs = one_sweep_run(db, episodes=8)
    assert len(jobs) == 2


@pytest.mark.engines  # a Ray head started here
@pytest.mark.desktop  # its jobs run real xterm episodes
@pytest.mark.slow
def test_a_sweep_on_a_real_ray_cluster(tmp_path):
    db = tmp_path / "mlflow.db"
    with ray_head() as env:
        proc = cli(tmp_path, *SWEEP, "hydra/launcher=ray", f"tracking.uri=sqlite:///{db}", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [r["status"] for r in results(tmp_path / "sweep")] == ["success", "success"]
    assert "_run_job pid=" in proc.stdout + proc.stderr  # the jobs ran as Ray tasks
    _, jobs = one_sweep_run(db)
    assert len(jobs) == 2
