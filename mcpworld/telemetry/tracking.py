"""Trackers: a multirun's parent run (``mcpworld.level=sweep``) → one run per Hydra job (``job``) →
one child run per episode (``episode``) with its MLflow trace. ``none`` never imports mlflow.

Trackers only read results. MLflow work happens in a child process, so episodes never wait for it
(nor share an interpreter lock with it); the job waits for it to drain at the end. A tracking
failure (a remote ``mlflow server`` down, a locked or full store) never loses what is on disk and
prints no traceback: failed items are retried when the job ends (the tracker catches up), and what
still failed is named in one line and in ``tracking_pending.json``, from where
``python -m mcpworld.telemetry.upload JOB_DIR`` logs it later. A resumed job (same folder) reopens
its runs, found by their folder tags, and replaces an episode's earlier run: never a duplicate.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import queue
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from mcpworld.core.errors import UserError
from mcpworld.core.result import EpisodeResult
from mcpworld.core.secrets import SECRET_KEY, mask_secrets, strip_secrets  # noqa: F401 (re-exported)

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


KEY_UNSAFE = re.compile(r"[^\w.\- :/]")
MAX_KEY_LEN = 250  # MLflow's limit on metric, param and tag keys
MAX_TAG_LEN = 8000
RUN_STATUSES = ("FINISHED", "FAILED", "KILLED")
EPISODE_RUN_STATUS = {"interrupted": "KILLED", "infra_error": "FAILED", "eval_error": "FAILED"}  # any other episode status: FINISHED
JOB_DIR, EPISODE_DIR, EPISODE_KEY = "mcpworld.job_dir", "mcpworld.episode_dir", "mcpworld.episode_key"
PENDING_FILE = "tracking_pending.json"
STORE_LOGGERS = ("mlflow", "alembic", "sqlalchemy")


def mlflow_key(name: str) -> str:
    """Any name as a metric, param or tag key that MLflow 3.17 takes (alphanumerics and ``_ - . space
    : /``; no empty, ``.`` or ``..`` path part; ≤ 250 chars): one bad key rejects the whole batch.
    Stable and readable: ``metric.exact_match#0`` → ``metric.exact_match.0``, other characters → ``_``."""
    text = KEY_UNSAFE.sub("_", str(name).replace("#", "."))[:MAX_KEY_LEN - 1]
    key = "/".join("_" if part in (".", "..") else part for part in text.split("/") if part) or "_"
    return "_" + key if key.startswith("..") else key


def mlflow_keys(data: dict[str, Any], max_len: int = MAX_TAG_LEN) -> dict[str, str]:
    """Params or tags with valid keys and values cut to MLflow's length limit."""
    return {mlflow_key(k): str(v)[:max_len] for k, v in data.items()}


def episode_key(result: EpisodeResult) -> str:
    """An episode's identity inside its job (its folder is ``episodes/<key>``)."""
    return f"{result.task_id}/{result.attempt}"


def check_status(status: str) -> None:
    if status not in RUN_STATUSES:
        raise ValueError(f"run status {status!r} is unknown; use one of {', '.join(RUN_STATUSES)}")


def reason(exc: BaseException) -> str:
    """An error in one line: a store error's first line (not the SQL statement under it)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {' '.join(lines[0].split()) if lines else ''}".rstrip(": ")[:300]


class StoreLog(logging.Handler):
    """MLflow's, alembic's and sqlalchemy's log lines, kept instead of printed: a store outage is
    reported once, in the job's summary line, not as thousands of traceback lines; and an error that
    MLflow only logs (a trace it could not export) still fails the item, which is then retried."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def check(self) -> None:
        """Raise for an error logged since the records were last cleared (a lost trace named first)."""
        failures = [r for r in self.records if r.levelno >= logging.ERROR or r.name.startswith("mlflow.tracing")]
        self.records.clear()
        if failures:
            record = next((r for r in failures if r.name.startswith("mlflow.tracing")), failures[0])
            if record.exc_info and record.exc_info[1] is not None:
                raise StoreLoggedError(reason(record.exc_info[1]))
            lines = record.getMessage().strip().splitlines() or [""]
            raise StoreLoggedError(" ".join(lines[0].split()))


class StoreLoggedError(Exception):
    """A failure MLflow logged instead of raising."""


STORE_LOG = StoreLog()


def mlflow_client(uri: str) -> Any:
    """An MlflowClient whose store's log lines go to ``STORE_LOG``; a server that is down fails in
    seconds, not minutes."""
    os.environ.setdefault("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")  # traces written when logged: no queue to lose
    if uri.startswith(("http://", "https://")):
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
    import mlflow  # noqa: F401  (configures its own logger first; replaced just below)
    from mlflow.tracking import MlflowClient

    for name in STORE_LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers, logger.propagate = [STORE_LOG], False
    if uri.startswith("sqlite:///"):  # MLflow retries a file it cannot open for ≈ 100 s: fail at once
        import sqlite3

        con = sqlite3.connect(uri[len("sqlite:///"):].split("?")[0], timeout=20)  # MLflow's busy timeout
        try:
            con.execute("PRAGMA schema_version")
        finally:
            con.close()
    return MlflowClient(tracking_uri=uri)


def log_batch(client: Any, run_id: str, params: dict[str, str] | None = None,
              metrics: dict[str, float] | None = None, tags: dict[str, str] | None = None) -> None:
    """Params, metrics and tags in as few batches as MLflow allows, every key made valid."""
    from mlflow.entities import Metric, Param, RunTag

    now = int(time.time() * 1000)
    param_list = [Param(k, v) for k, v in mlflow_keys(params or {}, MAX_PARAM_LEN).items()]
    tag_list = [RunTag(k, v) for k, v in mlflow_keys(tags or {}).items()]
    values = {mlflow_key(k): float(v) for k, v in (metrics or {}).items()}
    metric_list = [Metric(k, v, now, 0) for k, v in values.items()]
    for i in range(0, max(len(param_list), len(tag_list), 1), 100):  # at most 100 params and 100 tags a batch
        batch = (metric_list if i == 0 else [], param_list[i:i + 100], tag_list[i:i + 100])
        if any(batch):
            client.log_batch(run_id, metrics=batch[0], params=batch[1], tags=batch[2])


class Tracker:
    """No-op base: ``tracking=none``."""

    busy_s = 0.0  # time spent logging (by the tracker's own process)

    def start_job(self, name: str, params: dict[str, str], tags: dict[str, str],
                  parent_run_id: str | None = None) -> None:
        """Open the job's run, or reopen the one its folder (tag ``mcpworld.job_dir``) already has."""

    def log_episode(self, result: EpisodeResult, episode_dir: Path) -> None:
        """Log one episode as a child run, replacing an earlier run of the same episode."""

    def finish_job(self, metrics: dict[str, float], artifacts: list[Path], status: str = "FINISHED",
                   job_dir: Path | None = None) -> list[str]:
        """Close the job's run as ``status`` (FINISHED, FAILED or KILLED) once the tracker has drained;
        what could not be logged (empty when all was)."""
        check_status(status)
        return []


class MlflowTracker(Tracker):
    """The job's tracker: logging runs in a child process (its own interpreter, so MLflow's import
    and its sqlalchemy work never hold the episodes' GIL); calls only enqueue. The child ignores
    Ctrl-C and SIGTERM (a terminal or a scheduler signals the whole process group: the job decides
    when logging ends) and never outlives the job; ``finish_job`` waits for it a bounded time."""

    FINISH_TIMEOUT_S = 900.0  # how long the job waits for its logging to drain …
    KILLED_TIMEOUT_S = 60.0  # … and when it was interrupted (someone is waiting for it to stop)

    def __init__(self, uri: str, artifact_root: str, experiment: str, log_screenshots: bool = True,
                 traces: bool = True):
        import multiprocessing

        context = multiprocessing.get_context("fork")  # no re-import; the job has no threads yet
        self.uri, self.experiment = uri, experiment
        self._jobs, self._answers = context.Queue(), context.Queue()
        settings = (uri, artifact_root, experiment, log_screenshots, traces)
        self._process = context.Process(target=_serve, args=(settings, self._jobs, self._answers, os.getpid()),
                                        name="mlflow-tracker", daemon=True)
        self._process.start()
        atexit.register(self._stop)  # before multiprocessing's own exit hook, which would SIGTERM and wait

    def start_job(self, name: str, params: dict[str, str], tags: dict[str, str],
                  parent_run_id: str | None = None) -> None:
        self._jobs.put(("start_job", (name, params, tags, parent_run_id)))

    def log_episode(self, result: EpisodeResult, episode_dir: Path) -> None:
        self._jobs.put(("log_episode", (result, episode_dir)))

    def finish_job(self, metrics: dict[str, float], artifacts: list[Path], status: str = "FINISHED",
                   job_dir: Path | None = None) -> list[str]:
        check_status(status)
        self._jobs.put(("finish_job", (metrics, artifacts, status, job_dir)))
        limit = self.KILLED_TIMEOUT_S if status == "KILLED" else self.FINISH_TIMEOUT_S
        deadline = time.monotonic() + limit
        while True:
            alive = self._process.is_alive()  # before waiting: a child that answered and exited is not lost
            try:
                not_logged, self.busy_s = self._answers.get(timeout=0.5)
                break
            except queue.Empty:
                if alive and time.monotonic() < deadline:
                    continue
                why = (f"the MLflow tracker did not finish within {limit:.0f} s and was stopped" if alive else
                       f"the MLflow tracker process exited with code {self._process.exitcode}")
                self._stop()
                return [note_lost(why, self.uri, self.experiment, job_dir)]
        self._process.join(timeout=10)
        self._stop()
        return not_logged

    def _stop(self) -> None:
        if self._process.is_alive():
            self._process.kill()
            self._process.join(timeout=10)
        self._jobs.cancel_join_thread()  # nothing reads the queue now: exiting must not wait to flush it
        atexit.unregister(self._stop)  # (a no-op when run by atexit itself)


def _serve(settings: tuple, jobs: Any, answers: Any, parent: int) -> None:
    """The tracker process: run the job's logging calls in order, answer the last one."""
    for sig in (signal.SIGINT, signal.SIGTERM):  # sent to the whole process group: the job's to handle
        signal.signal(sig, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(parent,), name="parent-watch", daemon=True).start()
    logger = MlflowLogger(*settings)
    while True:
        name, args = jobs.get()
        if name != "finish_job":
            getattr(logger, name)(*args)
            continue
        try:
            not_logged = logger.finish_job(*args)
        except Exception as exc:  # e.g. an unwritable job folder: answer anyway
            not_logged = [f"the MLflow tracker failed: {reason(exc)}"]
            print(f"mcpworld: warning: {not_logged[0]}", file=sys.stderr)
        answers.put((not_logged, logger.busy_s))
        return


def _exit_with_parent(parent: int) -> None:
    """End this process when the job's is gone (killed with -9, say): it is reparented then."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def read_pending(job_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((Path(job_dir) / PENDING_FILE).read_text())
    except (OSError, ValueError):
        return {}


def write_pending(job_dir: Path, uri: str, experiment: str, job_run_id: str | None,
                  records: list[dict[str, Any]]) -> Path:
    path = Path(job_dir) / PENDING_FILE
    path.write_text(json.dumps({"uri": mask_secrets(uri), "experiment": experiment, "job_run_id": job_run_id,
                                "not_logged": records}, indent=2))
    return path


def note_lost(why: str, uri: str, experiment: str, job_dir: Path | None) -> str:
    """The tracker process ended before it answered: say so in one line and in the pending file
    (``upload`` finds what is missing by itself)."""
    where = ""
    if job_dir is not None:
        old = read_pending(job_dir)
        path = write_pending(job_dir, uri, experiment, old.get("job_run_id"),
                             old.get("not_logged", []) + [{"kind": "unknown", "error": why}])
        where = f"; noted in {path}: log what is missing with python -m mcpworld.telemetry.upload {job_dir}"
    print(f"mcpworld: warning: {why}; this job's MLflow runs may be incomplete{where}", file=sys.stderr)
    return why


class MlflowLogger(Tracker):
    """Synchronous MLflow logging with catch-up: what the tracker process (and uploads) run. A failed
    item is remembered and retried when the job ends; after a failure the store is left alone for
    ``RETRY_AFTER_S`` (an outage costs one timeout, not one per item)."""

    RETRY_AFTER_S = 30.0

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
        self._episodes: dict[str, list[str]] = {}  # episode key → its live runs under the job run
        self._complete: set[str] = set()  # episode keys whose run was logged to the end
        self._seen: set[str] = set()  # episode keys handed to log_episode
        self._failed_at: float | None = None
        self._failure = ""

    def start_job(self, name: str, params: dict[str, str], tags: dict[str, str],
                  parent_run_id: str | None = None) -> None:
        self._run("job run", lambda: self._start_job(name, params, tags, parent_run_id), {"kind": "job"})

    def log_episode(self, result: EpisodeResult, episode_dir: Path) -> None:
        key = episode_key(result)
        self._seen.add(key)
        record = {"kind": "episode", "key": key, "task_id": result.task_id, "attempt": result.attempt,
                  "dir": str(episode_dir)}
        self._run(f"episode {result.task_id}#{result.attempt}", lambda: self._log_episode(result, Path(episode_dir)),
                  record)

    def finish_job(self, metrics: dict[str, float], artifacts: list[Path], status: str = "FINISHED",
                   job_dir: Path | None = None) -> list[str]:
        check_status(status)
        if job_dir is not None and self.unlogged_episodes(Path(job_dir)):  # a resumed job's earlier episodes
            self._run("earlier episodes of this job", lambda: self._log_unlogged(Path(job_dir)), {"kind": "sync"})
        self._run("job run summary", lambda: self._finish_job(metrics, artifacts, status),
                  {"kind": "summary", "status": status})
        self._catch_up()
        if job_dir is not None:
            path = Path(job_dir) / PENDING_FILE
            if self.pending:
                write_pending(Path(job_dir), self.uri, self.experiment, self.job_run_id,
                              [r for _, _, r in self.pending])
            else:
                path.unlink(missing_ok=True)  # an earlier outage's list: caught up now
        if self.pending:
            print(self._summary_line(job_dir), file=sys.stderr)
        return [f"{what}: {record['error']}" for what, _, record in self.pending]

    def attach(self, job_dir: Path, run_id: str | None = None) -> str | None:
        """Find the job's existing run (by id, else by its folder tag) to add to it; its status, or
        None when the job has no run. Store errors are raised."""
        self._connect()
        run = self._job_run(str(job_dir), run_id)
        if run is None:
            return None
        self.job_run_id = run.info.run_id
        self._load_episodes()
        return run.info.status

    def unlogged_episodes(self, job_dir: Path) -> list[Path]:
        """Episode folders of ``job_dir`` with a result but no complete run under the job run, and
        not handed to this tracker (set-aside tries, ``0.infra_error1``, are not episodes)."""
        root = Path(job_dir) / "episodes"
        out = []
        for result in sorted(root.rglob("result.json")):
            key = result.parent.relative_to(root).as_posix()
            if result.parent.name.isdigit() and key not in self._complete and key not in self._seen:
                out.append(result.parent)
        return out

    def _run(self, what: str, op: Callable[[], None], record: dict[str, Any], force: bool = False) -> bool:
        """Run one logging item; a failure is remembered (with its one-line reason), never raised."""
        if not force and self._failed_at is not None and time.monotonic() - self._failed_at < self.RETRY_AFTER_S:
            self.pending.append((what, op, {**record, "error": self._failure}))
            return False
        started = time.perf_counter()
        STORE_LOG.records.clear()
        try:
            op()
            STORE_LOG.check()
        except Exception as exc:  # the episode is on disk; remember exactly what was not logged
            self._failed_at, self._failure = time.monotonic(), reason(exc)
            self.pending.append((what, op, {**record, "error": self._failure}))
            return False
        finally:
            self.busy_s += time.perf_counter() - started
        self._failed_at = None
        return True

    def _catch_up(self) -> None:
        """Retry what failed, in order (the store may be back); two failures in a row: it is not."""
        retry, self.pending = self.pending, []
        in_a_row = 0
        for i, (what, op, record) in enumerate(retry):
            in_a_row = 0 if self._run(what, op, record, force=True) else in_a_row + 1
            if in_a_row == 2:
                self.pending.extend(retry[i + 1:])
                return

    def _summary_line(self, job_dir: Path | None) -> str:
        names = [what for what, _, _ in self.pending]
        shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        where = (f"; listed in {Path(job_dir) / PENDING_FILE}: log them later with "
                 f"python -m mcpworld.telemetry.upload {job_dir}" if job_dir is not None else "")
        return (f"mcpworld: warning: {len(names)} item(s) not logged to MLflow ({mask_secrets(self.uri)}): {shown} "
                f"({self.pending[0][2]['error']}){where}")

    def _connect(self) -> None:
        if self.client is not None:
            return
        client = mlflow_client(self.uri)
        exp = client.get_experiment_by_name(self.experiment)
        if exp is None:
            location = (Path(self.artifact_root).absolute() / self.experiment).as_uri()
            self.experiment_id = client.create_experiment(self.experiment, artifact_location=location)
        else:
            self.experiment_id = exp.experiment_id
        if self.traces:
            import mlflow

            mlflow.set_tracking_uri(self.uri)  # the trace exporter writes to the global store
        self.client = client

    def _search(self, query: str) -> Any:
        """Live runs of the experiment matching ``query``, every page."""
        token = None
        while True:
            page = self.client.search_runs([self.experiment_id], filter_string=query, max_results=1000,
                                           page_token=token)
            yield from page
            token = page.token
            if not token:
                return

    def _find_run(self, level: str, tag: str, value: str) -> Any:
        """The newest live run of this level whose ``tag`` is ``value``, or None."""
        query = f"tags.`{LEVEL}` = '{level}'"
        if not any(c in value for c in "'\\"):  # else matched below only
            query += f" and tags.`{tag}` = '{value}'"
        return next((run for run in self._search(query) if run.data.tags.get(tag) == value), None)

    def _job_run(self, job_dir: str | None, run_id: str | None) -> Any:
        """This job's live run: by id (a retry, an upload of a moved folder), else by its folder tag."""
        if run_id:
            from mlflow.exceptions import MlflowException

            try:
                run = self.client.get_run(run_id)
                if run.info.lifecycle_stage == "active":
                    return run
            except MlflowException as exc:
                if exc.error_code != "RESOURCE_DOES_NOT_EXIST":
                    raise
        return self._find_run("job", JOB_DIR, job_dir) if job_dir else None

    def _load_episodes(self) -> None:
        """The episode runs the job run already has (a resumed job's), by episode key."""
        self._episodes, self._complete = {}, set()
        query = f"tags.`{LEVEL}` = 'episode' and tags.`mlflow.parentRunId` = '{self.job_run_id}'"
        for run in self._search(query):
            tags = run.data.tags
            key = tags.get(EPISODE_KEY) or f"{tags.get('task_id')}/{run.data.params.get('attempt')}"
            self._episodes.setdefault(key, []).append(run.info.run_id)
            if run.info.status != "RUNNING":
                self._complete.add(key)

    def _start_job(self, name: str, params: dict[str, str], tags: dict[str, str], parent: str | None) -> None:
        self._connect()
        tags = {LEVEL: "job", **tags, **({"mlflow.parentRunId": parent} if parent else {})}
        run = self._job_run(tags.get(JOB_DIR), self.job_run_id)
        if run is None:
            run = self.client.create_run(self.experiment_id, run_name=name, tags=mlflow_keys(tags))
            self.job_run_id, self._episodes, self._complete = run.info.run_id, {}, set()
            log_batch(self.client, self.job_run_id, params=params)
            return
        # a resumed job: its run again, not a second one; params are immutable, so only new ones
        self.job_run_id = run.info.run_id
        self._load_episodes()
        have, wanted = run.data.params, mlflow_keys(params, MAX_PARAM_LEN)
        changed = {f"mcpworld.param_changed.{k}": v for k, v in wanted.items() if k in have and have[k] != v}
        self.client.update_run(self.job_run_id, status="RUNNING")
        log_batch(self.client, self.job_run_id, params={k: v for k, v in wanted.items() if k not in have},
                  tags={**tags, **changed})

    def _log_episode(self, result: EpisodeResult, episode_dir: Path) -> None:
        if self.job_run_id is None:
            raise RuntimeError("the job run was not created")
        key = episode_key(result)
        self._complete.discard(key)
        runs = self._episodes.setdefault(key, [])
        while runs:  # an earlier run of this episode (a resumed job's, a failed try's): replaced, not doubled
            self.client.delete_run(runs[0])
            runs.pop(0)
        tags = {LEVEL: "episode", "mlflow.parentRunId": self.job_run_id, "task_id": result.task_id,
                "app": result.app, "status": result.status, EPISODE_DIR: str(episode_dir.absolute()),
                EPISODE_KEY: key, **{k: str(v) for k, v in result.labels.items()}}
        run_id = self.client.create_run(self.experiment_id, run_name=f"{result.task_id}#{result.attempt}",
                                        tags=mlflow_keys(tags)).info.run_id
        runs.append(run_id)
        try:
            params = {"task_id": result.task_id, "app": result.app, "attempt": str(result.attempt),
                      "termination": result.termination, **result.labels}
            log_batch(self.client, run_id, params=params, metrics=result.numbers())
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
                    STORE_LOG.check()  # MLflow logs a trace it could not write instead of raising
            self.client.set_terminated(run_id, EPISODE_RUN_STATUS.get(result.status, "FINISHED"))
        except Exception:
            with contextlib.suppress(Exception):  # no half-logged run stays RUNNING; the retry logs it whole
                self.client.set_terminated(run_id, "FAILED")
                self.client.delete_run(run_id)
                runs.remove(run_id)
            raise
        self._complete.add(key)

    def _log_unlogged(self, job_dir: Path) -> None:
        for folder in self.unlogged_episodes(job_dir):
            self._log_episode(EpisodeResult.read(folder / "result.json"), folder)

    def _log_page(self, run_id: str, events: list[dict[str, Any]], episode_dir: Path) -> None:
        import tempfile

        from mcpworld.telemetry.trajectory_page import make_page

        with tempfile.TemporaryDirectory() as tmp:
            page = make_page(events, episode_dir if self.log_screenshots else Path(tmp), Path(tmp) / "trajectory.html")
            self.client.log_artifact(run_id, str(page))

    def _finish_job(self, metrics: dict[str, float], artifacts: list[Path], status: str) -> None:
        if self.job_run_id is None:
            raise RuntimeError("the job run was not created")
        try:
            self._log_summary(metrics, artifacts)
        except Exception:
            with contextlib.suppress(Exception):  # not left RUNNING; the retry sets the job's own status
                self.client.set_terminated(self.job_run_id, "FAILED")
            raise
        self.client.set_terminated(self.job_run_id, status)

    def _log_summary(self, metrics: dict[str, float], artifacts: list[Path]) -> None:
        import shutil
        import tempfile

        log_batch(self.client, self.job_run_id, metrics=metrics)
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


def absolute_sqlite_uri(uri: str) -> str:
    """``sqlite:///outputs/mlflow.db`` → an absolute path (and its folder created when it can be:
    otherwise the store fails when first used, as a pending item)."""
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri.startswith(prefix + "/"):
        path = Path(uri[len(prefix):]).absolute()
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
        return prefix + str(path)
    return uri


def unreachable(uri: str, timeout_s: float = 5.0) -> str | None:
    """Why this machine cannot log to the MLflow store at ``uri`` (a sqlite file or folder whose
    directory is missing or closed, a server that does not answer its /health), or None."""
    uri = absolute_sqlite_uri(uri)  # a relative one's folder is made, as the tracker makes it
    if uri.startswith(("http://", "https://")):
        import httpx

        try:
            reply = httpx.get(uri.rstrip("/") + "/health", timeout=timeout_s)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"
        return None if reply.status_code == 200 else f"its /health answered {reply.status_code}"
    path = uri[len("sqlite:///"):] if uri.startswith("sqlite:///") else uri.removeprefix("file://")
    if "://" in path:
        return None  # another kind of store (databricks, postgresql …): MLflow's own errors say more
    folder = Path(path).expanduser().absolute().parent
    if not folder.is_dir():
        return f"the folder {folder} does not exist here"
    if not os.access(folder, os.W_OK):
        return f"the folder {folder} is not writable here"
    return None


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
    """The parent run a multirun's job runs nest under (a resumed sweep's own run again, found by its
    folder); its id is left in the sweep folder for the jobs (which may run in other processes or on
    other hosts sharing the folder)."""
    if cfg.tracking.backend != "mlflow":
        return None
    where = str(Path(sweep_dir).absolute())
    try:
        tracker = MlflowLogger(cfg.tracking.uri, cfg.tracking.artifact_root, cfg.tracking.experiment, traces=False)
        tracker._connect()
        tags = {LEVEL: "sweep", "mcpworld.sweep_dir": where, "mcpworld.sweep": mask_secrets(" ".join(overrides))[:5000]}
        run = tracker._find_run("sweep", "mcpworld.sweep_dir", where)
        if run is None:
            run = tracker.client.create_run(tracker.experiment_id, run_name=f"sweep {Path(sweep_dir).as_posix()}",
                                            tags=mlflow_keys(tags))
        else:
            tracker.client.update_run(run.info.run_id, status="RUNNING")
            log_batch(tracker.client, run.info.run_id, tags=tags)
    except Exception as exc:
        print(f"mcpworld: warning: no MLflow parent run for this sweep ({reason(exc)}); its jobs are logged "
              "without one", file=sys.stderr)
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


def finish_sweep_run(sweep_dir: Path, metrics: dict[str, float], status: str = "FINISHED") -> None:
    """Log the sweep's numbers on its parent run and close it as ``status`` (FINISHED, FAILED, KILLED)."""
    check_status(status)
    path = Path(sweep_dir) / SWEEP_FILE
    if not path.exists():  # not a tracked sweep
        return
    try:
        info = json.loads(path.read_text())
        client = mlflow_client(info["uri"])
        STORE_LOG.records.clear()
        log_batch(client, info["run_id"], metrics=metrics)
        client.set_terminated(info["run_id"], status)
        STORE_LOG.check()
    except Exception as exc:
        print(f"mcpworld: warning: the sweep's MLflow parent run was not closed ({reason(exc)})", file=sys.stderr)
