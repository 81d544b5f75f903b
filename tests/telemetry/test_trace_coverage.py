"""An episode's MLflow trace accounts for the whole episode (issue 39): the spans planned from its
events cover its wall time with no stretch over 100 ms outside a span, tool spans keep the times the
tools took (what follows a call is a sibling span), and each screenshot is attached to its span as the
image. Checked on synthetic events, against a real sqlite store, and on a real oracle job."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from mcpworld.core.result import EpisodeResult
from mcpworld.telemetry.spans import PHASES, coverage, plan_spans, trace_coverage

GAP_LIMIT_S = 0.1


def new_style_events(start: float) -> list[dict[str, Any]]:
    """One click and `done`, as an episode writes them now: the observation's encoding, the watch after
    each call, the grading and the teardown each say how long they took."""
    return [
        {
            "type": "episode_start",
            "t": 0.0,
            "ts": start,
            "task": "mousepad/create_todo",
            "attempt": 0,
            "model": "oracle",
            "provider": "oracle",
        },
        {"type": "setup_done", "ts": start + 2.0, "seconds": 1.98},
        {"type": "observation", "ts": start + 2.3, "screenshot": "screens/000.jpg", "seconds": 0.05},
        {"type": "llm_call", "ts": start + 3.0, "n": 1, "latency_s": 0.69, "tokens_in": 10, "tokens_out": 2},
        {
            "type": "tool_call",
            "ts": start + 3.5,
            "tool": "computer",
            "ok": True,
            "latency_s": 0.49,
            "step": 1,
            "action": 1,
            "args": '{"action": "left_click", "coordinate": [5, 5]}',
        },
        {"type": "after_step", "ts": start + 3.62, "step": 1, "action": 1, "seconds": 0.12},
        {"type": "key_step", "ts": start + 3.61, "index": 0, "name": "opened", "via": "check"},
        {"type": "observation", "ts": start + 3.65, "screenshot": "screens/001.jpg", "step": 1, "action": 1, "seconds": 0.03},
        {"type": "turn", "ts": start + 3.651, "n": 1, "step": 1, "seconds": 1.351},
        {"type": "llm_call", "ts": start + 4.3, "n": 2, "latency_s": 0.64, "tokens_in": 12, "tokens_out": 2},
        {
            "type": "tool_call",
            "ts": start + 4.301,
            "tool": "done",
            "ok": True,
            "latency_s": 0.0005,
            "step": 2,
            "action": 2,
            "args": '{"status": "DONE"}',
            "output": "Episode ended: DONE",
        },
        {"type": "after_step", "ts": start + 4.302, "step": 2, "action": 2, "seconds": 0.0008},
        {"type": "turn", "ts": start + 4.303, "n": 2, "step": 2, "seconds": 0.651},
        {"type": "evaluation", "ts": start + 5.5, "score": 1.0, "metrics": [], "seconds": 1.1},
        {"type": "episode_end", "ts": start + 5.9, "status": "success", "score": 1.0, "teardown_s": 0.35},
    ]


def test_coverage_is_the_union_of_spans_and_names_the_largest_gap() -> None:
    found = coverage([(1.0, 3.0), (2.0, 4.0), (6.0, 7.0), (-5.0, 0.5), (9.5, 20.0)], start=0.0, end=10.0)
    assert found.wall_s == 10.0
    assert found.covered_s == pytest.approx(0.5 + 3.0 + 1.0 + 0.5)  # overlaps counted once, clipped to the episode
    assert (found.largest_gap_s, found.largest_gap_at) == (pytest.approx(2.5), pytest.approx(7.0))
    assert coverage([], 0.0, 4.0).largest_gap_s == 4.0 and coverage([], 0.0, 4.0).fraction == 0.0
    assert coverage([(0.0, 1.0)], 0.0, 0.0).fraction == 1.0  # an episode of no time lacks nothing


def test_an_episode_as_written_now_is_covered_with_no_gap_over_100_ms() -> None:
    start = 1000.0
    events = new_style_events(start)
    found = trace_coverage(events)
    assert found is not None and found.fraction >= 0.99 and found.largest_gap_s < GAP_LIMIT_S, found
    top = plan_spans(events)
    assert [s.name for s in top] == [
        "start",
        "setup",
        "agent start",
        "observation",
        "turn 1",
        "turn 2",
        "agent end",
        "evaluation",
        "end",
    ]
    first_turn = top[4]  # a model turn holds its model call, tool call and what followed the call
    assert [s.name for s in first_turn.children] == ["llm call 1", "computer.left_click", "after step", "observation"]
    assert (first_turn.start, first_turn.end) == (pytest.approx(start + 2.3), start + 3.651)
    spans = [s for span in top for s in span.flat()]
    names = [s.name for s in spans]
    by_name = {s.name: s for s in spans}
    click = by_name["computer.left_click"]  # the tool's own time: not stretched over what followed it
    assert (click.start, click.end) == (pytest.approx(start + 3.01), pytest.approx(start + 3.5))
    after = spans[names.index("after step")]
    observed = first_turn.children[3]
    assert (after.start, after.end) == (pytest.approx(start + 3.5), pytest.approx(start + 3.62))
    assert (observed.start, observed.end) == (pytest.approx(start + 3.62), pytest.approx(start + 3.65))
    assert click.screenshots == ["screens/001.jpg"] and observed.screenshots == []  # the image is on the tool's span
    assert spans[names.index("observation")].screenshots == ["screens/000.jpg"]  # the first screen: no tool before it
    assert (by_name["start"].start, by_name["start"].end) == (start, pytest.approx(start + 0.02))
    assert (by_name["agent end"].start, by_name["agent end"].end) == (pytest.approx(start + 4.302), pytest.approx(start + 4.4))
    end = by_name["end"]
    assert (end.start, end.end, end.attributes["teardown_s"]) == (pytest.approx(start + 5.5), start + 5.9, 0.35)
    assert all(by_name[name].attributes["what"] == PHASES[name] for name in PHASES)


def test_a_screenshot_goes_to_the_call_it_followed_even_when_action_numbers_repeat() -> None:
    """The oracle's waits are not actions: a wait and the computer call after it carry the same action
    number, and only the computer call produced the screenshot."""
    events = [
        {"type": "episode_start", "ts": 0.0, "task": "t"},
        {"type": "tool_call", "ts": 1.0, "tool": "wait_for", "ok": True, "latency_s": 0.3, "step": 1, "action": 2},
        {
            "type": "tool_call",
            "ts": 1.2,
            "tool": "computer",
            "ok": True,
            "latency_s": 0.1,
            "step": 2,
            "action": 2,
            "args": '{"action": "key", "text": "Tab"}',
        },
        {"type": "observation", "ts": 1.21, "screenshot": "screens/002.jpg", "step": 2, "action": 2, "seconds": 0.01},
        {"type": "episode_end", "ts": 2.0},
    ]
    shots = {s.name: s.screenshots for s in plan_spans(events) if s.kind == "TOOL"}
    assert shots == {"wait_for": [], "computer.key": ["screens/002.jpg"]}


def test_a_trace_written_before_the_timings_shows_its_gaps() -> None:
    """A key-step check of 2 s after a tool call, in a trace from before ``after_step`` events: the
    measurement reports the gap rather than a span stretched over it."""
    start = 1000.0
    events = [
        {"type": "episode_start", "ts": start, "task": "t"},
        {"type": "setup_done", "ts": start + 1.0, "seconds": 1.0},
        {"type": "observation", "ts": start + 1.05, "screenshot": "screens/000.jpg"},
        {"type": "llm_call", "ts": start + 1.1, "n": 1, "latency_s": 0.05},
        {"type": "tool_call", "ts": start + 1.5, "tool": "computer", "ok": True, "latency_s": 0.4, "action": 1},
        {"type": "key_step", "ts": start + 3.49, "index": 0, "name": "opened", "via": "check"},
        {"type": "observation", "ts": start + 3.5, "screenshot": "screens/001.jpg", "action": 1},
        {"type": "llm_call", "ts": start + 3.55, "n": 2, "latency_s": 0.05},
        {"type": "tool_call", "ts": start + 3.56, "tool": "done", "ok": True, "latency_s": 0.01, "action": 2},
        {"type": "evaluation", "ts": start + 4.0, "score": 1.0},
        {"type": "episode_end", "ts": start + 4.2, "status": "success"},
    ]
    found = trace_coverage(events, EpisodeResult(task_id="t", app="a", eval_s=0.4))
    assert found is not None
    assert (found.largest_gap_s, found.largest_gap_at) == (pytest.approx(2.0), pytest.approx(1.5))
    assert found.fraction == pytest.approx(2.2 / 4.2)
    tool = next(s for s in plan_spans(events) if s.name == "computer")
    assert (tool.start, tool.end) == (pytest.approx(start + 1.1), start + 1.5)


def test_an_episode_whose_setup_failed_is_its_start_and_its_end() -> None:
    start = 50.0
    events = [
        {"type": "episode_start", "ts": start, "task": "t"},
        {"type": "error", "ts": start + 1.5, "kind": "infra", "message": "the app did not start"},
        {"type": "episode_end", "ts": start + 2.0, "status": "infra_error", "teardown_s": 0.4},
    ]
    spans = plan_spans(events)
    assert [(s.name, s.start, s.end) for s in spans] == [("start", start, start + 1.5), ("end", start + 1.5, start + 2.0)]
    assert plan_spans([{"type": "llm_call", "ts": 1.0}]) == [] and trace_coverage([{"type": "x"}]) is None


def jpeg(color: tuple[int, int, int]) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (32, 24), color).save(buffer, "JPEG")
    return buffer.getvalue()


def attachment_bytes(trace: Any, uri: str) -> bytes:
    """The attached file, where the trace's artifacts are (``mlflow-attachment://<id>?…``)."""
    location = urlparse(trace.info.tags["mlflow.artifactLocation"])
    return (Path(unquote(location.path)) / "attachments" / urlparse(uri).hostname).read_bytes()


@pytest.mark.slow  # a real sqlite store
@pytest.mark.parametrize("log_screenshots", [True, False])
def test_screenshots_are_attached_to_their_spans_when_screenshots_are_logged(tmp_path: Path, log_screenshots: bool) -> None:
    from mlflow.tracking import MlflowClient

    from mcpworld.telemetry.tracking.logger import MlflowLogger

    uri = f"sqlite:///{tmp_path}/m.db"
    job_dir = tmp_path / "job"
    folder = job_dir / "episodes" / "mousepad" / "create_todo" / "0"
    (folder / "screens").mkdir(parents=True)
    shots = {"screens/000.jpg": jpeg((200, 10, 10)), "screens/001.jpg": jpeg((10, 200, 10))}
    for name, data in shots.items():
        (folder / name).write_bytes(data)
    (folder / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in new_style_events(time.time() - 60)))
    EpisodeResult(task_id="mousepad/create_todo", app="mousepad", status="success", score=1.0, duration_s=5.9).write(
        folder / "result.json"
    )
    logger = MlflowLogger(uri, str(tmp_path / "art"), "shots", log_screenshots=log_screenshots)
    logger.start_job("job", {"model": "oracle"}, {})
    logger.log_episode(EpisodeResult.read(folder / "result.json"), folder)
    assert logger.finish_job({}, [], job_dir=job_dir) == []

    client = MlflowClient(uri)
    (trace,) = client.search_traces(locations=[client.get_experiment_by_name("shots").experiment_id])
    spans = {s.name: s for s in trace.data.spans}
    click, first = spans["computer.left_click"], next(s for s in trace.data.spans if s.name == "observation")
    assert click.attributes["screenshot"] == "screens/001.jpg"
    if not log_screenshots:  # neither the screens/ artifacts nor the attachments: the name only
        assert click.outputs["screenshot"] == "screens/001.jpg"
        assert not list((tmp_path / "art").rglob("attachments/*"))
        return
    for span, name in ((click, "screens/001.jpg"), (first, "screens/000.jpg")):
        ref = span.outputs["screenshot"]
        assert ref.startswith("mlflow-attachment://") and "content_type=image%2Fjpeg" in ref, ref
        assert attachment_bytes(trace, ref) == shots[name]  # the JPEG as stored, not re-encoded
    assert "screenshot" not in spans["done"].outputs  # a call with no screenshot attaches none


@pytest.mark.desktop
@pytest.mark.slow
def test_a_real_oracle_jobs_traces_cover_each_episode(tmp_path: Path) -> None:
    """The mousepad tasks replayed by the oracle: each episode's trace, as MLflow stores it, covers
    at least 99 % of the episode with no stretch over 100 ms outside a span; tool spans last what the
    tools took; each computer call's screenshot is attached to its span."""
    from mlflow.tracking import MlflowClient

    from mcpworld.telemetry.trace import read_trace
    from tests.helpers.cli import results, run_cli

    db = tmp_path / "mlflow.db"
    proc = run_cli(
        tmp_path,
        "provider=oracle",
        "task=mousepad/*",
        f"tracking.uri=sqlite:///{db}",
        f"tracking.artifact_root={tmp_path}/artifacts",
        "tracking.experiment=coverage",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(results(tmp_path / "run")) == 4 and all(r["status"] == "success" for r in results(tmp_path / "run"))
    client = MlflowClient(f"sqlite:///{db}")
    traces = client.search_traces(locations=[client.get_experiment_by_name("coverage").experiment_id])
    assert len(traces) == 4
    for trace in traces:
        root, *children = trace.data.spans
        found = coverage(
            [(s.start_time_ns / 1e9, s.end_time_ns / 1e9) for s in children], root.start_time_ns / 1e9, root.end_time_ns / 1e9
        )
        task = trace.info.tags["task"]
        assert found.fraction >= 0.99 and found.largest_gap_s < GAP_LIMIT_S, (task, found)
        folder = tmp_path / "run" / "episodes" / task / "0"
        calls = [e for e in read_trace(folder / "trace.jsonl") if e["type"] == "tool_call"]
        tools = sorted((s for s in children if s.span_type == "TOOL"), key=lambda s: s.start_time_ns)
        assert len(tools) == len(calls)
        for span, call in zip(tools, calls, strict=True):  # the tool's own time, to MLflow's microsecond
            assert abs((span.end_time_ns - span.start_time_ns) / 1e9 - call["latency_s"]) < 1e-3, (span.name, call)
        shot_spans = [s for s in tools if s.name.startswith("computer.")]
        assert shot_spans
        for span in shot_spans:
            data = attachment_bytes(trace, span.outputs["screenshot"])
            assert data == (folder / span.attributes["screenshot"]).read_bytes()
