"""Trackers: a multirun's parent run (``mcpworld.level=sweep``) → one run per Hydra job (``job``) →
one child run per episode (``episode``) with its MLflow trace. ``none`` never imports mlflow.

Trackers only read results. MLflow work happens in a child process, so episodes never wait for it
(nor share an interpreter lock with it); the job waits for it to drain at the end. A tracking failure (a remote ``mlflow server``
down, a full disk) never loses what is on disk: failed operations are retried when the job ends
(the tracker catches up), and what still failed is named in one message and in
``tracking_pending.json``, from where ``python -m mcpworld.telemetry.upload JOB_DIR`` logs it later.
"""

from __future__ import annotations

import json
import os
import queue
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable

from mcpworld.errors import UserError
from mcpworld.result import EpisodeResult

# whole words of a key (``api_key``, ``access_token``), not ``max_tokens``
SECRET_KEY = re.compile(r"(^|[_.-])(api[_-]?key|apikey|token|secret|password|passwd|authorization)($|[_.-])", re.I)
ASSIGNMENT = re.compile(r"([A-Za-z0-9_.-]+)(\s*[=:]\s*)([^\s,\]]+)")
MAX_PARAM_LEN = 6000
LEVEL = "mcpworld.level"
EPISODE_ARTIFACTS = ("screens", "logs", "mcp", "overlong")


def flatten(data: Any, prefix: str = "") -> dict[str, str]:
    """Dotted keys → string values, secrets dropped."""
    out: dict[str, str] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            if SECRET_KEY.search(str(key)):
                continue
            out.update(flatten(value, f"{prefix}{key}."))
    else:
        out[prefix.rstrip(".")] = str(data)[:MAX_PARAM_LEN]
    return out


def strip_secrets(data: Any) -> Any:
    """A config tree with secret-named keys' values replaced by ``***`` (for config artifacts)."""
    if isinstance(data, dict):
        return {k: ("***" if SECRET_KEY.search(str(k)) and v is not None else strip_secrets(v)) for k, v in data.items()}
    if isinstance(data, list):
        return [strip_secrets(v) for v in data]
    return data


def mask_secrets(text: str) -> str:
    """``provider.api_key=sk-…`` (an override, a YAML line) with its value hidden; ``max_tokens``
    and the like are not secrets."""
    def hide(m: re.Match) -> str:  # a value may itself hold an assignment: key: a.api_key=…
        return m.group(1) + m.group(2) + ("'***'" if SECRET_KEY.search(m.group(1)) else mask_secrets(m.group(3)))

    return ASSIGNMENT.sub(hide, text)


class Tracker:
    """No-op base: ``tracking=none``."""

    busy_s = 0.0  # time spent logging (by the tracker's own process)

    def start_job(self, name: str, params: dict[str, str], tags: dict[str, str],
                  parent_run_id: str | None = None) -> None: ...

    def log_episode(self, result: EpisodeResult, episode_dir: Path) -> None: ...

    def finish_job(self, metrics: dict[str, float], artifacts: list[Path], failed: bool = False,
                   job_dir: Path | None = None) -> list[str]:
        """Wait for the tracker to drain; what could not be logged (empty when all was)."""
        return []


class MlflowTracker(Tracker):
    """The job's tracker: logging runs in a child process (its own interpreter, so MLflow's import
    and its sqlalchemy work never hold the episodes' GIL); calls only enqueue."""

    def __init__(self, uri: str, artifact_root: str, experiment: str, log_screenshots: bool = True,
                 traces: bool = True):
        import multiprocessing

        context = multiprocessing.get_context("fork")  # no re-import; the job has no threads yet
        self._jobs, self._answers = context.Queue(), context.Queue()
        settings = (uri, artifact_root, experiment, log_screenshots, traces)
        self._process = context.Process(target=_serve, args=(settings, self._jobs, self._answers),
                                        name="mlflow-tracker", daemon=True)
        self._process.start()

    def start_job(self, name: str, params: dict[str, str], tags: dict[str, str],
                  parent_run_id: str | None = None) -> None:
        self._jobs.put(("start_job", (name, params, tags, parent_run_id)))

    def log_episode(self, result: EpisodeResult, episode_dir: Path) -> None:
        self._jobs.put(("log_episode", (result, episode_dir)))

    def finish_job(self, metrics: dict[str, float], artifacts: list[Path], failed: bool = False,
                   job_dir: Path | None = None) -> list[str]:
        self._jobs.put(("finish_job", (metrics, artifacts, failed, job_dir)))
        while True:
            try:
                not_logged, self.busy_s = self._answers.get(timeout=1.0)
                break
            except queue.Empty:
                if not self._process.is_alive():
                    why = (f"the MLflow tracker process exited with code {self._process.exitcode}; this job's runs "
                           f"may be incomplete" + (f": log them with python -m mcpworld.telemetry.upload {job_dir}"
                                                    if job_dir else ""))
                    print(f"mcpworld: warning: {why}", file=sys.stderr)
                    return [why]
        self._process.join(timeout=30)
        return not_logged


def _serve(settings: tuple, jobs: Any, answers: Any) -> None:
    """The tracker process: run the job's logging calls in order, answer the last one."""
    logger = MlflowLogger(*settings)
    while True:
        name, args = jobs.get()
        if name == "finish_job":
            answers.put((logger.finish_job(*args), logger.busy_s))
            return
        getattr(logger, name)(*args)


class MlflowLogger(Tracker):
    """Synchronous MLflow logging with catch-up: what the tracker process (and uploads) run."""

    def __init__(self, uri: str, artifact_root: str, experiment: str, log_screenshots: bool = True,
                 traces: bool = True):
        self.uri = absolute_sqlite_uri(uri)
        self.artifact_root, self.experiment = artifact_root, experiment
        self.log_screenshots, self.traces = log_screenshots, traces
        self.client: Any = None
        self.experiment_id: str | None = None
        self.job_run_id: str | None = None
        self.pending: list[tuple[str, Callable[[], None], dict[str, Any]]] = []  # (what, retry, record)
        self.busy_s = 0.0  # time spent logging, for the overhead figure

    def start_job(self, name: str, params: dict[str, str], tags: dict[str, str],
                  parent_run_id: str | None = None) -> None:
        self._run("job run", lambda: self._start_job(name, params, tags, parent_run_id), {"kind": "job"})

    def log_episode(self, result: EpisodeResult, episode_dir: Path) -> None:
        record = {"kind": "episode", "task_id": result.task_id, "attempt": result.attempt, "dir": str(episode_dir)}
        self._run(f"episode {result.task_id}#{result.attempt} ({episode_dir})",
                  lambda: self._log_episode(result, episode_dir), record)

    def finish_job(self, metrics: dict[str, float], artifacts: list[Path], failed: bool = False,
                   job_dir: Path | None = None) -> list[str]:
        self._run("job run summary", lambda: self._finish_job(metrics, artifacts, failed), {"kind": "summary"})
        if self.pending:  # catch up: the store may be back (a restarted server)
            retry, self.pending = self.pending, []
            for what, op, record in retry:
                self._run(what, op, record)
        not_logged = [what for what, _, _ in self.pending]
        if not_logged:
            where = ""
            if job_dir is not None:
                path = Path(job_dir) / "tracking_pending.json"
                path.write_text(json.dumps({"uri": mask_secrets(self.uri), "experiment": self.experiment,
                                            "job_run_id": self.job_run_id,
                                            "not_logged": [r for _, _, r in self.pending]}, indent=2))
                where = f"; listed in {path} — log them later with: python -m mcpworld.telemetry.upload {job_dir}"
            print(f"mcpworld: warning: {len(not_logged)} item(s) not logged to MLflow ({mask_secrets(self.uri)}): "
                  + "; ".join(not_logged) + where, file=sys.stderr)
        return not_logged

    def _run(self, what: str, op: Callable[[], None], record: dict[str, Any]) -> None:
        started = time.perf_counter()
        try:
            op()
        except Exception as exc:  # the episode is on disk; remember exactly what was not logged
            self.pending.append((f"{what}: {type(exc).__name__}: {str(exc)[:200]}", op, record))
        finally:
            self.busy_s += time.perf_counter() - started

    def _connect(self) -> None:
        if self.client is not None:
            return
        # traces are written by this thread, when logged (no exporter queue to flush or to lose)
        os.environ.setdefault("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
        if self.uri.startswith(("http://", "https://")):  # a server that is down: fail in seconds, not minutes
            os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
            os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
        import mlflow
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=self.uri)
        exp = client.get_experiment_by_name(self.experiment)
        if exp is None:
            location = (Path(self.artifact_root).absolute() / self.experiment).as_uri()
            self.experiment_id = client.create_experiment(self.experiment, artifact_location=location)
        else:
            self.experiment_id = exp.experiment_id
        if self.traces:
            mlflow.set_tracking_uri(self.uri)  # the trace exporter writes to the global store
        self.client = client

    def _start_job(self, name: str, params: dict[str, str], tags: dict[str, str], parent: str | None) -> None:
        self._connect()
        tags = {LEVEL: "job", **tags, **({"mlflow.parentRunId": parent} if parent else {})}
        run = self.client.create_run(self.experiment_id, run_name=name, tags=tags)
        self.job_run_id = run.info.run_id
        self._log(self.job_run_id, params, {})

    def _log_episode(self, result: EpisodeResult, episode_dir: Path) -> None:
        if self.job_run_id is None:
            raise RuntimeError("the job run was not created")
        tags = {LEVEL: "episode", "mlflow.parentRunId": self.job_run_id, "task_id": result.task_id,
                "app": result.app, "status": result.status, **{k: str(v) for k, v in result.labels.items()}}
        run = self.client.create_run(self.experiment_id, run_name=f"{result.task_id}#{result.attempt}", tags=tags)
        run_id = run.info.run_id
        params = {"task_id": result.task_id, "app": result.app, "attempt": str(result.attempt),
                  "termination": result.termination, **result.labels}
        self._log(run_id, params, result.numbers())
        for item in sorted(episode_dir.iterdir()):
            if item.is_file():
                self.client.log_artifact(run_id, str(item))
            elif item.name in EPISODE_ARTIFACTS and (item.name != "screens" or self.log_screenshots):
                self.client.log_artifacts(run_id, str(item), artifact_path=item.name)
        if (episode_dir / "trace.jsonl").is_file():
            from mcpworld.telemetry.trace import read_trace

            events = read_trace(episode_dir / "trace.jsonl")
            self._log_page(run_id, events, episode_dir)
            if self.traces:
                from mcpworld.telemetry.spans import log_trace

                log_trace(self.client, self.experiment_id, run_id, events, result.llm_energy_j)
        self.client.set_terminated(run_id, "FINISHED" if result.status != "infra_error" else "FAILED")

    def _log_page(self, run_id: str, events: list[dict[str, Any]], episode_dir: Path) -> None:
        import tempfile

        from mcpworld.telemetry.trajectory_page import make_page

        with tempfile.TemporaryDirectory() as tmp:
            page = make_page(events, episode_dir if self.log_screenshots else Path(tmp), Path(tmp) / "trajectory.html")
            self.client.log_artifact(run_id, str(page))

    def _finish_job(self, metrics: dict[str, float], artifacts: list[Path], failed: bool) -> None:
        if self.job_run_id is None:
            raise RuntimeError("the job run was not created")
        import shutil
        import tempfile

        self._log(self.job_run_id, {}, metrics)
        with tempfile.TemporaryDirectory() as tmp:  # overrides may carry a key typed on the command line
            for path in artifacts:
                copy = Path(tmp) / path.name
                if path.is_dir():
                    shutil.copytree(path, copy)
                    files = [f for f in copy.rglob("*") if f.is_file()]
                elif path.exists():
                    shutil.copy2(path, copy)
                    files = [copy]
                else:
                    continue
                for f in files:
                    try:
                        f.write_text(mask_secrets(f.read_text(encoding="utf-8")), encoding="utf-8")
                    except UnicodeDecodeError:
                        continue
                if copy.is_dir():
                    self.client.log_artifacts(self.job_run_id, str(copy), artifact_path=path.name)
                else:
                    self.client.log_artifact(self.job_run_id, str(copy))
        self.client.set_terminated(self.job_run_id, "FAILED" if failed else "FINISHED")

    def _log(self, run_id: str, params: dict[str, str], metrics: dict[str, float]) -> None:
        from mlflow.entities import Metric, Param

        now = int(time.time() * 1000)
        param_list = [Param(k, v) for k, v in params.items()]
        metric_list = [Metric(k, float(v), now, 0) for k, v in metrics.items()]
        for i in range(0, max(len(param_list), 1), 100):  # MLflow takes at most 100 params per batch
            self.client.log_batch(run_id, metrics=metric_list if i == 0 else [], params=param_list[i:i + 100])


def absolute_sqlite_uri(uri: str) -> str:
    """``sqlite:///outputs/mlflow.db`` → an absolute path (and its folder created)."""
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri.startswith(prefix + "/"):
        path = Path(uri[len(prefix):]).absolute()
        path.parent.mkdir(parents=True, exist_ok=True)
        return prefix + str(path)
    return uri


def make_tracker(cfg: Any) -> Tracker:
    backend = cfg.tracking.backend
    if backend == "none":
        return Tracker()
    if backend == "mlflow":
        return MlflowTracker(cfg.tracking.uri, cfg.tracking.artifact_root, cfg.tracking.experiment,
                             cfg.tracking.log_screenshots, cfg.tracking.get("traces", True))
    raise UserError(f"tracking.backend={backend!r} is unknown; known: mlflow, none")


SWEEP_FILE = ".mcpworld_sweep.json"


def start_sweep_run(cfg: Any, sweep_dir: Path, overrides: list[str]) -> str | None:
    """The parent run a multirun's job runs nest under; its id is left in the sweep folder for the
    jobs (which may run in other processes or on other hosts sharing the folder)."""
    if cfg.tracking.backend != "mlflow":
        return None
    try:
        tracker = MlflowLogger(cfg.tracking.uri, cfg.tracking.artifact_root, cfg.tracking.experiment, traces=False)
        tracker._connect()
        run = tracker.client.create_run(tracker.experiment_id, run_name=f"sweep {Path(sweep_dir).as_posix()}",
                                        tags={LEVEL: "sweep", "mcpworld.sweep_dir": str(sweep_dir),
                                              "mcpworld.sweep": mask_secrets(" ".join(overrides))[:5000]})
    except Exception as exc:
        print(f"mcpworld: warning: no MLflow parent run for this sweep ({type(exc).__name__}: {exc}); "
              "its jobs are logged without one", file=sys.stderr)
        return None
    Path(sweep_dir).mkdir(parents=True, exist_ok=True)
    (Path(sweep_dir) / SWEEP_FILE).write_text(json.dumps({"run_id": run.info.run_id, "uri": tracker.uri}))
    return run.info.run_id


def sweep_parent(job_dir: Path) -> str | None:
    """The sweep's parent run id when this job belongs to one."""
    path = Path(job_dir).parent / SWEEP_FILE
    try:
        return json.loads(path.read_text())["run_id"]
    except (OSError, ValueError, KeyError):
        return None


def finish_sweep_run(sweep_dir: Path, metrics: dict[str, float]) -> None:
    path = Path(sweep_dir) / SWEEP_FILE
    try:
        info = json.loads(path.read_text())
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=info["uri"])
        now = int(time.time() * 1000)
        from mlflow.entities import Metric

        client.log_batch(info["run_id"], metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()])
        client.set_terminated(info["run_id"], "FINISHED")
    except FileNotFoundError:
        return
    except Exception as exc:
        print(f"mcpworld: warning: the sweep's MLflow parent run was not closed: {exc}", file=sys.stderr)
