"""A tracking server that is down during a job loses nothing: the episodes run and are written to
disk, one message names what was not logged, and ``python -m mcpworld.telemetry.upload`` logs it
once the server is up."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.fakes.scripted_server import free_port
from tests.helpers.cli import ROOT, results, run_cli
from tests.helpers.mlflow_store import start_mlflow_server

pytestmark = [pytest.mark.desktop, pytest.mark.slow]


def test_a_tracking_outage_loses_nothing_and_upload_catches_up(tmp_path):
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    proc = run_cli(
        tmp_path,
        "task=mousepad/create_todo",
        f"tracking.uri={uri}",
        "tracking.experiment=outage",
        f"tracking.artifact_root={tmp_path}/artifacts",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert time.monotonic() - started < 120  # a dead server costs seconds, not minutes of retries
    (result,) = results(tmp_path / "run")
    assert result["status"] == "success"
    assert "not logged to MLflow" in proc.stderr and "mousepad/create_todo#0" in proc.stderr
    assert "Traceback" not in proc.stderr  # the outage is one line, not MLflow's retries and tracebacks
    assert len([line for line in proc.stderr.splitlines() if "MLflow" in line]) == 1
    pending = json.loads((tmp_path / "run" / "tracking_pending.json").read_text())
    assert pending["job_run_id"] is None
    assert [r["kind"] for r in pending["not_logged"]] == ["job", "episode", "summary"]

    server = start_mlflow_server(tmp_path / "server.db", port)
    try:
        up = subprocess.run(
            [sys.executable, "-m", "mcpworld.telemetry.upload", str(tmp_path / "run")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert up.returncode == 0, up.stderr[-3000:]
        assert not (tmp_path / "run" / "tracking_pending.json").exists()
        from mlflow.tracking import MlflowClient

        client = MlflowClient(uri)
        runs = client.search_runs([client.get_experiment_by_name("outage").experiment_id])
        by_level = {r.data.tags["mcpworld.level"]: r for r in runs}
        assert set(by_level) == {"job", "episode"}
        assert by_level["episode"].data.tags["mlflow.parentRunId"] == by_level["job"].info.run_id
        assert by_level["episode"].data.metrics["success"] == 1.0
        assert by_level["job"].data.metrics["success"] == 1.0
        assert by_level["job"].info.status == by_level["episode"].info.status == "FINISHED"
        again = subprocess.run(
            [sys.executable, "-m", "mcpworld.telemetry.upload", str(tmp_path / "run")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert again.returncode == 0, again.stderr[-3000:]
        assert len(client.search_runs([client.get_experiment_by_name("outage").experiment_id])) == 2  # no duplicate
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_an_api_key_never_reaches_mlflow(tmp_path):
    secret = "sk-test-SECRET-4242"
    db = tmp_path / "mlflow.db"
    proc = run_cli(
        tmp_path,
        "-m",
        "task=mousepad/create_todo",
        f"provider.api_key={secret}",
        f"tracking.uri=sqlite:///{db}",
        f"tracking.artifact_root={tmp_path}/artifacts",
        "tracking.experiment=secrets",
        env={"ANTHROPIC_API_KEY": secret},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    import mlflow
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{db}")
    exp = client.get_experiment_by_name("secrets")
    runs = client.search_runs([exp.experiment_id])
    assert {r.data.tags["mcpworld.level"] for r in runs} == {"sweep", "job", "episode"}
    assert "provider.api_key=" in exp.tags["mlflow.note.content"] and secret not in json.dumps(exp.tags)  # the command
    for run in runs:
        assert secret not in json.dumps([run.data.params, run.data.tags, run.data.metrics])
    stored = [p for p in (tmp_path / "artifacts").rglob("*") if p.is_file()]
    assert any(p.name == "overrides.yaml" for p in stored)  # the override was logged, masked
    for path in stored:
        assert secret.encode() not in path.read_bytes(), path
    mlflow.set_tracking_uri(f"sqlite:///{db}")
    traces = client.search_traces(locations=[exp.experiment_id])
    assert traces and all(secret not in trace.to_json() for trace in traces)
