"""The ``mlflow`` backend the job uses: ``MlflowLogger`` run in a child process, fed through a
queue. Apart from the logger because it is only process plumbing (fork, signals, a bounded wait,
never outliving the job); what is written, and how, is the logger's."""

from __future__ import annotations

import atexit
import os
import queue
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from mcpworld.core.result import EpisodeResult
from mcpworld.telemetry.tracking.logger import MlflowLogger
from mcpworld.telemetry.tracking.pending import note_lost
from mcpworld.telemetry.tracking.store import reason
from mcpworld.telemetry.tracking.tracker import Tracker, check_status


class MlflowTracker(Tracker):
    """The job's tracker: logging runs in a child process (its own interpreter, so MLflow's import
    and its sqlalchemy work never hold the episodes' GIL); calls only enqueue. The child ignores
    Ctrl-C and SIGTERM (a terminal or a scheduler signals the whole process group: the job decides
    when logging ends) and never outlives the job; ``finish_job`` waits for it a bounded time."""

    FINISH_TIMEOUT_S = 900.0  # how long the job waits for its logging to drain …
    KILLED_TIMEOUT_S = 60.0  # … and when it was interrupted (someone is waiting for it to stop)

    def __init__(self, uri: str, artifact_root: str, experiment: str, log_screenshots: bool = True, traces: bool = True):
        import multiprocessing

        context = multiprocessing.get_context("fork")  # no re-import; the job has no threads yet
        self.uri, self.experiment = uri, experiment
        self._jobs, self._answers = context.Queue(), context.Queue()
        settings = (uri, artifact_root, experiment, log_screenshots, traces)
        self._process = context.Process(
            target=_serve, args=(settings, self._jobs, self._answers, os.getpid()), name="mlflow-tracker", daemon=True
        )
        self._process.start()
        atexit.register(self._stop)  # before multiprocessing's own exit hook, which would SIGTERM and wait

    def start_job(self, name: str, params: dict[str, str], tags: dict[str, str], parent_run_id: str | None = None) -> None:
        # the job's own start and end times (not when the tracker process got to them): the UI's Duration
        self._jobs.put(("start_job", (name, params, tags, parent_run_id, int(time.time() * 1000))))

    def log_episode(self, result: EpisodeResult, episode_dir: Path) -> None:
        self._jobs.put(("log_episode", (result, episode_dir)))

    def finish_job(
        self, metrics: dict[str, float], artifacts: list[Path], status: str = "FINISHED", job_dir: Path | None = None
    ) -> list[str]:
        check_status(status)
        self._jobs.put(("finish_job", (metrics, artifacts, status, job_dir, int(time.time() * 1000))))
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
                why = (
                    f"the MLflow tracker did not finish within {limit:.0f} s and was stopped"
                    if alive
                    else f"the MLflow tracker process exited with code {self._process.exitcode}"
                )
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
