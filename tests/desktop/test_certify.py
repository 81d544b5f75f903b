"""``python -m mcpworld.certify`` end to end: real jobs on real desktops, real MLflow (sqlite)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "data" / "certify"
BUILTIN = ROOT / "mcpworld" / "data" / "certificates" / "builtin.csv"
pytestmark = [pytest.mark.desktop, pytest.mark.slow]


def certify(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcpworld.certify", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
    )


def rows(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as f:
        return {r["task_id"]: r for r in csv.DictReader(f)}


def test_a_good_a_lenient_and_a_flaky_checker_are_told_apart(tmp_path, shared_dir):
    """The fixtures' checkers: a sound one, one that passes whatever is done, one that passes every
    other time (a counter file the desktop account writes, hence a shared folder)."""
    suite = shared_dir / "suite"
    shutil.copytree(FIXTURES, suite)
    for path in [suite, *suite.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)
    before = tmp_path / "before.csv"
    before.write_text("task_id,status\ngood,certified\nlenient,certified\nflaky,certified\ngone,certified\n")
    db = tmp_path / "mlflow.db"
    proc = certify(
        f"tasks.root={suite}",
        "modality=cli",
        "--n",
        "2",
        "--out",
        str(tmp_path / "cert"),
        "--against",
        str(before),
        f"tracking.uri=sqlite:///{db}",
        f"tracking.artifact_root={tmp_path}/artifacts",
        "tracking.experiment=certify",
        timeout=600,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    cert = rows(tmp_path / "cert" / "certificate.csv")
    assert {t: r["status"] for t, r in cert.items()} == {"good": "certified", "lenient": "lenient", "flaky": "flaky"}
    good, lenient, flaky = cert["good"], cert["lenient"], cert["flaky"]
    assert (good["oracle_passed"], good["noop_passed"], good["spoiled_passed"], good["spoil"]) == ("2", "0", "0", "declared")
    assert (lenient["noop_passed"], lenient["noop_judged"]) == ("2", "2") and "doing nothing passes" in lenient["note"]
    assert flaky["flake_rate"] == "0.5" and "outcomes differ between repeats" in flaky["note"]
    # (certify stages each next episode: a one-command cli oracle's own time can round to 0.0 s)
    assert float(good["median_s"]) >= 0 and float(good["p90_s"]) >= float(good["median_s"])
    assert "env.stage=true" in (tmp_path / "cert" / "oracle" / ".hydra" / "overrides.yaml").read_text()
    good_runs = [json.loads(p.read_text()) for p in (tmp_path / "cert" / "oracle").rglob("good/*/result.json")]
    assert len(good_runs) == 2 and any(r["staged"] for r in good_runs)  # the worker's next episode set up ahead
    regressions = [line for line in proc.stderr.splitlines() if "REGRESSION" in line]
    assert sorted(line.split()[2] for line in regressions) == ["flaky:", "lenient:"]  # good holds; gone was not run
    # the spoiled replay ran the declared wrong step in place of the right one
    trace = (tmp_path / "cert" / "spoiled" / "episodes" / "good" / "0" / "trace.jsonl").read_text().splitlines()
    calls = [json.loads(line) for line in trace if '"tool_call"' in line]
    commands = [json.loads(c["args"])["command"] for c in calls if c["tool"] == "bash"]
    assert commands == ["printf rea > ~/state.txt", "printf di >> ~/state.txt"]

    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{db}")
    (run,) = client.search_runs([client.get_experiment_by_name("certify").experiment_id])
    assert run.data.tags["mcpworld.level"] == "certificate"
    assert (run.data.metrics["certified"], run.data.metrics["lenient"], run.data.metrics["flaky"]) == (1, 1, 1)
    assert run.data.metrics["regressions"] == 2 and run.data.metrics["episodes"] == 18
    assert {a.path for a in client.list_artifacts(run.info.run_id)} == {"certificate.csv", "certificate.md"}


def vscode_installed() -> bool:
    from mcpworld.apps.catalog import programs

    return any(p.app == "vscode" and p.installed() for p in programs())


def results(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.rglob("result.json")) if p.parent.name.isdigit()]


def test_the_builtin_suite_keeps_its_certificate(tmp_path):
    """Every built-in task, N = 2 per mode, against the committed certificate: a task certified there
    that is not certified now fails this test (every built-in gui task is certified: its oracle passes
    both times). Doing nothing scores 0 on every task (this replaces test_cli_e2e's whole-suite oracle
    and do-nothing runs, and keeps their checks)."""
    out = tmp_path / "cert"
    proc = certify("--n", "2", "--concurrency", "2", "--out", str(out), "--against", str(BUILTIN), "tracking=none", timeout=3600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    now, committed = rows(out / "certificate.csv"), rows(BUILTIN)
    assert len(now) >= 30 and set(committed) <= set(now)
    apps = {r["app"] for r in now.values() if r["status"] != "excluded"}
    assert {"libreoffice_calc", "libreoffice_writer", "libreoffice_impress", "chromium", "gimp", "vlc", "thunderbird"} | (
        {"vscode"} if vscode_installed() else set()
    ) <= apps
    noop = results(out / "noop")
    assert len(noop) == 2 * sum(r["status"] != "excluded" for r in now.values())
    assert all(r["score"] == 0.0 and r["status"] == "failure" for r in noop), [(r["task_id"], r["status"]) for r in noop]
    assert all(r["key_steps"].get("completed", 0) == 0 for r in noop)
    # (this also replaces test_cli_e2e's gui oracle run of the whole suite, and keeps its check:)
    # the apps' own saves date the check key steps while the oracle works (the file probe)
    (folders,) = {
        r["task_id"]: r for r in results(out / "oracle") if r["task_id"] == "thunderbird/new_folders" and r["attempt"] == 0
    }.values()
    first, second = folders["key_steps"]["timeline"]
    assert first["via"] == second["via"] == "check" and 0 < first["t"] < second["t"] < folders["duration_s"]
