"""How a job's runs are written: the job run (reopened when the job resumes), one run per episode
with its artifacts, trajectory page and trace (replacing an earlier run of it), the summary; and
catch-up, where a failed item is remembered, retried and at last listed as pending. Synchronous:
the tracker process and ``upload`` both run it."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpworld.core.result import EpisodeResult
from mcpworld.core.secrets import mask_secrets
from mcpworld.telemetry.tracking.keys import (
    DIFFERS,
    EPISODE_DIR,
    EPISODE_KEY,
    JOB_DIR,
    LEVEL,
    MAX_PARAM_LEN,
    episode_key,
    mlflow_keys,
)
from mcpworld.telemetry.tracking.pending import PENDING_FILE, write_pending
from mcpworld.telemetry.tracking.store import (
    STORE_LOG,
    absolute_sqlite_uri,
    check_artifact_folder,
    create_experiment,
    log_batch,
    mlflow_client,
    reason,
)
from mcpworld.telemetry.tracking.tracker import Tracker, check_status
from mcpworld.telemetry.tracking.vocabulary import (
    episode_metrics,
    episode_params,
    episode_run_name,
    episode_window,
    step_series,
)

EPISODE_ARTIFACTS = ("screens", "logs", "mcp", "overlong")
# an episode run's status by the episode's; any other episode status: FINISHED
EPISODE_RUN_STATUS = {"interrupted": "KILLED", "infra_error": "FAILED", "eval_error": "FAILED"}
# The experiment's kind: MLflow's UI opens an experiment of this kind on its runs where its "GenAI |
# Model training" switch is off (a build flag of the UI). 3.17.2 builds it on and ignores the tag: the
# landing tab follows the switch alone (the URL's ``workflowType``, else the browser's localStorage
# ``mlflow.workflowType_v1``, else GenAI), so no experiment tag can; docs/tracking.md gives the link.
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")
NOTE = "mlflow.note.content"
NOTE_TAIL = "Runs written by mcpworld: sweep → job → episode (see its docs/tracking.md)."
NOTE_COMMANDS = 20
# a job run's tags its episode runs carry too (MLflow's Source and Version columns; what tells the
# job from its sweep siblings, which ends the episodes' names)
SHARED_TAGS = ("mlflow.source.type", "mlflow.source.name", "mlflow.source.git.commit", DIFFERS)


class MlflowLogger(Tracker):
    """Synchronous MLflow logging with catch-up: what the tracker process (and uploads) run. A failed
    item is remembered and retried when the job ends; after a failure the store is left alone for
    ``RETRY_AFTER_S`` (an outage costs one timeout, not one per item)."""

    RETRY_AFTER_S = 30.0

    def __init__(self, uri: str, artifact_root: str, experiment: str, log_screenshots: bool = True, traces: bool = True):
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
        self._job_params: dict[str, str] = {}  # the job's params, which its episode runs carry too
        self._shared_tags: dict[str, str] = {}

    def start_job(
        self,
        name: str,
        params: dict[str, str],
        tags: dict[str, str],
        parent_run_id: str | None = None,
        start_ms: int | None = None,
    ) -> None:
        self._job_params = dict(params)
        self._shared_tags = {k: v for k, v in tags.items() if k in SHARED_TAGS}
        self._run("job run", lambda: self._start_job(name, params, tags, parent_run_id, start_ms), {"kind": "job"})

    def log_episode(self, result: EpisodeResult, episode_dir: Path) -> None:
        key = episode_key(result)
        self._seen.add(key)
        record = {"kind": "episode", "key": key, "task_id": result.task_id, "attempt": result.attempt, "dir": str(episode_dir)}
        self._run(f"episode {result.task_id}#{result.attempt}", lambda: self._log_episode(result, Path(episode_dir)), record)

    def finish_job(
        self,
        metrics: dict[str, float],
        artifacts: list[Path],
        status: str = "FINISHED",
        job_dir: Path | None = None,
        end_ms: int | None = None,
    ) -> list[str]:
        check_status(status)
        if job_dir is not None and self.unlogged_episodes(Path(job_dir)):  # a resumed job's earlier episodes
            self._run("earlier episodes of this job", lambda: self._log_unlogged(Path(job_dir)), {"kind": "sync"})
        self._run(
            "job run summary", lambda: self._finish_job(metrics, artifacts, status, end_ms), {"kind": "summary", "status": status}
        )
        self._catch_up()
        if job_dir is not None:
            path = Path(job_dir) / PENDING_FILE
            if self.pending:
                write_pending(Path(job_dir), self.uri, self.experiment, self.job_run_id, [r for _, _, r in self.pending])
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
        self._adopt(run)
        self._load_episodes()
        return run.info.status

    def _adopt(self, run: Any) -> None:
        """Take an existing job run's params and source tags for its episode runs (a job run from
        before the shared vocabulary, without ``config.sha256``, gives only its source tags)."""
        if "config.sha256" in run.data.params:
            self._job_params = dict(run.data.params)
        self._shared_tags = self._shared_tags or {k: v for k, v in run.data.tags.items() if k in SHARED_TAGS}

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
                self.pending.extend(retry[i + 1 :])
                return

    def _summary_line(self, job_dir: Path | None) -> str:
        names = [what for what, _, _ in self.pending]
        shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        where = (
            f"; listed in {Path(job_dir) / PENDING_FILE}: log them later with python -m mcpworld.telemetry.upload {job_dir}"
            if job_dir is not None
            else ""
        )
        return (
            f"mcpworld: warning: {len(names)} item(s) not logged to MLflow ({mask_secrets(self.uri)}): {shown} "
            f"({self.pending[0][2]['error']}){where}"
        )

    def _connect(self) -> None:
        if self.client is not None:
            return
        client = mlflow_client(self.uri)
        exp = client.get_experiment_by_name(self.experiment)
        if exp is None:  # its artifacts where a moved store finds them (docs/tracking.md, "Moving results")
            self.experiment_id = create_experiment(client, self.uri, self.artifact_root, self.experiment)
        else:
            check_artifact_folder(self.uri, exp)
            self.experiment_id = exp.experiment_id
        if exp is None or EXPERIMENT_KIND[0] not in exp.tags:  # (one a researcher set is kept)
            client.set_experiment_tag(self.experiment_id, *EXPERIMENT_KIND)
        if self.traces:
            import mlflow

            mlflow.set_tracking_uri(self.uri)  # the trace exporter writes to the global store
        self.client = client

    def note_command(self, command: str) -> None:
        """The experiment's description (``mlflow.note.content``): what it is and the commands that
        wrote it, newest first."""
        exp = self.client.get_experiment(self.experiment_id)
        old = exp.tags.get(NOTE, "")
        if NOTE_TAIL not in old and old.strip():  # a description someone wrote: left alone
            return
        lines = [line.strip().removeprefix("- ").strip("`") for line in old.splitlines() if line.startswith(("`", "- `"))]
        commands = [command] + [c for c in lines if c != command]
        earlier = [f"- `{c}`" for c in commands[1:NOTE_COMMANDS]]
        # the UI shows a description's first line until it is opened: the latest command
        text = "\n".join(
            [f"`{command}`", ""] + (["Earlier commands, newest first:", "", *earlier, ""] if earlier else []) + [NOTE_TAIL]
        )
        if text != old:
            self.client.set_experiment_tag(self.experiment_id, NOTE, text)

    def _search(self, query: str) -> Any:
        """Live runs of the experiment matching ``query``, every page."""
        token = None
        while True:
            page = self.client.search_runs([self.experiment_id], filter_string=query, max_results=1000, page_token=token)
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

    def _start_job(
        self, name: str, params: dict[str, str], tags: dict[str, str], parent: str | None, start_ms: int | None = None
    ) -> None:
        self._connect()
        if tags.get(NOTE):
            self.note_command(tags[NOTE])
        tags = {LEVEL: "job", **tags, **({"mlflow.parentRunId": parent} if parent else {})}
        run = self._job_run(tags.get(JOB_DIR), self.job_run_id)
        if run is None:
            run = self.client.create_run(self.experiment_id, start_time=start_ms, run_name=name, tags=mlflow_keys(tags))
            self.job_run_id, self._episodes, self._complete = run.info.run_id, {}, set()
            log_batch(self.client, self.job_run_id, params=params)
            return
        # a resumed job: its run again, not a second one; params are immutable, so only new ones
        self.job_run_id = run.info.run_id
        self._load_episodes()
        have, wanted = run.data.params, mlflow_keys(params, MAX_PARAM_LEN)
        changed = {f"mcpworld.param_changed.{k}": v for k, v in wanted.items() if k in have and have[k] != v}
        self.client.update_run(self.job_run_id, status="RUNNING")
        log_batch(
            self.client, self.job_run_id, params={k: v for k, v in wanted.items() if k not in have}, tags={**tags, **changed}
        )

    def _log_episode(self, result: EpisodeResult, episode_dir: Path) -> None:
        if self.job_run_id is None:
            raise RuntimeError("the job run was not created")
        key = episode_key(result)
        self._complete.discard(key)
        runs = self._episodes.setdefault(key, [])
        while runs:  # an earlier run of this episode (a resumed job's, a failed try's): replaced, not doubled
            self.client.delete_run(runs[0])
            runs.pop(0)
        from mcpworld.telemetry.trace import read_trace

        trace_file = episode_dir / "trace.jsonl"
        events = read_trace(trace_file) if trace_file.is_file() else []
        written = episode_dir / "result.json"
        start_ms, end_ms = episode_window(result, events, written.stat().st_mtime if written.exists() else time.time())
        # what decides results is a param (the job's names); tags say how it ended and where it lies
        tags = {
            LEVEL: "episode",
            "mlflow.parentRunId": self.job_run_id,
            "task_id": result.task_id,
            "status": result.status,
            "termination": result.termination,
            EPISODE_DIR: str(episode_dir.absolute()),
            EPISODE_KEY: key,
            **self._shared_tags,
        }
        name = episode_run_name(result, self._shared_tags.get(DIFFERS, ""))
        run_id = self.client.create_run(
            self.experiment_id, start_time=start_ms, run_name=name, tags=mlflow_keys(tags)
        ).info.run_id
        runs.append(run_id)
        try:
            series = step_series(result, events)
            log_batch(
                self.client,
                run_id,
                params=episode_params(self._job_params, result),
                metrics=episode_metrics(result, series),
                series=series,
                timestamp_ms=end_ms,
            )
            for item in sorted(episode_dir.iterdir()):
                if item.is_file():
                    self.client.log_artifact(run_id, str(item))
                elif item.name in EPISODE_ARTIFACTS and (item.name != "screens" or self.log_screenshots):
                    self.client.log_artifacts(run_id, str(item), artifact_path=item.name)
            if events:
                self._log_page(run_id, events, episode_dir)
                if self.traces:
                    from mcpworld.telemetry.spans import log_trace

                    log_trace(
                        self.client,
                        self.experiment_id,
                        run_id,
                        events,
                        result,
                        name=name,
                        tags={
                            **{k: str(v) for k, v in result.labels.items()},
                            "mcpworld.job_run_id": self.job_run_id,
                            "mcpworld.run_id": run_id,
                        },  # screenshots attached only when they are logged
                        episode_dir=episode_dir if self.log_screenshots else None,
                    )
                    STORE_LOG.check()  # MLflow logs a trace it could not write instead of raising
            self.client.set_terminated(run_id, EPISODE_RUN_STATUS.get(result.status, "FINISHED"), end_time=end_ms)
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

    def _finish_job(self, metrics: dict[str, float], artifacts: list[Path], status: str, end_ms: int | None = None) -> None:
        if self.job_run_id is None:
            raise RuntimeError("the job run was not created")
        try:
            self._log_summary(self.job_run_id, metrics, artifacts)
        except Exception:
            with contextlib.suppress(Exception):  # not left RUNNING; the retry sets the job's own status
                self.client.set_terminated(self.job_run_id, "FAILED")
            raise
        self.client.set_terminated(self.job_run_id, status, end_time=end_ms)

    def _log_summary(self, job_run_id: str, metrics: dict[str, float], artifacts: list[Path]) -> None:
        import shutil
        import tempfile

        numbers = {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        log_batch(self.client, job_run_id, metrics=numbers)  # whatever the job's summary holds, by its names
        with tempfile.TemporaryDirectory() as tmp:  # overrides may carry a key typed on the command line
            for path in artifacts:
                # the whole resolved config, as config.yaml (its hash is the param config.sha256)
                copy = Path(tmp) / ("config.yaml" if path.name == "resolved_config.yaml" else path.name)
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
                    self.client.log_artifacts(job_run_id, str(copy), artifact_path=path.name)
                else:
                    self.client.log_artifact(job_run_id, str(copy))
