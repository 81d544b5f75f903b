"""Results travel: a store written here and then moved (another folder, another machine) opens whole.
A new experiment's artifact location names no machine's path: relative to the folder the job ran in
for the default sqlite store (``outputs/mlartifacts/<experiment>``), the server's own
``mlflow-artifacts:/`` for an ``mlflow server``. Checked with MlflowClient after a move, and in
MLflow's real UI (Playwright, a real ``mlflow server`` on the moved store): an episode's Artifacts
tab shows its files."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mcpworld.telemetry.tracking.logger import MlflowLogger
from mcpworld.telemetry.tracking.store import ARTIFACTS_FROM, create_experiment
from tests.fakes.scripted_server import free_port
from tests.helpers.job_folders import write_episode
from tests.helpers.mlflow_store import answering
from tests.telemetry.browser import CHROMIUM, require_browser

ROOT = Path(__file__).resolve().parents[2]
STORE = "sqlite:///outputs/mlflow.db"  # the defaults, as a researcher runs from the project folder
ARTIFACT_ROOT = "outputs/mlartifacts"


def client_for(uri: str) -> Any:
    from mlflow.tracking import MlflowClient

    return MlflowClient(uri)


def episode_run(client: Any, experiment: str) -> Any:
    exp = client.get_experiment_by_name(experiment)
    (run,) = [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("mcpworld.level") == "episode"]
    return run


def log_one_episode(work: Path, experiment: str, uri: str = STORE) -> dict[str, Any]:
    """A job of one episode logged the way the job's tracker logs it, from ``work``; its result.json."""
    logger = MlflowLogger(uri, ARTIFACT_ROOT, experiment)
    job_dir = work / "outputs" / "2026-01-01" / "job"
    logger.start_job("job", {"model": "oracle"}, {"mcpworld.job_dir": str(job_dir)})
    result, where = write_episode(job_dir, "mousepad/create_todo")
    (where / "screens").mkdir()
    (where / "screens" / "001.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    logger.log_episode(result, where)
    assert logger.finish_job({"episodes": 1.0}, [], job_dir=job_dir) == []
    return json.loads((where / "result.json").read_text())


def stored_locations(db: Path) -> list[str]:
    """Every artifact location the store holds: experiments', runs' and traces' (not MLflow's own empty
    Default experiment's, which it makes absolute when it creates a store)."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "SELECT artifact_location FROM experiments WHERE name != 'Default' "
            "UNION ALL SELECT artifact_uri FROM runs "
            "UNION ALL SELECT value FROM trace_tags WHERE key = 'mlflow.artifactLocation'"
        ).fetchall()
    finally:
        con.close()
    return [r[0] for r in rows]


def test_a_moved_outputs_folder_lists_and_downloads_an_episodes_artifacts(tmp_path: Path, monkeypatch) -> None:
    work = tmp_path / "project"
    work.mkdir()
    monkeypatch.chdir(work)
    result = log_one_episode(work, "travels")
    exp = client_for(f"sqlite:///{work}/outputs/mlflow.db").get_experiment_by_name("travels")
    assert exp.artifact_location == "outputs/mlartifacts/travels"
    assert exp.tags[ARTIFACTS_FROM] == "outputs/mlflow.db"
    assert not [loc for loc in stored_locations(work / "outputs" / "mlflow.db") if str(tmp_path) in loc]

    moved = tmp_path / "elsewhere" / "paper-results"
    moved.parent.mkdir()
    shutil.move(str(work), str(moved))  # the whole folder, as results travel with a paper
    assert not work.exists()
    monkeypatch.chdir(moved)  # opened from the folder that holds outputs/, as README says
    client = client_for(f"sqlite:///{moved}/outputs/mlflow.db")
    run = episode_run(client, "travels")
    listed = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"result.json", "trace.jsonl", "trajectory.html", "screens"} <= listed
    assert [a.path for a in client.list_artifacts(run.info.run_id, "screens")] == ["screens/001.jpg"]
    got = client.download_artifacts(run.info.run_id, "result.json", str(tmp_path / "downloaded"))
    assert json.loads(Path(got).read_text()) == result
    assert (
        Path(got).read_text()
        == (moved / "outputs" / "mlartifacts" / "travels" / run.info.run_id / "artifacts" / "result.json").read_text()
    )


def test_a_job_run_from_another_folder_is_told_where_to_run_and_writes_nothing_astray(tmp_path: Path, monkeypatch) -> None:
    work, other = tmp_path / "project", tmp_path / "other"
    work.mkdir()
    other.mkdir()
    monkeypatch.chdir(work)
    log_one_episode(work, "here")
    monkeypatch.chdir(other)  # the same store by its absolute path: relative artifacts would land in other/
    logger = MlflowLogger(f"sqlite:///{work}/outputs/mlflow.db", ARTIFACT_ROOT, "here")
    logger.start_job("job 2", {"model": "oracle"}, {"mcpworld.job_dir": str(other / "job")})
    ((what, _, record),) = logger.pending
    assert what == "job run"
    assert record["error"] == (
        f"RuntimeError: experiment 'here' keeps its artifacts relative to {work} "
        f"(outputs/mlartifacts/here): run from there, not from {other}"
    )
    assert list(other.iterdir()) == []


def test_a_store_outside_this_folder_and_an_older_experiment_keep_absolute_locations(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    elsewhere = tmp_path / "store"
    elsewhere.mkdir()
    uri = f"sqlite:///{elsewhere}/mlflow.db"
    MlflowLogger(uri, str(elsewhere / "art"), "outside").start_job("job", {}, {})
    client = client_for(uri)
    assert client.get_experiment_by_name("outside").artifact_location == (elsewhere / "art" / "outside").as_uri()

    older = client.create_experiment("older", artifact_location=(tmp_path / "old-art").as_uri())
    result, where = write_episode(tmp_path / "job", "app/x")
    logger = MlflowLogger(uri, str(elsewhere / "art"), "older")
    logger.start_job("job", {}, {"mcpworld.job_dir": str(tmp_path / "job")})
    logger.log_episode(result, where)
    assert logger.finish_job({}, [], job_dir=tmp_path / "job") == []
    assert client.get_experiment(older).artifact_location == (tmp_path / "old-art").as_uri()
    assert list((tmp_path / "old-art").rglob("result.json"))


def test_an_mlflow_server_picks_its_own_location() -> None:
    asked: list[tuple[Any, ...]] = []
    client = SimpleNamespace(create_experiment=lambda *a, **kw: asked.append((a, kw)) or "7")
    assert create_experiment(client, "http://mlflow.lab:5000", "outputs/mlartifacts", "remote") == "7"
    assert asked == [(("remote",), {})]  # no client-side path: the server's mlflow-artifacts:/ (--artifacts-destination)


# --------------------------------------------------------------------------- end to end, in MLflow's UI


def start_server(folder: Path, port: int, serves_artifacts: bool) -> subprocess.Popen:
    """MLflow's server on ``folder``'s store, started from ``folder`` with the command docs/tracking.md
    gives: README's ``mlflow ui`` for the local store, ``--artifacts-destination`` for a server store."""
    destination = ["--artifacts-destination", ARTIFACT_ROOT] if serves_artifacts else []
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "ui" if not serves_artifacts else "server",
            "--backend-store-uri",
            STORE,
            *destination,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
    )
    return answering(proc, port)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(timeout=30)


def run_job(folder: Path, *overrides: str) -> None:
    """One oracle episode of the CLI, run from ``folder`` with the default output layout."""
    proc = subprocess.run(
        [sys.executable, "-m", "mcpworld", "provider=oracle", "task=mousepad/create_todo", *overrides],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def episode_result(folder: Path) -> dict[str, Any]:
    """The job's one result.json in its episode folder (not the copies in the artifact store)."""
    (found,) = [p for p in (folder / "outputs").rglob("result.json") if "mlartifacts" not in p.parts]
    return json.loads(found.read_text())


def check_artifacts_tab(uri: str, experiment_id: str, run_id: str, task: str) -> None:
    """The episode's Artifacts tab lists its files, and result.json opens with its content."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(f"{uri}/#/experiments/{experiment_id}/runs/{run_id}/artifacts")
            for name in ("result.json", "trace.jsonl", "trajectory.html", "screens"):
                expect(page.get_by_text(name, exact=True).first).to_be_visible(timeout=60_000)
            expect(page.get_by_text("final_action")).to_have_count(0)
            page.get_by_text("result.json", exact=True).first.click()  # its content, read from the moved files
            expect(page.get_by_text("final_action").first).to_be_visible(timeout=30_000)
            expect(page.get_by_text(task).first).to_be_visible()
        finally:
            browser.close()


def open_moved(folder: Path, experiment: str, result: dict[str, Any], tmp_path: Path, serves_artifacts: bool) -> None:
    """A server started on the moved folder: MlflowClient over HTTP (run from that folder too: a client
    resolves a run's relative location itself) and the UI see the episode's artifacts."""
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    server = start_server(folder, port, serves_artifacts)
    try:
        client = client_for(uri)
        run = episode_run(client, experiment)
        assert {"result.json", "trace.jsonl", "trajectory.html", "screens"} <= {
            a.path for a in client.list_artifacts(run.info.run_id)
        }
        got = client.download_artifacts(run.info.run_id, "result.json", str(tmp_path / f"dl-{experiment}"))
        assert json.loads(Path(got).read_text()) == result
        check_artifacts_tab(uri, run.info.experiment_id, run.info.run_id, result["task_id"])
    finally:
        stop(server)


@pytest.mark.desktop
@pytest.mark.slow
def test_moved_outputs_open_whole_in_mlflows_ui(tmp_path: Path, monkeypatch) -> None:
    require_browser()

    # the default local store: a job from its project folder, the folder moved, the UI run from its new place
    local = tmp_path / "local"
    local.mkdir()
    run_job(local, "tracking.experiment=moved_local")
    result = episode_result(local)
    assert not [loc for loc in stored_locations(local / "outputs" / "mlflow.db") if str(tmp_path) in loc]
    shutil.move(str(local), str(tmp_path / "local-moved"))
    monkeypatch.chdir(tmp_path / "local-moved")
    open_moved(tmp_path / "local-moved", "moved_local", result, tmp_path, serves_artifacts=False)

    # an mlflow server: the job logs through it, its folder moved, a server started there again
    served = tmp_path / "served"
    (served / "outputs").mkdir(parents=True)
    port = free_port()
    server = start_server(served, port, serves_artifacts=True)
    try:
        run_job(served, f"tracking.uri=http://127.0.0.1:{port}", "tracking.experiment=moved_server")
    finally:
        stop(server)
    result = episode_result(served)
    assert all(loc.startswith("mlflow-artifacts:/") for loc in stored_locations(served / "outputs" / "mlflow.db") if loc), (
        stored_locations(served / "outputs" / "mlflow.db")
    )
    shutil.move(str(served), str(tmp_path / "served-moved"))
    monkeypatch.chdir(tmp_path)  # a server's artifacts come through it, whatever the client's folder
    open_moved(tmp_path / "served-moved", "moved_server", result, tmp_path, serves_artifacts=True)
