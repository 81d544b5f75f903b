"""The tracker's parts: secret masking, episode traces as spans, the trajectory GIF, provenance
tags, job numbers with energy, per-LLM-call energy, and catching up after a failed connection."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from PIL import Image

from mcpworld.core.result import EpisodeResult
from mcpworld.core.secrets import mask_secrets, strip_secrets
from mcpworld.run.episode import gpu_energy
from mcpworld.run.job import summarize
from mcpworld.run.progress import SweepProgress
from mcpworld.telemetry.provenance import config_hash, git_state
from mcpworld.telemetry.spans import log_trace
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


class RecordingClient:
    """Just enough of MlflowClient's tracing API to see which spans are made, with which times."""

    def __init__(self) -> None:
        self.spans: list[dict] = []

    def start_trace(self, name, span_type, experiment_id, run_id, start_time_ns, inputs, attributes):
        self.spans.append({"name": name, "type": span_type, "start": start_time_ns, "run": run_id})
        return type("Span", (), {"trace_id": "t1", "span_id": "root"})()

    def start_span(self, name, trace_id, parent_id, span_type, start_time_ns, attributes=None, inputs=None):
        self.spans.append({"name": name, "type": span_type, "start": start_time_ns, "parent": parent_id,
                           "attributes": attributes or {}})
        return type("Span", (), {"span_id": f"s{len(self.spans)}"})()

    def end_span(self, trace_id, span_id, outputs=None, status="OK", end_time_ns=None):
        self.spans[int(span_id[1:]) - 1].update(end=end_time_ns, status=status)

    def end_trace(self, trace_id, outputs=None, end_time_ns=None):
        self.spans[0].update(end=end_time_ns, outputs=outputs)


def test_an_episode_becomes_an_agent_span_with_llm_and_tool_spans() -> None:
    events = [{"type": "episode_start", "ts": 100.0, "task": "a/b"},
              {"type": "llm_call", "ts": 102.0, "n": 1, "latency_s": 1.5, "ttft_s": 0.4, "tokens_in": 10},
              {"type": "tool_call", "ts": 102.5, "tool": "computer", "latency_s": 0.25, "ok": True, "args": "{}"},
              {"type": "llm_call", "ts": 104.0, "n": 2, "latency_s": 1.0},
              {"type": "tool_call", "ts": 104.1, "tool": "filesystem-read_file", "latency_s": 0.1, "ok": False},
              {"type": "episode_end", "ts": 105.0, "status": "failure", "score": 0.0}]
    client = RecordingClient()
    assert log_trace(client, "1", "run9", events, llm_energy_j=[30.0, None]) == "t1"
    root, llm1, tool1, llm2, tool2 = client.spans
    assert (root["type"], root["run"], root["start"], root["end"]) == ("AGENT", "run9", 100 * 10**9, 105 * 10**9)
    assert [s["type"] for s in (llm1, tool1, llm2, tool2)] == ["LLM", "TOOL", "LLM", "TOOL"]
    assert (llm1["start"], llm1["end"]) == (int(100.5 * 10**9), 102 * 10**9)  # ended at ts, began latency earlier
    assert llm1["attributes"]["gpu.energy_j"] == 30.0 and "gpu.energy_j" not in llm2["attributes"]
    assert (tool1["status"], tool2["status"]) == ("OK", "ERROR") and tool2["name"] == "filesystem-read_file"


def test_the_trajectory_page_shows_each_step_and_its_screenshot(tmp_path: Path) -> None:
    (tmp_path / "screens").mkdir()
    Image.new("RGB", (40, 30), "red").save(tmp_path / "screens" / "000.jpg")
    events = [{"type": "episode_start", "task": "a/<b>", "instruction": "do it"},
              {"type": "llm_call", "text": "I will click"},
              {"type": "tool_call", "step": 1, "tool": "computer", "args": '{"action": "left_click"}', "ok": True},
              {"type": "observation", "screenshot": "screens/000.jpg", "step": 1},
              {"type": "tool_call", "step": 2, "tool": "nope", "args": "{}", "ok": False, "error": "no tool"},
              {"type": "episode_end", "status": "failure", "score": 0.0, "duration_s": 3.2}]
    page = make_page(events, tmp_path, tmp_path / "t.html").read_text()
    assert "a/&lt;b&gt;" in page and "I will click" in page and "status failure" in page
    assert page.count("<div class=step>") == 2 and "data:image/jpeg;base64," in page
    assert '<span class=bad>no tool</span>' in page


def test_provenance_names_the_commit_and_the_config(tmp_path: Path) -> None:
    state = git_state()
    assert len(state["mcpworld.git.commit"]) == 40 and state["mcpworld.git.dirty"] in ("true", "false")
    assert git_state(tmp_path) == {"mcpworld.git.commit": "unknown", "mcpworld.git.dirty": "unknown"}
    assert config_hash({"a": 1, "b": {"c": 2}}) == config_hash({"b": {"c": 2}, "a": 1}) != config_hash({"a": 2})


def result(status: str, energy: float | None = None, ttft: list[float] | None = None, ratio: float | None = None):
    r = EpisodeResult(task_id="t", app="a", status=status, score=float(status == "success"), ttft_s=ttft or [])
    if energy is not None:
        r.gpu = {"gpu.energy_j": energy}
    if ratio is not None:
        r.key_steps = {"total": 2, "ratio": ratio}
    return r


def test_job_numbers_include_energy_per_success_ttft_p90_and_key_steps() -> None:
    rs = [result("success", 100.0, [0.1, 0.2], 1.0), result("failure", 50.0, [0.3], 0.5),
          result("success", 150.0, [1.0], 1.0), result("infra_error"), result("eval_error")]
    out = summarize(rs, 5)
    assert out["gpu.energy_j"] == 300.0 and out["gpu.energy_per_success_j"] == 150.0
    assert out["success_rate"] == pytest.approx(2 / 3) and out["infra_errors"] == 1.0
    assert out["eval_errors"] == 1.0  # counted apart, out of the rate
    assert out["ttft_p50_s"] == pytest.approx(0.25) and 0.3 < out["ttft_p90_s"] <= 1.0
    assert out["keystep_ratio"] == pytest.approx(2.5 / 3)
    assert "gpu.energy_j" not in summarize([result("success")], 1)


def test_each_llm_call_gets_the_energy_of_its_window() -> None:
    class Sampled:  # 100 W, always: energy = 100 x window length
        def metrics(self) -> dict:
            return {"gpu.energy_j": 42.0}

        def energy_between(self, t0: float, t1: float) -> float:
            return round(100 * (t1 - t0), 6)

    r = EpisodeResult(task_id="t", app="a")
    now = time.time()
    gpu_energy(Sampled(), r, [{"type": "llm_call", "ts": now, "latency_s": 0.5}, {"type": "tool_call", "ts": now},
                              {"type": "llm_call", "ts": now, "latency_s": 2.0}])
    assert r.gpu == {"gpu.energy_j": 42.0} and r.llm_energy_j == [50.0, 200.0]
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
