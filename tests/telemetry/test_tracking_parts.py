"""The tracker's parts: secret masking, the trajectory page, provenance
tags, job numbers with energy, per-LLM-call energy, and catching up after a failed connection."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from mcpworld.core.result import EpisodeResult
from mcpworld.core.secrets import mask_secrets, strip_secrets
from mcpworld.run.job import summarize
from mcpworld.run.progress import SweepProgress
from mcpworld.telemetry.provenance import config_hash, git_state
from mcpworld.telemetry.tracking.keys import flatten
from mcpworld.telemetry.tracking.logger import MlflowLogger
from mcpworld.telemetry.tracking.process import MlflowTracker
from mcpworld.telemetry.trajectory_page import make_page


def test_secrets_are_masked_but_token_counts_are_not() -> None:
    text = "max_tokens: 2048\napi_key: sk-abc\n- provider.api_key=sk-1,task=x\nname: x.access_token=zzz"
    masked = mask_secrets(text)
    assert "sk-abc" not in masked and "sk-1" not in masked and "zzz" not in masked
    assert "max_tokens: 2048" in masked and "task=x" in masked
    tree = {"provider": {"api_key": "sk-abc", "name": "x"}, "model": {"max_tokens": 5}}
    assert strip_secrets(tree) == {"provider": {"api_key": "***", "name": "x"}, "model": {"max_tokens": 5}}
    assert flatten(tree) == {"provider.name": "x", "model.max_tokens": "5"}


def test_the_trajectory_page_shows_each_step_and_its_screenshot(tmp_path: Path) -> None:
    (tmp_path / "screens").mkdir()
    Image.new("RGB", (40, 30), "red").save(tmp_path / "screens" / "000.jpg")
    events = [
        {"type": "episode_start", "task": "a/<b>", "instruction": "do it"},
        {"type": "llm_call", "text": "I will click"},
        {"type": "tool_call", "step": 1, "tool": "computer", "args": '{"action": "left_click"}', "ok": True},
        {"type": "observation", "screenshot": "screens/000.jpg", "step": 1},
        {"type": "tool_call", "step": 2, "tool": "nope", "args": "{}", "ok": False, "error": "no tool"},
        {"type": "episode_end", "status": "failure", "score": 0.0, "duration_s": 3.2},
    ]
    page = make_page(events, tmp_path, tmp_path / "t.html").read_text()
    assert "a/&lt;b&gt;" in page and "I will click" in page and "status failure" in page
    assert page.count("<div class=step>") == 2 and "data:image/jpeg;base64," in page
    assert "<span class=bad>no tool</span>" in page


def test_provenance_outside_a_work_tree_is_unknown_and_the_config_hash_ignores_key_order(tmp_path: Path) -> None:
    assert git_state(tmp_path) == {"mcpworld.git.commit": "unknown", "mcpworld.git.dirty": "unknown"}
    assert config_hash({"a": 1, "b": {"c": 2}}) == config_hash({"b": {"c": 2}, "a": 1}) != config_hash({"a": 2})


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed: no work tree's commit to read")
def test_provenance_names_a_work_trees_commit_and_whether_it_is_dirty(tmp_path: Path) -> None:
    """On a work tree of its own, so it passes outside a checkout of mcpworld (an exported tree, a wheel)."""

    def git(*args: str) -> str:
        command = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.org", *args]
        return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    git("add", "a.txt")
    git("commit", "-q", "-m", "one")
    assert git_state(tmp_path) == {"mcpworld.git.commit": git("rev-parse", "HEAD"), "mcpworld.git.dirty": "false"}
    (tmp_path / "a.txt").write_text("two\n")
    assert git_state(tmp_path)["mcpworld.git.dirty"] == "true"
    assert len(git_state(tmp_path)["mcpworld.git.commit"]) == 40


def result(status: str, energy: float | None = None, ttft: list[float] | None = None, ratio: float | None = None):
    r = EpisodeResult(task_id="t", app="a", status=status, score=float(status == "success"), ttft_s=ttft or [])
    if energy is not None:
        r.gpu = {"gpu.energy_j": energy}
    if ratio is not None:
        r.key_steps = {"total": 2, "ratio": ratio}
    return r


def test_job_numbers_include_energy_per_success_ttft_p90_and_key_steps() -> None:
    rs = [
        result("success", 100.0, [0.1, 0.2], 1.0),
        result("failure", 50.0, [0.3], 0.5),
        result("success", 150.0, [1.0], 1.0),
        result("infra_error"),
        result("eval_error"),
    ]
    out = summarize(rs, 5)
    assert out["gpu.energy_j"] == 300.0 and out["gpu.energy_per_success_j"] == 150.0
    assert out["success"] == pytest.approx(2 / 3) and out["infra_errors"] == 1.0
    assert out["eval_errors"] == 1.0  # counted apart, out of the rate
    assert out["ttft_p50_s"] == pytest.approx(0.25) and 0.3 < out["ttft_p90_s"] <= 1.0
    assert out["keysteps.ratio"] == pytest.approx(2.5 / 3)
    assert "gpu.energy_j" not in summarize([result("success")], 1)


def test_the_llm_calls_energy_averages_into_the_numbers() -> None:
    # (each call's share of the job's energy is tested in tests/telemetry/test_energy_attribution.py)
    r = EpisodeResult(task_id="t", app="a", gpu={"gpu.energy_j": 42.0}, llm_energy_j=[50.0, None, 200.0])
    assert r.numbers()["gpu.energy_per_llm_call_j"] == 125.0 and r.numbers()["gpu.energy_j"] == 42.0


@pytest.mark.slow  # a forked tracker importing MLflow and creating a sqlite store (its migrations): ~9 s alone
def test_the_tracker_catches_up_after_a_failed_connection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real, tries = MlflowLogger._connect, tmp_path / "tries"

    def flaky(self) -> None:  # runs in the tracker process: count tries in a file
        tries.write_text(tries.read_text() + "x" if tries.exists() else "x")
        if tries.read_text() == "x":
            raise ConnectionError("store unreachable")
        real(self)

    monkeypatch.setattr(MlflowLogger, "_connect", flaky)  # inherited by the forked tracker process
    tracker = MlflowTracker(f"sqlite:///{tmp_path}/m.db", str(tmp_path / "art"), "catchup", traces=False)
    episode = tmp_path / "ep"
    episode.mkdir()
    (episode / "result.json").write_text("{}")
    tracker.start_job("job", {"a": "1"}, {})
    tracker.log_episode(EpisodeResult(task_id="t/x", app="t", status="success", score=1.0), episode)
    assert tracker.finish_job({"success_rate": 1.0}, [], job_dir=tmp_path) == []
    assert not (tmp_path / "tracking_pending.json").exists()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path}/m.db")
    runs = client.search_runs([client.get_experiment_by_name("catchup").experiment_id])
    assert sorted(r.data.tags["mcpworld.level"] for r in runs) == ["episode", "job"]
    assert tracker.busy_s > 0 and tries.read_text() == "xx"  # failed once, then connected


def test_progress_counts_successes_and_errors() -> None:
    from rich.console import Console

    console = Console(record=True, width=200)
    with SweepProgress(3, console) as progress:
        for status in ("success", "infra_error", "failure"):
            progress.done(EpisodeResult(task_id="t/x", app="t", status=status))
    assert (progress.successes, progress.errors) == (1, 1)
    lines = console.export_text()
    assert "[1/3] t/x" in lines and "[3/3] t/x" in lines and "infra_error" in lines
