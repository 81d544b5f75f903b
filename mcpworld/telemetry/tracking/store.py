"""Talking to an MLflow store: a client that fails fast, params/metrics/tags written in valid
batches, the store's log lines caught (an outage is one line, and an error MLflow only logs still
fails the item), and whether a store can be reached at all. mlflow is imported only inside calls."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path
from typing import Any

from mcpworld.telemetry.tracking.keys import MAX_PARAM_LEN, mlflow_key, mlflow_keys

STORE_LOGGERS = ("mlflow", "alembic", "sqlalchemy")


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

        con = sqlite3.connect(uri[len("sqlite:///") :].split("?")[0], timeout=20)  # MLflow's busy timeout
        try:
            con.execute("PRAGMA schema_version")
        finally:
            con.close()
    return MlflowClient(tracking_uri=uri)


def log_batch(
    client: Any,
    run_id: str,
    params: dict[str, str] | None = None,
    metrics: dict[str, float] | None = None,
    tags: dict[str, str] | None = None,
    series: list[tuple[str, float, int, int]] | None = None,
    timestamp_ms: int | None = None,
) -> None:
    """Params, metrics and tags in as few batches as MLflow allows, every key made valid. ``metrics``
    are single values (step 0, at ``timestamp_ms`` or now); ``series`` are (key, value, timestamp
    ms, step) points, which MLflow's charts draw as curves."""
    from mlflow.entities import Metric, Param, RunTag

    now = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
    param_list = [Param(k, v) for k, v in mlflow_keys(params or {}, MAX_PARAM_LEN).items()]
    tag_list = [RunTag(k, v) for k, v in mlflow_keys(tags or {}).items()]
    values = {mlflow_key(k): float(v) for k, v in (metrics or {}).items()}
    metric_list = [Metric(k, v, now, 0) for k, v in values.items()]
    metric_list += [Metric(mlflow_key(k), float(v), int(ts), int(step)) for k, v, ts, step in series or []]
    # at most 100 params, 100 tags and 1000 entities a batch (MLflow's limits)
    for i in range(0, max(len(param_list), len(tag_list), 1), 100):
        first = metric_list[:800] if i == 0 else []
        batch = (first, param_list[i : i + 100], tag_list[i : i + 100])
        if any(batch):
            client.log_batch(run_id, metrics=batch[0], params=batch[1], tags=batch[2])
    for i in range(800, len(metric_list), 1000):
        client.log_batch(run_id, metrics=metric_list[i : i + 1000])


# an experiment tag: the sqlite store's path from the folder its relative artifact location starts at
ARTIFACTS_FROM = "mcpworld.artifacts_from"


def create_experiment(client: Any, uri: str, artifact_root: str, name: str) -> str:
    """A new experiment whose artifact location names no machine's path, so a store moved (or copied to
    another machine) opens whole. An MLflow server picks it (``mlflow-artifacts:/<id>`` under its
    ``--artifacts-destination`` by default). A sqlite store inside this folder, with ``artifact_root``
    inside it too (the default ``outputs/``), keeps it relative to this folder
    (``outputs/mlartifacts/<name>``): MLflow resolves a relative location against the working folder of
    whoever reads or writes it, so ``mlflow ui --backend-store-uri sqlite:///outputs/mlflow.db`` run
    from the folder that holds ``outputs/``, wherever that is now, finds them. Any other store: this
    machine's absolute ``file://`` URI, as before. Its id."""
    if uri.startswith(("http://", "https://")):
        return str(client.create_experiment(name))
    location, here = Path(artifact_root).absolute() / name, Path.cwd()
    db = sqlite_file(uri)
    if db is None or not db.is_relative_to(here) or not location.is_relative_to(here):
        return str(client.create_experiment(name, artifact_location=location.as_uri()))
    experiment_id = str(
        client.create_experiment(
            name, artifact_location=location.as_uri(), tags={ARTIFACTS_FROM: db.relative_to(here).as_posix()}
        )
    )
    # MLflow makes every local location absolute when it creates an experiment: stored relative here
    import sqlite3

    con = sqlite3.connect(db, timeout=20)
    try:
        with con:
            con.execute(
                "UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?",
                (location.relative_to(here).as_posix(), int(experiment_id)),
            )
    finally:
        con.close()
    return experiment_id


def check_artifact_folder(uri: str, experiment: Any) -> None:
    """Raise when this process would put an experiment's artifacts in the wrong place: its location is
    relative (``create_experiment``) and this folder is not the one it starts at (a job run from
    elsewhere with the store's absolute URI)."""
    location, start = experiment.artifact_location, experiment.tags.get(ARTIFACTS_FROM)
    db = sqlite_file(uri)
    if start is None or db is None or "://" in location or location.startswith("/"):
        return
    here = Path.cwd()
    if db.is_relative_to(here) and db.relative_to(here).as_posix() == start:
        return
    base = db.parents[len(Path(start).parts) - 1] if db.as_posix().endswith("/" + start) else f"the folder that holds {start}"
    raise RuntimeError(
        f"experiment {experiment.name!r} keeps its artifacts relative to {base} ({location}): run from there, not from {here}"
    )


def sqlite_file(uri: str) -> Path | None:
    """The file of a ``sqlite:///`` store URI (absolute), or None for another kind of store."""
    prefix = "sqlite:///"
    if not uri.startswith(prefix):
        return None
    return Path(uri[len(prefix) :].split("?")[0]).absolute()


def absolute_sqlite_uri(uri: str) -> str:
    """``sqlite:///outputs/mlflow.db`` → an absolute path (and its folder created when it can be:
    otherwise the store fails when first used, as a pending item)."""
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri.startswith(prefix + "/"):
        path = Path(uri[len(prefix) :]).absolute()
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
    path = uri[len("sqlite:///") :] if uri.startswith("sqlite:///") else uri.removeprefix("file://")
    if "://" in path:
        return None  # another kind of store (databricks, postgresql …): MLflow's own errors say more
    folder = Path(path).expanduser().absolute().parent
    if not folder.is_dir():
        return f"the folder {folder} does not exist here"
    if not os.access(folder, os.W_OK):
        return f"the folder {folder} is not writable here"
    return None
