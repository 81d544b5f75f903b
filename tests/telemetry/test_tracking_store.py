"""The MLflow tracker against a real sqlite store: every name it sends is one MLflow takes; a store
that is down, locked or unopenable costs one summary line and loses nothing (pending, then uploaded);
a resumed job reopens its run and replaces an episode's earlier run; no run is left RUNNING by a
logging failure; the tracker process ignores Ctrl-C, ends with its job, and cannot hold it up."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from omegaconf import OmegaConf

from mcpworld.core.result import EpisodeResult, MetricOutcome
from mcpworld.telemetry import spans
from mcpworld.telemetry.tracking.keys import JOB_DIR, mlflow_key
from mcpworld.telemetry.tracking.logger import MlflowLogger
from mcpworld.telemetry.tracking.pending import PENDING_FILE
from mcpworld.telemetry.tracking.process import MlflowTracker
from mcpworld.telemetry.tracking.sweep import finish_sweep_run, runs_link, start_sweep_run
from mcpworld.telemetry.upload import upload
from tests.helpers.job_folders import write_episode

ROOT = Path(__file__).resolve().parents[2]


def client_for(db: Path) -> Any:
    from mlflow.tracking import MlflowClient

    return MlflowClient(f"sqlite:///{db}")


def runs(db: Path, experiment: str, deleted: bool = False) -> list[Any]:
    from mlflow.entities import ViewType

    client = client_for(db)
    exp = client.get_experiment_by_name(experiment)
    view = ViewType.DELETED_ONLY if deleted else ViewType.ACTIVE_ONLY
    return client.search_runs([exp.experiment_id], run_view_type=view, max_results=1000)


def by_level(found: list[Any], level: str) -> list[Any]:
    return [r for r in found if r.data.tags.get("mcpworld.level") == level]


def job_folder(tmp_path: Path, uri: str, experiment: str) -> Path:
    """A job folder that ``upload`` can read: its resolved config and summary."""
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    config = {
        "tracking": {"uri": uri, "experiment": experiment, "artifact_root": str(tmp_path / "art")},
        "model": {"name": "oracle"},
    }
    (job_dir / "resolved_config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(config)))
    (job_dir / "summary.json").write_text(json.dumps({"job": "job", "status": "FINISHED", "success_rate": 1.0}))
    return job_dir


def one_warning_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err[-3000:]
    assert lines[0].startswith("mcpworld: warning: ") and "Traceback" not in err
    return lines[0]


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    "name",
    [
        "metric.exact_match#0",
        "tool.a/b.ok",
        "../x",
        "a//b/./c",
        "/lead",
        "trail/",
        "",
        ".",
        "..hidden",
        "tab\there",
        "ünïcode",
        "q?&=*",
        "x" * 400,
        "a/" + "." * 300,
    ],
)
def test_any_name_becomes_a_valid_stable_mlflow_key(name: str) -> None:
    from mlflow.utils.validation import _validate_metric_name, _validate_param_name, _validate_tag_name

    key = mlflow_key(name)
    for validate in (_validate_metric_name, _validate_param_name, _validate_tag_name):
        validate(key)
    assert len(key) <= 250 and mlflow_key(key) == key  # stable: a valid key maps to itself


def test_valid_names_are_kept_and_repeated_metrics_stay_readable() -> None:
    for name in (
        "metric.exact_match",
        "tool.filesystem-read_file.ok",
        "gpu.energy_j",
        "mcpworld.git.commit",
        "agent.max_steps",
        "a b:c/d",
    ):
        assert mlflow_key(name) == name
    assert mlflow_key("metric.exact_match#0") == "metric.exact_match.0"
    assert mlflow_key("metric.exact_match#1") != mlflow_key("metric.exact_match#0")


def every_config() -> list[Any]:
    """The default config and every option of every config group, composed as a run would be."""
    from hydra import compose, initialize_config_dir

    from mcpworld.config.schema import register

    register()
    conf = ROOT / "mcpworld" / "conf"
    overrides: list[list[str]] = [[]]
    for group in ("model", "provider", "resolution", "app", "modality", "env", "tracking", "experiment", "agent", "evaluator"):
        overrides += [[f"{group}={f.stem}"] for f in sorted((conf / group).glob("*.yaml"))]
    configs = []
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        for over in overrides:
            configs.append(compose("config", overrides=over))
    return configs


def every_result(cfg: Any) -> list[EpisodeResult]:
    """One result per built-in task, with every metric name its evaluator gives, the tools of the
    modality, key steps and GPU numbers: the metric names a job of every task would log."""
    from mcpworld.agent.tools.mcp import tool_name
    from mcpworld.core.paths import BUILTIN_TASKS
    from mcpworld.evaluation.spec import validate_spec
    from mcpworld.evaluation.templates import builtin_templates, expand_task
    from mcpworld.run.episode import labels
    from mcpworld.tasks.select import discover

    out = []
    for task in discover(BUILTIN_TASKS):
        expand_task(task, builtin_templates())
        names = validate_spec(task.evaluator.spec, str(task.source)).outcome_names() if task.evaluator else []
        result = EpisodeResult(
            task_id=task.id,
            app=task.app,
            status="success",
            labels=labels(cfg),
            metrics=[MetricOutcome(n, 1.0) for n in [*names, "grader", "handler", "infeasible"]],
            ttft_s=[0.1],
            generation_s=[0.2],
            llm_latency_s=[0.3],
            llm_energy_j=[1.0, None],
            key_steps={"total": 2, "completed": 1, "ratio": 0.5, "progress": 0.5},
            gpu={
                "gpu.samples": 3.0,
                "gpu.energy_j": 1.0,
                "gpu.power_w_mean": 1.0,
                "gpu.power_w_max": 1.0,
                "gpu.util_mean": 1.0,
                "gpu.mem_peak_mb": 1.0,
                "gpu.temp_max_c": 1.0,
            },
        )
        for tool in [*cfg.modality.tools, "unknown", tool_name("files.v2", "read/file:all"), tool_name("s", "x" * 90)]:
            result.count_tool(tool, True)
            result.count_tool(tool, False)
        out.append(result)
    return out


@pytest.mark.slow
def test_every_name_the_project_emits_is_one_mlflow_takes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Params of every config group, metrics of every built-in task, job and sweep numbers, every
    tag: recorded as sent to MLflow and checked with MLflow's own validators (and the store took them)."""
    from mlflow.tracking import MlflowClient
    from mlflow.utils.validation import _validate_metric_name, _validate_param_name, _validate_tag_name

    from mcpworld.agent.providers.ollama import OllamaProvider
    from mcpworld.core.secrets import strip_secrets
    from mcpworld.run.job import summarize
    from mcpworld.run.summary import sweep_counts
    from mcpworld.telemetry.provenance import run_tags
    from mcpworld.telemetry.tracking.vocabulary import MAX_JOB_PARAMS, job_params

    sent: dict[str, set[str]] = {"metric": set(), "param": set(), "tag": set()}
    real_create, real_batch = MlflowClient.create_run, MlflowClient.log_batch

    def create_run(self, experiment_id, start_time=None, tags=None, run_name=None):
        sent["tag"].update(tags or {})
        return real_create(self, experiment_id, start_time=start_time, tags=tags, run_name=run_name)

    def log_batch(self, run_id, metrics=(), params=(), tags=(), **kwargs):
        sent["metric"].update(m.key for m in metrics)
        sent["param"].update(p.key for p in params)
        sent["tag"].update(t.key for t in tags)
        return real_batch(self, run_id, metrics=metrics, params=params, tags=tags, **kwargs)

    monkeypatch.setattr(MlflowClient, "create_run", create_run)
    monkeypatch.setattr(MlflowClient, "log_batch", log_batch)
    uri = f"sqlite:///{tmp_path}/m.db"
    tracking = OmegaConf.create(
        {"tracking": {"backend": "mlflow", "uri": uri, "artifact_root": str(tmp_path / "art"), "experiment": "names"}}
    )
    assert start_sweep_run(tracking, tmp_path / "sweep", ["model=a,b", "provider.api_key=sk-x"])
    model = OllamaProvider._describe(
        SimpleNamespace(context_length=None, model="m"),
        {"digest": "d", "size": 5, "details": {"quantization_level": "Q4", "parameter_size": "8B", "family": "q"}},
        {"size_vram": 4, "context_length": 4096},
        {"model_info": {"q.context_length": 8192}, "parameters": "num_ctx 4096"},
    )
    configs = every_config()
    params: dict[str, str] = {}  # one job run takes the params of every config (the keys are what matter)
    for cfg in configs:
        one = job_params(strip_secrets(OmegaConf.to_container(cfg, resolve=True)), model.params)
        assert len(one) <= MAX_JOB_PARAMS, sorted(one)  # a job run's few decisive params, whatever its config
        params.update(one)
    resolved = OmegaConf.to_container(configs[0], resolve=True)
    logger = MlflowLogger(uri, str(tmp_path / "art"), "names", traces=False)
    job_dir = tmp_path / "job"
    logger.start_job(
        "job", {**params, **model.params}, {JOB_DIR: str(job_dir), **run_tags(resolved, "model=x")}, parent_run_id=None
    )
    results = every_result(configs[0])
    for n, result in enumerate(results):
        result.attempt = n
        (job_dir / "episodes" / result.task_id / str(n)).mkdir(parents=True)
        logger.log_episode(result, job_dir / "episodes" / result.task_id / str(n))
    summary = {
        **summarize(results, len(results)),
        **model.metrics,
        "episodes_wall_s": 1.0,
        "tracking_busy_s": 0.1,
        "tracking_wait_s": 0.1,
    }
    assert logger.finish_job(summary, [], job_dir=job_dir) == []
    assert len(configs) > 50  # every group's options were composed
    finish_sweep_run(tmp_path / "sweep", sweep_counts([("0", {"episodes": 3})]))
    validators = {"metric": _validate_metric_name, "param": _validate_param_name, "tag": _validate_tag_name}
    for kind, validate in validators.items():
        assert sent[kind]
        for name in sent[kind]:
            validate(name)
    assert "gpu.energy_per_llm_call_j" in sent["metric"]
    assert not [m for m in sent["metric"] if m.startswith("metric.")]  # per-evaluator scores: result.json, the span
    assert {"mcpworld.episode_key", "mcpworld.episode_dir", "mcpworld.config_hash", "termination", JOB_DIR} <= sent["tag"]
    assert {"max_steps", "ollama.digest", "task", "attempt", "config.sha256"} <= sent["param"]


# --------------------------------------------------------------------------- resume


def test_a_resumed_job_reopens_its_run_and_replaces_an_episodes_earlier_run(tmp_path: Path) -> None:
    db, uri = tmp_path / "m.db", f"sqlite:///{tmp_path}/m.db"
    job_dir = tmp_path / "job"
    tags = {JOB_DIR: str(job_dir), "mcpworld.config_hash": "abc"}
    first = MlflowLogger(uri, str(tmp_path / "art"), "resume")
    first.start_job("job", {"a": "1", "concurrency": "1"}, tags)
    cut, where = write_episode(job_dir, "app/cut", status="interrupted")
    broken, broken_dir = write_episode(job_dir, "app/broken", status="infra_error")
    first.log_episode(cut, where)
    first.log_episode(broken, broken_dir)
    assert first.finish_job({"episodes": 2.0}, [], status="KILLED", job_dir=job_dir) == []
    (job_run,) = by_level(runs(db, "resume"), "job")
    assert job_run.info.status == "KILLED"
    assert {r.data.tags["mcpworld.episode_key"]: r.info.status for r in by_level(runs(db, "resume"), "episode")} == {
        "app/cut/0": "KILLED",
        "app/broken/0": "FAILED",
    }

    second = MlflowLogger(uri, str(tmp_path / "art"), "resume")  # the same command again, resuming
    second.start_job("job", {"a": "1", "concurrency": "2", "new": "x"}, tags)
    assert client_for(db).get_run(job_run.info.run_id).info.status == "RUNNING"
    where.rename(where.with_name("0.interrupted1"))  # the experiment sets the unfinished try aside …
    done, where = write_episode(job_dir, "app/cut")  # … and runs it again
    second.log_episode(done, where)
    assert second.finish_job({"episodes": 2.0}, [], job_dir=job_dir) == []

    found = runs(db, "resume")
    (job,) = by_level(found, "job")
    assert job.info.run_id == job_run.info.run_id and job.info.status == "FINISHED"
    assert job.data.params["new"] == "x" and job.data.params["concurrency"] == "1"  # params are immutable …
    assert job.data.tags["mcpworld.param_changed.concurrency"] == "2"  # … so a change is noted, not lost
    episodes = {r.data.tags["mcpworld.episode_key"]: r for r in by_level(found, "episode")}
    assert sorted(episodes) == ["app/broken/0", "app/cut/0"]  # one run per episode
    assert episodes["app/cut/0"].info.status == "FINISHED" and episodes["app/cut/0"].data.metrics["success"] == 1.0
    assert episodes["app/cut/0"].data.tags["mcpworld.episode_dir"] == str(where.absolute())
    (old,) = runs(db, "resume", deleted=True)
    assert old.data.tags["mcpworld.episode_key"] == "app/cut/0" and old.info.status == "KILLED"


def test_a_resumed_sweep_reopens_its_parent_run(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    cfg = OmegaConf.create(
        {
            "tracking": {
                "backend": "mlflow",
                "uri": f"sqlite:///{db}",
                "artifact_root": str(tmp_path / "art"),
                "experiment": "sweep",
            }
        }
    )
    first = start_sweep_run(cfg, tmp_path / "sweep", ["model=a,b"])
    finish_sweep_run(tmp_path / "sweep", {"jobs": 1.0}, status="KILLED")
    assert client_for(db).get_run(first).info.status == "KILLED"
    assert start_sweep_run(cfg, tmp_path / "sweep", ["model=a,b"]) == first
    assert client_for(db).get_run(first).info.status == "RUNNING"
    finish_sweep_run(tmp_path / "sweep", {"jobs": 2.0}, status="FINISHED")
    (run,) = runs(db, "sweep")
    assert run.info.status == "FINISHED" and run.data.metrics["jobs"] == 2.0
    assert run.info.run_name == "model=a,b · sweep"  # its overrides first: the part the runs table shows
    # the link printed under the sweep table opens the runs (MLflow 3.17.2's plain link: the GenAI overview)
    assert runs_link(tmp_path / "sweep") == (
        f"http://127.0.0.1:5000/#/experiments/{run.info.experiment_id}/runs?workflowType=machine_learning "
        f"(once `mlflow ui --backend-store-uri sqlite:///{db}` serves it)"
    )
    assert runs_link(tmp_path / "not-a-sweep") is None


def test_a_sweep_is_named_by_its_command_line_and_its_presets_swept_values() -> None:
    from mcpworld.run.summary import sweep_overrides

    config = OmegaConf.create(
        {
            "hydra": {
                "overrides": {"task": ["experiment=demo", "resolution=square"]},
                "sweeper": {"params": {"resolution": "square,rect", "seed": "1,2"}},
            }
        }
    )
    assert sweep_overrides(config) == ["experiment=demo", "resolution=square", "seed=1,2"]
    config.hydra.sweeper.params = None
    assert sweep_overrides(config) == ["experiment=demo", "resolution=square"]


def test_upload_names_a_sweeps_job_as_the_job_would_have(tmp_path: Path) -> None:
    """A job folder of a sweep (Hydra's ``multirun.yaml`` beside it): its run leads with the swept
    override, and its episodes end with it."""
    db, uri = tmp_path / "m.db", f"sqlite:///{tmp_path}/m.db"
    job_dir = job_folder(tmp_path, uri, "uploaded-sweep")
    (tmp_path / "multirun.yaml").write_text(
        "hydra:\n  overrides:\n    task:\n    - agent.max_steps=4,8\n    - provider=oracle\n  sweeper:\n    params: null\n"
    )
    (job_dir / ".hydra").mkdir()
    (job_dir / ".hydra" / "overrides.yaml").write_text("- agent.max_steps=8\n- provider=oracle\n")
    config = OmegaConf.load(job_dir / "resolved_config.yaml")
    config.merge_with({"resolution": {"name": "square"}, "modality": {"name": "gui"}, "app": {"name": "all"}})
    (job_dir / "resolved_config.yaml").write_text(OmegaConf.to_yaml(config))
    write_episode(job_dir, "app/x")
    assert upload(job_dir) == []
    found = runs(db, "uploaded-sweep")
    (job,) = by_level(found, "job")
    (episode,) = by_level(found, "episode")
    assert job.info.run_name == "agent.max_steps=8 · oracle · square · gui · all"
    assert episode.info.run_name == "app/x #0 · oracle · agent.max_steps=8"  # (its labels name no resolution)
    assert job.data.tags["mcpworld.differs"] == episode.data.tags["mcpworld.differs"] == "agent.max_steps=8"


# --------------------------------------------------------------------------- failures


def test_a_failed_episode_log_leaves_no_running_run_and_its_retry_no_duplicate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "m.db"
    logger = MlflowLogger(f"sqlite:///{db}", str(tmp_path / "art"), "partial", traces=False)
    logger.RETRY_AFTER_S = 0.0
    job_dir = tmp_path / "job"
    logger.start_job("job", {}, {JOB_DIR: str(job_dir)})
    result, where = write_episode(job_dir, "app/x")
    real, calls = logger.client.log_artifact, []

    def fail_once(run_id: str, path: str, artifact_path: str | None = None) -> None:
        calls.append(run_id)
        if len(calls) == 1:
            raise OSError("disk full")
        real(run_id, path, artifact_path)

    monkeypatch.setattr(logger.client, "log_artifact", fail_once)
    logger.log_episode(result, where)
    assert [r[2]["key"] for r in logger.pending] == ["app/x/0"]
    assert not by_level(runs(db, "partial"), "episode")  # the half-logged run did not stay
    (dropped,) = runs(db, "partial", deleted=True)
    assert dropped.info.status == "FAILED"  # closed, not RUNNING
    assert logger.finish_job({}, [], job_dir=job_dir) == []  # the catch-up logs it whole
    (episode,) = by_level(runs(db, "partial"), "episode")
    assert episode.info.status == "FINISHED" and not [r for r in runs(db, "partial") if r.info.status == "RUNNING"]


def test_an_unopenable_store_costs_one_line_and_upload_logs_each_episode_once(
    tmp_path: Path, capfd: pytest.CaptureFixture
) -> None:
    db = tmp_path / "m.db"
    db.mkdir()  # a folder where the sqlite file should be: MLflow cannot open it
    uri = f"sqlite:///{db}"
    job_dir = job_folder(tmp_path, uri, "outage")
    tracker = MlflowTracker(uri, str(tmp_path / "art"), "outage")
    tracker.start_job("job", {"a": "1"}, {JOB_DIR: str(job_dir)})
    for task in ("app/x", "app/y"):
        tracker.log_episode(*write_episode(job_dir, task))
    write_episode(job_dir, "app/y", folder="0.infra_error1", status="infra_error")  # a set-aside try
    started = time.monotonic()
    not_logged = tracker.finish_job({"success_rate": 1.0}, [], job_dir=job_dir)
    assert time.monotonic() - started < 30
    line = one_warning_line(capfd.readouterr().err)
    assert "4 item(s) not logged" in line and "episode app/x#0" in line and "unable to open database file" in line
    assert len(not_logged) == 4
    pending = json.loads((job_dir / PENDING_FILE).read_text())
    assert [r["kind"] for r in pending["not_logged"]] == ["job", "episode", "episode", "summary"]

    db.rmdir()  # the store is back
    assert upload(job_dir) == []
    assert not (job_dir / PENDING_FILE).exists()
    assert upload(job_dir) == []  # again: nothing to add
    found = runs(db, "outage")
    (job,) = by_level(found, "job")
    assert job.info.status == "FINISHED" and job.data.params["model"] == "oracle"  # from resolved_config.yaml
    assert sorted(r.data.tags["mcpworld.episode_key"] for r in by_level(found, "episode")) == ["app/x/0", "app/y/0"]
    assert all(r.data.tags["mlflow.parentRunId"] == job.info.run_id for r in by_level(found, "episode"))
    assert len(client_for(db).get_metric_history(job.info.run_id, "success_rate")) == 1
    assert not runs(db, "outage", deleted=True)


def test_upload_adds_to_the_existing_job_run_only_what_it_lacks(tmp_path: Path) -> None:
    db, uri = tmp_path / "m.db", f"sqlite:///{tmp_path}/m.db"
    job_dir = job_folder(tmp_path, uri, "partial-upload")
    logger = MlflowLogger(uri, str(tmp_path / "art"), "partial-upload")
    logger.start_job("job", {"a": "1"}, {JOB_DIR: str(job_dir)})
    logger.log_episode(*write_episode(job_dir, "app/x"))
    write_episode(job_dir, "app/y")  # its log was lost (the tracker process was killed)
    logged = {r.info.run_id for r in runs(db, "partial-upload")}
    assert upload(job_dir) == []
    found = runs(db, "partial-upload")
    assert len(by_level(found, "job")) == 1 and {r.info.run_id for r in found} > logged  # x kept, y added
    assert sorted(r.data.tags["mcpworld.episode_key"] for r in by_level(found, "episode")) == ["app/x/0", "app/y/0"]
    assert by_level(found, "job")[0].info.status == "FINISHED"
    assert upload(job_dir) == [] and len(runs(db, "partial-upload")) == 3


class FastBusy:
    """MLflow waits 20 s on a locked sqlite file (``PRAGMA busy_timeout``); the test need not."""

    def __init__(self, sql: Any):
        self._sql = sql

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sql, name)

    def text(self, statement: str) -> Any:
        return self._sql.text(statement.replace("busy_timeout = 20000", "busy_timeout = 200"))


def test_a_locked_store_loses_no_trace_and_prints_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    import mlflow.store.db.utils as db_utils

    monkeypatch.setattr(db_utils, "sql", FastBusy(db_utils.sql))
    db, uri = tmp_path / "m.db", f"sqlite:///{tmp_path}/m.db"
    job_dir = job_folder(tmp_path, uri, "locked")
    logger = MlflowLogger(uri, str(tmp_path / "art"), "locked")
    logger.start_job("job", {}, {JOB_DIR: str(job_dir)})
    real = spans.log_trace

    def locked(*args: Any, **kwargs: Any) -> Any:  # another process holds the store while the trace is written
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        try:
            return real(*args, **kwargs)
        finally:
            other.execute("ROLLBACK")
            other.close()

    monkeypatch.setattr(spans, "log_trace", locked)
    logger.log_episode(*write_episode(job_dir, "app/x"))
    assert logger.finish_job({"success_rate": 1.0}, [], job_dir=job_dir)
    line = one_warning_line(capfd.readouterr().err)
    assert "episode app/x#0" in line and "Failed to send trace" in line and "database is locked" in line
    pending = json.loads((job_dir / PENDING_FILE).read_text())
    assert [r["kind"] for r in pending["not_logged"]] == ["episode"]  # the summary was caught up
    assert not by_level(runs(db, "locked"), "episode")
    assert not [
        r
        for r in runs(db, "locked") + runs(db, "locked", deleted=True)
        if r.info.status == "RUNNING" and r.data.tags["mcpworld.level"] == "episode"
    ]

    monkeypatch.setattr(spans, "log_trace", real)  # the lock is gone
    assert upload(job_dir) == []
    (episode,) = by_level(runs(db, "locked"), "episode")
    client = client_for(db)
    import mlflow

    mlflow.set_tracking_uri(uri)
    traces = client.search_traces(locations=[episode.info.experiment_id])
    assert [t.info.request_metadata.get("mlflow.sourceRun") for t in traces].count(episode.info.run_id) == 1
    assert by_level(runs(db, "locked"), "job")[0].info.status == "FINISHED"


# --------------------------------------------------------------------------- the tracker process


def test_the_tracker_process_leaves_ctrl_c_and_sigterm_to_the_job(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    tracker = MlflowTracker(f"sqlite:///{db}", str(tmp_path / "art"), "sigint", traces=False)
    tracker.start_job("job", {}, {JOB_DIR: str(tmp_path / "job")})
    time.sleep(0.5)
    for sig in (signal.SIGINT, signal.SIGTERM):  # what a terminal or scheduler sends the whole process group
        os.kill(tracker._process.pid, sig)
    tracker.log_episode(*write_episode(tmp_path / "job", "app/x", trace=False))
    assert tracker.finish_job({"episodes": 1.0}, [], status="KILLED", job_dir=tmp_path / "job") == []
    assert sorted(r.info.status for r in runs(db, "sigint")) == ["FINISHED", "KILLED"]


def test_finish_job_returns_in_bounded_time_when_the_tracker_is_stuck(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    monkeypatch.setattr(MlflowLogger, "_log_episode", lambda self, result, where: time.sleep(600))  # forked with it
    tracker = MlflowTracker(f"sqlite:///{tmp_path}/m.db", str(tmp_path / "art"), "stuck", traces=False)
    tracker.KILLED_TIMEOUT_S = 3.0
    job_dir = tmp_path / "job"
    tracker.start_job("job", {}, {JOB_DIR: str(job_dir)})
    tracker.log_episode(*write_episode(job_dir, "app/x", trace=False))
    started = time.monotonic()
    (why,) = tracker.finish_job({}, [], status="KILLED", job_dir=job_dir)
    assert time.monotonic() - started < 15 and "did not finish within 3 s" in why
    assert not tracker._process.is_alive()
    assert "did not finish" in one_warning_line(capfd.readouterr().err)
    assert json.loads((job_dir / PENDING_FILE).read_text())["not_logged"][-1]["kind"] == "unknown"


@pytest.mark.parametrize("end", ["os._exit(0)", "sys.exit(0)"])  # killed (as by kill -9), or exits unfinished
def test_the_tracker_process_ends_with_its_job(tmp_path: Path, end: str) -> None:
    script = textwrap.dedent(f"""
        import os, sys
        from mcpworld.telemetry.tracking.process import MlflowTracker
        tracker = MlflowTracker("sqlite:///{tmp_path}/m.db", "{tmp_path}/art", "orphan", traces=False)
        tracker.start_job("job", {{}}, {{}})
        print(tracker._process.pid, flush=True)
        {end}
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    child = int(proc.stdout.split()[0])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{child}/stat").read_text().split(")")[-1].split()[0] == "Z":
                return  # exited, not yet reaped by its new parent
        except FileNotFoundError:
            return
        time.sleep(0.2)
    os.kill(child, signal.SIGKILL)
    pytest.fail("the tracker process outlived its job")


def test_a_store_this_machine_cannot_reach_is_named_with_the_reason(tmp_path, monkeypatch):
    from mcpworld.telemetry.tracking.store import unreachable

    assert unreachable(f"sqlite:///{tmp_path}/mlflow.db") is None
    assert "does not exist here" in unreachable(f"sqlite:///{tmp_path}/not-shared/mlflow.db")
    monkeypatch.chdir(tmp_path)
    assert unreachable("sqlite:///outputs/mlflow.db") is None and (tmp_path / "outputs").is_dir()  # made, as the tracker does
    assert unreachable("http://127.0.0.1:9") is not None  # nothing listens
    assert unreachable(str(tmp_path / "mlruns")) is None
