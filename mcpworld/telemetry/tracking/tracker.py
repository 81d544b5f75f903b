"""What the job sees: the ``Tracker`` interface (a no-op, which is the ``none`` backend), the run
statuses it takes, and the backends by name. Kept free of mlflow and of the tracker process, so that
``tracking=none`` imports neither; a backend's module is imported only when it is chosen."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from mcpworld.core.errors import UserError
from mcpworld.core.result import EpisodeResult

RUN_STATUSES = ("FINISHED", "FAILED", "KILLED")


def check_status(status: str) -> None:
    if status not in RUN_STATUSES:
        raise ValueError(f"run status {status!r} is unknown; use one of {', '.join(RUN_STATUSES)}")


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


TrackerFactory = Callable[[Any], Tracker]
BACKENDS: dict[str, TrackerFactory] = {}  # ``tracking.backend`` → the tracker it makes from the config


def backend(name: str) -> Callable[[TrackerFactory], TrackerFactory]:
    """Register the decorated function as the factory of ``tracking.backend=<name>``."""
    def register(factory: TrackerFactory) -> TrackerFactory:
        BACKENDS[name] = factory
        return factory
    return register


@backend("none")
def _none(cfg: Any) -> Tracker:
    return Tracker()


@backend("mlflow")
def _mlflow(cfg: Any) -> Tracker:
    from mcpworld.telemetry.tracking.process import MlflowTracker

    tracking = cfg.tracking
    return MlflowTracker(tracking.uri, tracking.artifact_root, tracking.experiment, tracking.log_screenshots,
                         tracking.get("traces", True))


def make_tracker(cfg: Any) -> Tracker:
    name = cfg.tracking.backend
    factory = BACKENDS.get(name)
    if factory is None:
        raise UserError(f"tracking.backend={name!r} is unknown; known: {', '.join(sorted(BACKENDS))}")
    return factory(cfg)
