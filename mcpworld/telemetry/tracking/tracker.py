"""What the job sees: the ``Tracker`` interface (a no-op, which is the ``none`` backend), the run
statuses it takes, and the backends by name. Kept free of mlflow and of the tracker process, so that
``tracking=none`` imports neither; a backend's module is imported only when it is chosen."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mcpworld.core.registry import Registry
from mcpworld.core.result import EpisodeResult

if TYPE_CHECKING:
    from mcpworld.config.schema import TrackingConfig

RUN_STATUSES = ("FINISHED", "FAILED", "KILLED")


def check_status(status: str) -> None:
    if status not in RUN_STATUSES:
        raise ValueError(f"run status {status!r} is unknown; use one of {', '.join(RUN_STATUSES)}")


class Tracker:
    """No-op base: ``tracking=none``."""

    busy_s = 0.0  # time spent logging (by the tracker's own process)

    def start_job(self, name: str, params: dict[str, str], tags: dict[str, str], parent_run_id: str | None = None) -> None:
        """Open the job's run, or reopen the one its folder (tag ``mcpworld.job_dir``) already has."""

    def log_episode(self, result: EpisodeResult, episode_dir: Path) -> None:
        """Log one episode as a child run, replacing an earlier run of the same episode."""

    def finish_job(
        self, metrics: dict[str, float], artifacts: list[Path], status: str = "FINISHED", job_dir: Path | None = None
    ) -> list[str]:
        """Close the job's run as ``status`` (FINISHED, FAILED or KILLED) once the tracker has drained;
        what could not be logged (empty when all was)."""
        check_status(status)
        return []


TrackerFactory = Callable[["TrackingConfig"], Tracker]
BACKENDS: Registry[TrackerFactory] = Registry("tracking.backend", group="mcpworld.trackers")  # the tracker each backend makes


@BACKENDS.register("none")
def _none(tracking: TrackingConfig) -> Tracker:
    return Tracker()


@BACKENDS.register("mlflow")
def _mlflow(tracking: TrackingConfig) -> Tracker:
    from mcpworld.telemetry.tracking.process import MlflowTracker

    return MlflowTracker(tracking.uri, tracking.artifact_root, tracking.experiment, tracking.log_screenshots, tracking.traces)


def make_tracker(tracking: TrackingConfig) -> Tracker:
    """The tracker of ``tracking.backend``, from the run's ``tracking`` section."""
    return BACKENDS.get(tracking.backend)(tracking)
