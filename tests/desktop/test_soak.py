"""benchmarks/soak.py in a tiny configuration (12 episodes, an app killed mid-episode and a SIGTERM
followed by the same command): its checks pass on a sound run, and fail when a process of ours is
left behind or a fault's episode is blamed on the agent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOAK = ROOT / "benchmarks" / "soak.py"
pytestmark = [
    pytest.mark.desktop,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the soak mounts a tmpfs for the work folders (root)"),
]


def soak(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SOAK), *args], cwd=ROOT, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("soak") / "soak"
    proc = soak(
        "--tasks", "mousepad/*", "--attempts", "3", "--faults", "app_kill,sigterm", "--docker", "off", "--out", str(folder)
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "PASS every episode once" in proc.stdout
    return folder


def test_a_tiny_soak_passes_its_checks(finished: Path) -> None:
    data = json.loads((finished / "soak.json").read_text())
    kinds = {f["kind"]: f for f in data["faults"]}
    assert kinds["app_kill"]["status"] == "infra_error"  # the killed app is not the agent's failure
    assert kinds["sigterm"]["exit"] == 143 and kinds["sigterm"]["tries_at"].get("interrupted")
    job = data["figures"]["jobs"]["local"]
    assert job["episodes"] == job["results"] == 12
    assert data["figures"]["mlflow"]["local"] == {"episode_runs": 12, "distinct": 12}


def test_a_leaked_process_fails_the_checks(finished: Path) -> None:
    work_base = json.loads((finished / "soak.json").read_text())["work_base"]
    leak = subprocess.Popen(["sleep", "300"], env={**os.environ, "MCPWORLD_DESKTOP": f"{work_base}/mcpworld-leak"})
    try:
        proc = soak("--check", str(finished))
        assert proc.returncode == 1
        assert f"FAIL leftover processes: sleep[{leak.pid}]" in proc.stdout
    finally:
        leak.kill()
        leak.wait()
    assert soak("--check", str(finished)).returncode == 0  # the leak was what failed it


def test_a_fault_blamed_on_the_agent_fails_the_checks(finished: Path) -> None:
    data = json.loads((finished / "soak.json").read_text())
    fault = next(f for f in data["faults"] if f["kind"] == "app_kill")
    job = Path(fault["job"]) / "episodes"
    task, attempt = fault["episode"].rsplit("/", 1)
    tries = sorted(p for p in (job / task).glob(f"{attempt}.infra_error*/result.json"))
    result = tries[0]
    original = result.read_text()
    result.write_text(json.dumps({**json.loads(original), "status": "failure"}))
    try:
        proc = soak("--check", str(finished))
        assert proc.returncode == 1
        assert f"app_kill hit {fault['episode']}" in proc.stdout and "ended failure, not infra_error" in proc.stdout
        assert "blamed on the agent" in proc.stdout
    finally:
        result.write_text(original)
