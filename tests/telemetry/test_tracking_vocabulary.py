"""One MLflow vocabulary at every level: the few decisive params under the same names on job and
episode runs, readable unique run names, real start and end times, per-step curves, and an
episode's trace as MLflow reads it (tags to filter by, its own token-usage field, setup and
evaluation spans, key steps as events, tool spans named by action) — against a real sqlite store."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcpworld.core.result import EpisodeResult, MetricOutcome, ToolCounts
from mcpworld.telemetry.tracking.keys import JOB_DIR
from mcpworld.telemetry.tracking.sweep import swept_keys
from mcpworld.telemetry.tracking.vocabulary import (
    MAX_JOB_PARAMS,
    MAX_RUN_NAME,
    differs_tag,
    episode_metrics,
    episode_params,
    episode_run_name,
    episode_window,
    job_params,
    job_run_name,
    source_tags,
    step_series,
    sweep_run_name,
    tool_span_name,
)


def resolved(resolution: str = "square", width: int = 1000, height: int = 1000) -> dict[str, Any]:
    """A resolved config as a job sees it: the decisive keys among many that are the same everywhere."""
    return {
        "model": {
            "name": "oracle",
            "id": "oracle",
            "profile": "generic",
            "variant": "instruct",
            "temperature": 0.0,
            "max_tokens": 2048,
        },
        "provider": {"name": "oracle", "kind": "oracle", "api_key": "***"},
        "resolution": {"name": resolution, "width": width, "height": height},
        "modality": {"name": "gui", "tools": ["computer", "done"]},
        "app": {"name": "all"},
        "env": {"backend": "local"},
        "seed": 0,
        "attempts": 1,
        "task": ["mousepad/*", "xterm/set_theme"],
        "agent": {"max_steps": 30, "timeout_s": 600.0},
        "mcp": {"catalog": {f"server{i}": {"command": "x"} for i in range(38)}},
        "evaluator": {"templates": {f"t{i}": {"func": "exact_match"} for i in range(29)}},
    }


def labels(resolution: str = "square") -> dict[str, str]:
    return {"model": "oracle", "provider": "oracle", "resolution": resolution, "modality": "gui", "env": "local", "seed": "0"}


def test_a_job_has_few_params_and_a_square_rect_sweep_differs_only_where_it_should() -> None:
    square, rect = job_params(resolved()), job_params(resolved("rect", 1024, 768))
    assert len(square) <= MAX_JOB_PARAMS - 10  # room for the model's own facts (served.*, ollama.*)
    assert {k for k in square if square[k] != rect[k]} == {"resolution", "screen", "config.sha256"}
    assert (square["model"], square["resolution"], square["screen"], square["tools"], square["tasks"]) == (
        "oracle",
        "square",
        "1000x1000",
        "computer,done",
        "mousepad/*,xterm/set_theme",
    )
    assert len(square["config.sha256"]) == 64 and not [k for k in square if k.startswith(("mcp.", "evaluator."))]
    assert job_params(resolved(), {"ollama.digest": "d"})["ollama.digest"] == "d"
    assert "thinking_budget" not in square  # a key the config lacks (or leaves null) is left out


def test_an_episode_carries_the_jobs_names_with_its_own_task_app_and_attempt() -> None:
    job = job_params(resolved())
    result = EpisodeResult(task_id="chromium/open_link_in_new_tab", app="chromium", attempt=1, labels=labels())
    params = episode_params(job, result)
    assert {k: v for k, v in job.items() if k not in ("app", "tasks")}.items() <= params.items()
    assert (params["task"], params["app"], params["attempt"], params["resolution"]) == (
        "chromium/open_link_in_new_tab",
        "chromium",
        "1",
        "square",
    )
    assert "tasks" not in params


def test_runs_are_named_so_a_researcher_tells_them_apart() -> None:
    """MLflow's runs table cuts the Run Name column short: what differs between siblings comes first."""
    result = EpisodeResult(task_id="chromium/open_link_in_new_tab", app="chromium", labels=labels())
    assert episode_run_name(result) == "chromium/open_link_in_new_tab #0 · oracle · square"
    assert episode_run_name(result, "resolution=square") == "chromium/open_link_in_new_tab #0 · oracle · square"
    assert (
        episode_run_name(result, "agent.max_steps=4 · model=oracle")
        == "chromium/open_link_in_new_tab #0 · oracle · square · agent.max_steps=4"
    )
    params = job_params(resolved("rect", 1024, 768))
    overrides = [
        "resolution=rect",
        "provider=oracle",
        "task=[a,b]",
        "tracking.uri=sqlite:///x",
        "hydra.job.chdir=false",
        "agent.max_steps=4",
    ]
    assert job_run_name(params, overrides, ["resolution"]) == "resolution=rect · oracle · gui · all · agent.max_steps=4"
    assert job_run_name(params, overrides, ["agent.max_steps", "+model"]) == "agent.max_steps=4 · oracle · rect · gui · all"
    assert differs_tag(overrides, ["resolution", "agent.max_steps"]) == {
        "mcpworld.differs": "resolution=rect · agent.max_steps=4"
    }
    assert differs_tag(overrides, []) == {}
    # not a sweep: model · resolution · modality · app, then what else was overridden
    assert job_run_name(params, overrides) == "oracle · rect · gui · all · agent.max_steps=4"
    assert job_run_name(params) == "oracle · rect · gui · all"
    assert sweep_run_name(["resolution=square,rect", "tracking.experiment=x"], "/o/sweep") == "resolution=square,rect · sweep"
    assert sweep_run_name([], "/o/multirun/2026-11-25/10-00-00") == "10-00-00 · sweep"
    tags = source_tags({"mcpworld.git.commit": "a" * 40}, ["/x/mcpworld/__main__.py", "-m", "task=[a, b]"])
    assert tags["mlflow.source.git.commit"] == "a" * 40 and tags["mlflow.source.name"] == "python -m mcpworld"
    assert tags["mlflow.note.content"] == "python -m mcpworld -m 'task=[a, b]'"
    assert "mlflow.source.git.commit" not in source_tags({"mcpworld.git.commit": "unknown"})


def test_names_in_a_sweep_are_unique_and_fit_mlflow() -> None:
    """Every job and episode of a 2 × 2 sweep (resolution × max_steps, two tasks, two attempts) has a
    name of its own, the task first on episodes; a sweep over long values stays unique within 250."""
    swept, names = ["resolution", "agent.max_steps"], []
    for res in ("square", "rect"):
        for steps in ("4", "8"):
            overrides = [f"resolution={res}", f"agent.max_steps={steps}", "provider=oracle"]
            job = job_params(resolved(res))
            names.append(job_run_name(job, overrides, swept))
            assert names[-1].startswith(f"resolution={res} · agent.max_steps={steps} · ")
            differs = differs_tag(overrides, swept)["mcpworld.differs"]
            for task in ("mousepad/create_todo", "xterm/set_theme"):
                for attempt in (0, 1):
                    result = EpisodeResult(task_id=task, app=task.split("/")[0], attempt=attempt, labels=labels(res))
                    names.append(episode_run_name(result, differs))
                    assert names[-1].startswith(f"{task} #{attempt} · oracle · {res}")
    assert len(set(names)) == len(names) == 4 + 4 * 4
    long = [f"task=[{','.join(f'suite/t{i}_{side}' for i in range(60))}]" for side in ("a", "b")]
    cut = {job_run_name(job_params(resolved()), [value], ["task"]) for value in long}
    assert len(cut) == 2 and all(len(name) <= MAX_RUN_NAME for name in cut)


def test_the_swept_keys_are_read_from_the_folder_hydras_sweeper_wrote(tmp_path: Path) -> None:
    """A real Hydra multirun (command-line sweeps, a preset's ``hydra.sweeper.params``, a list that is
    no sweep): each job finds what its sweep sweeps in ``multirun.yaml`` beside it."""
    (tmp_path / "c.yaml").write_text(
        "a: 1\nb: 2\nc: [1]\nhydra:\n  sweep:\n    dir: out\n  sweeper:\n    params:\n      a: 1,2\n"
    )
    (tmp_path / "app.py").write_text(
        "import hydra\nfrom pathlib import Path\nfrom hydra.core.hydra_config import HydraConfig\n"
        "from mcpworld.telemetry.tracking.sweep import swept_keys\n"
        "@hydra.main(version_base=None, config_path='.', config_name='c')\n"
        "def main(cfg):\n    hc = HydraConfig.get()\n"
        "    print('SWEPT', sorted(swept_keys(Path(hc.runtime.output_dir).parent)), list(hc.overrides.task))\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "app.py", "-m", "b=3,4", "c=[1,2]", "+d=range(1,2)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("SWEPT")]
    assert len(lines) == 4 and all(line.startswith("SWEPT ['a', 'b', 'd']") for line in lines), lines
    assert swept_keys(tmp_path) == [] and swept_keys(tmp_path / "nowhere") == []  # no sweep here
    (tmp_path / "multirun.yaml").write_text("hydra: [")  # broken: named as a single run is
    assert swept_keys(tmp_path) == []


def test_tool_spans_are_named_by_what_they_did() -> None:
    assert tool_span_name({"tool": "computer", "args": '{"action": "left_click", "coordinate": [1, 2]}'}) == "computer.left_click"
    assert tool_span_name({"tool": "computer", "args": '{"action": "type", "text": "very long …'}) == "computer.type"
    assert tool_span_name({"tool": "computer", "args": "{}"}) == "computer"
    assert tool_span_name({"tool": "bash", "args": '{"command": "ls"}'}) == "bash"
    assert tool_span_name({"tool": "filesystem-read_file"}) == "filesystem-read_file"


def episode_events(start: float) -> list[dict[str, Any]]:
    """A trace as an episode writes it: setup, two model calls, two tool calls with screenshots,
    a key step seen live, the evaluation, the end."""
    return [
        {
            "type": "episode_start",
            "t": 0.0,
            "ts": start,
            "task": "mousepad/create_todo",
            "attempt": 0,
            "instruction": "write a todo",
            **labels(),
        },
        {"type": "setup_done", "t": 2.0, "ts": start + 2.0, "seconds": 2.0},
        {"type": "observation", "t": 2.1, "ts": start + 2.1, "screenshot": "screens/000.jpg"},
        {
            "type": "llm_call",
            "t": 3.0,
            "ts": start + 3.0,
            "n": 1,
            "latency_s": 0.5,
            "ttft_s": 0.2,
            "tokens_in": 100,
            "tokens_out": 10,
            "text": "click",
            "tool_calls": ["computer"],
        },
        {
            "type": "tool_call",
            "t": 3.5,
            "ts": start + 3.5,
            "tool": "computer",
            "ok": True,
            "latency_s": 0.2,
            "step": 1,
            "args": '{"action": "left_click", "coordinate": [5, 5]}',
        },
        {"type": "observation", "t": 3.6, "ts": start + 3.6, "screenshot": "screens/001.jpg", "step": 1},
        {"type": "key_step", "t": 3.7, "ts": start + 3.7, "index": 0, "name": "opened", "via": "check"},
        {"type": "llm_call", "t": 5.0, "ts": start + 5.0, "n": 2, "latency_s": 0.7, "tokens_in": 150, "tokens_out": 12},
        {
            "type": "tool_call",
            "t": 5.5,
            "ts": start + 5.5,
            "tool": "bash",
            "ok": False,
            "latency_s": 0.1,
            "step": 2,
            "args": '{"command": "false"}',
            "error": "exit 1",
        },
        {"type": "evaluation", "t": 12.0, "ts": start + 12.0, "score": 1.0, "metrics": [{"name": "exact_match#0", "score": 1.0}]},
        {"type": "episode_end", "t": 13.08, "ts": start + 13.08, "status": "success", "score": 1.0},
    ]


def episode_result() -> EpisodeResult:
    return EpisodeResult(
        task_id="mousepad/create_todo",
        app="mousepad",
        status="success",
        score=1.0,
        duration_s=13.08,
        setup_s=2.0,
        eval_s=1.0,
        steps=2,
        llm_calls=2,
        tokens_in=250,
        tokens_out=22,
        llm_latency_s=[0.5, 0.7],
        metrics=[MetricOutcome("exact_match#0", 1.0), MetricOutcome("check_file#1", 1.0)],
        key_steps={
            "total": 4,
            "completed": 3,
            "ratio": 3 / 4,
            "progress": 3 / 4,
            "timeline": [
                {"name": "opened", "index": 0, "t": 3.5, "via": "check"},
                {"name": "typed", "index": 1, "t": 5.45, "via": "check"},  # while bash ran
                {"name": "saved", "index": 2, "t": None, "via": "check"},
            ],
        },
        labels=labels(),
    )


def test_an_episode_gives_curves_per_step_whose_last_point_is_its_total() -> None:
    result, events = episode_result(), episode_events(1000.0)
    series = step_series(result, events)
    by_key: dict[str, list[tuple[float, int, int]]] = {}
    for key, value, ts, step in series:
        by_key.setdefault(key, []).append((value, ts, step))
    assert by_key["tokens_in"] == [(100.0, 1_003_000, 1), (250.0, 1_005_000, 2)]  # cumulative: ends on the total
    assert [v for v, _, _ in by_key["tokens_out"]] == [10.0, 22.0]
    assert by_key["llm_latency_s"] == [(0.5, 1_003_000, 1), (0.7, 1_005_000, 2)]
    # 0 at the start; "opened" at agent step 1 (t=3.5), "typed" while step 2 ran (it began at 5.4, its event
    # came at 5.5); "saved" judged at the end (the last step, the end time)
    assert by_key["keysteps.completed"] == [(0.0, 1_000_000, 0), (1.0, 1_003_500, 1), (2.0, 1_005_450, 2), (3.0, 1_013_080, 2)]
    metrics = episode_metrics(result, series)
    assert not {"tokens_in", "tokens_out", "keysteps.completed"} & set(metrics)  # the curves give them
    assert not [k for k in metrics if k.startswith("metric.")]  # per-evaluator: result.json and the span
    assert metrics["duration_s"] == 13.08 and metrics["success"] == 1.0 and metrics["keysteps.ratio"] == 0.75
    assert step_series(EpisodeResult(task_id="t", app="a"), []) == []


def test_an_episode_run_spans_its_real_start_and_end() -> None:
    result = episode_result()
    assert episode_window(result, episode_events(1000.0), written_at=2000.0) == (1_000_000, 1_013_080)
    assert episode_window(result, [], written_at=2000.0) == (1_986_920, 2_000_000)  # no trace: result.json's time


@pytest.mark.slow  # a real sqlite store (MLflow's import and migrations: a few seconds)
def test_an_episode_run_and_its_trace_read_as_mlflow_shows_them(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    from mcpworld.telemetry.tracking.logger import NOTE, MlflowLogger

    uri = f"sqlite:///{tmp_path}/m.db"
    job_dir = tmp_path / "job"
    folder = job_dir / "episodes" / "mousepad" / "create_todo" / "0"
    folder.mkdir(parents=True)
    start = time.time() - 60
    (folder / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episode_events(start)))
    result = episode_result()
    result.write(folder / "result.json")
    logger = MlflowLogger(uri, str(tmp_path / "art"), "vocab")
    params = job_params(resolved())
    commit = {"mcpworld.git.commit": "c" * 40}
    overrides, swept = ["resolution=square", "agent.max_steps=4"], ["resolution", "agent.max_steps"]  # a sweep's job
    logger.start_job(
        job_run_name(params, overrides, swept),
        params,
        {
            JOB_DIR: str(job_dir),
            **commit,
            **differs_tag(overrides, swept),
            **source_tags(commit, ["mcpworld", "-m", "resolution=square,rect"]),
        },
        start_ms=int((start - 5) * 1000),
    )
    logger.log_episode(result, folder)
    assert (
        logger.finish_job(
            {"success": 1.0, "episodes": 1.0, "note": "text"},
            [],
            job_dir=job_dir,  # type: ignore[dict-item]
            end_ms=int((start + 20) * 1000),
        )
        == []
    )

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("vocab")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    assert exp.tags[NOTE].splitlines()[0] == "`python -m mcpworld -m resolution=square,rect`"
    runs = {r.data.tags["mcpworld.level"]: r for r in client.search_runs([exp.experiment_id])}
    job, episode = runs["job"], runs["episode"]
    assert job.info.run_name == "resolution=square · agent.max_steps=4 · oracle · gui · all"
    assert job.data.params == params
    assert (job.info.start_time, job.info.end_time) == (int((start - 5) * 1000), int((start + 20) * 1000))
    assert job.data.metrics == {"success": 1.0, "episodes": 1.0}  # whatever the summary's numbers are, by their names
    assert episode.info.run_name == "mousepad/create_todo #0 · oracle · square · agent.max_steps=4"
    assert episode.data.tags["mcpworld.differs"] == "resolution=square · agent.max_steps=4"
    assert (episode.info.start_time, episode.info.end_time) == (int(start * 1000), int(start * 1000) + 13_080)
    assert episode.data.params == episode_params(params, result)
    assert episode.data.tags["mlflow.source.git.commit"] == "c" * 40 and episode.data.tags["task_id"] == result.task_id
    assert "resolution" not in episode.data.tags  # a param, not also a tag: grouping by it finds one column
    assert episode.data.metrics["tokens_in"] == 250.0 and episode.data.metrics["keysteps.completed"] == 3.0
    assert not [k for k in episode.data.metrics if k.startswith("metric.")]
    assert [(m.step, m.value) for m in client.get_metric_history(episode.info.run_id, "tokens_in")] == [(1, 100.0), (2, 250.0)]

    (trace,) = client.search_traces(locations=[exp.experiment_id], filter_string="tag.resolution = 'square'")
    assert not client.search_traces(locations=[exp.experiment_id], filter_string="tag.resolution = 'rect'")
    tags = trace.info.tags
    assert (tags["task"], tags["app"], tags["model"], tags["modality"], tags["mcpworld.job_run_id"]) == (
        "mousepad/create_todo",
        "mousepad",
        "oracle",
        "gui",
        job.info.run_id,
    )
    assert trace.info.token_usage == {"input_tokens": 250, "output_tokens": 22, "total_tokens": 272}
    spans = trace.data.spans
    root = spans[0]
    assert root.span_type == "AGENT" and root.name == episode.info.run_name
    assert [(s.name, s.span_type) for s in spans[1:]] == [  # (the phases between measured spans: spans.PHASES)
        ("setup", "TASK"),
        ("agent start", "TASK"),
        ("llm call 1", "LLM"),
        ("computer.left_click", "TOOL"),
        ("llm call 2", "LLM"),
        ("bash", "TOOL"),
        ("agent end", "TASK"),
        ("evaluation", "EVALUATOR"),
        ("end", "TASK"),
    ]
    setup, click, bash, evaluation = spans[1], spans[4], spans[6], spans[8]
    assert (setup.start_time_ns, setup.end_time_ns) == (int(start * 1e9), int((start + 2.0) * 1e9))
    assert click.outputs == {"screenshot": "screens/001.jpg", "output": None} and bash.status.status_code == "ERROR"
    assert evaluation.outputs["metrics"] == [{"name": "exact_match#0", "score": 1.0}]
    assert [e.name for e in root.events] == ["key step: opened", "key step: typed", "key step: saved"]
    assert root.events[0].timestamp == int((start + 3.5) * 1e9)


@pytest.mark.slow  # a real sqlite store
def test_the_report_reads_runs_from_before_and_after_the_vocabulary_as_one_table(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    from mcpworld.report.tables import group_episodes, load_episodes, tool_success
    from mcpworld.telemetry.tracking.logger import MlflowLogger

    uri = f"sqlite:///{tmp_path}/m.db"
    job_dir = tmp_path / "job"
    folder = job_dir / "episodes" / "mousepad" / "create_todo" / "0"
    folder.mkdir(parents=True)
    (folder / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episode_events(time.time() - 60)))
    result = episode_result()
    result.tool_calls = {"computer": ToolCounts(ok=1), "filesystem-read_file": ToolCounts(error=1)}
    result.write(folder / "result.json")
    logger = MlflowLogger(uri, str(tmp_path / "art"), "mixed", traces=False)
    logger.start_job("new", job_params(resolved()), {JOB_DIR: str(job_dir)})
    logger.log_episode(result, folder)
    assert logger.finish_job({}, [], job_dir=job_dir) == []
    client = MlflowClient(uri)  # an episode run as mcpworld wrote them before: its own param and tag names
    old = client.create_run(
        client.get_experiment_by_name("mixed").experiment_id,
        run_name="xterm/set_theme#0",
        tags={"mcpworld.level": "episode", "task_id": "xterm/set_theme", "app": "xterm", "modality": "gui", "status": "failure"},
    )
    for key, value in {"task_id": "xterm/set_theme", "app": "xterm", "attempt": "0", "termination": "done", **labels()}.items():
        client.log_param(old.info.run_id, key, value)
    for key, value in {
        "success": 0.0,
        "score": 0.0,
        "steps": 3.0,
        "tokens_in": 10.0,
        "tool.computer.ok": 1.0,
        "tool.computer.error": 1.0,
        "tool.computer_use.ok": 1.0,
    }.items():  # a column per tool then
        client.log_metric(old.info.run_id, key, value)
    client.set_terminated(old.info.run_id)

    episodes = load_episodes(uri, "mixed", None)
    assert sorted(e.task_id for e in episodes) == ["mousepad/create_todo", "xterm/set_theme"]
    (group,) = group_episodes(episodes, ["model", "resolution", "modality"]).values()  # old and new: one group
    assert sorted(e.success for e in group) == [0.0, 1.0]
    new = next(e for e in episodes if e.task_id == "mousepad/create_todo")
    assert new.metrics["tokens_in"] == 250.0  # the per-call curve ends on the episode's total
    assert (new.metrics["tool_calls.computer"], new.metrics["tool_success.mcp"]) == (1.0, 0.0)
    # tool success per family over both: the new episode's 1 of 1 computer calls, the old one's 2 of 3
    assert tool_success(group) == {"tool_success.computer": 3 / 4, "tool_success.mcp": 0.0}
