"""Resuming a job in its own folder: the same command with the same ``hydra.run.dir`` /
``hydra.sweep.dir`` runs only what is not finished yet.

An episode is keyed by the job's config hash, its task and its attempt. One with a final result
(a verdict on the agent) is kept and skipped; one that ended ``infra_error``, ``eval_error`` (its
grader gave no verdict: fix the grader or ``toolathlon.python``, then resume) or ``interrupted``, or
left no result (a killed process), is set aside under a new name (never deleted) and run again.
``resume=false`` sets the whole ``episodes/`` folder aside and starts over.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpworld.core.errors import UserError
from mcpworld.core.result import NOT_JUDGED, EpisodeResult

JOB_FILE = "job.json"
# Keys that change how a job runs, not what its episodes mean: changing them keeps finished episodes.
RUN_MECHANICS = ("resume", "concurrency", "attempts", "infra_retries")


def job_hash(resolved: dict[str, Any]) -> str:
    """The hash that decides whether a folder's episodes belong to this config (secrets and run
    mechanics left out, so a rotated key or more attempts still resume)."""
    from mcpworld.core.secrets import strip_secrets
    from mcpworld.telemetry.provenance import config_hash

    return config_hash({k: v for k, v in strip_secrets(resolved).items() if k not in RUN_MECHANICS})


def set_aside(folder: Path, why: str) -> Path:
    """Rename ``folder`` to ``<name>.<why><n>`` (first free n ≥ 1), keeping it for inspection."""
    n = 1
    while (target := folder.with_name(f"{folder.name}.{why}{n}")).exists():
        n += 1
    folder.rename(target)
    return target


@dataclass
class ResumePlan:
    done: dict[tuple[str, int], EpisodeResult] = field(default_factory=dict)  # kept, not run again
    set_aside: list[Path] = field(default_factory=list)  # unfinished tries moved out of the way

    def describe(self, to_run: int) -> str:
        again = f", {len(self.set_aside)} unfinished one(s) set aside and run again" if self.set_aside else ""
        return f"resuming: {len(self.done)} episode(s) already finished, skipped{again}; {to_run} to run"


def plan(job_dir: Path, digest: str, resume: bool, keys: list[tuple[str, int]]) -> ResumePlan:
    """Decide what to keep in ``job_dir`` for these (task id, attempt) keys, and record ``digest``."""
    job_file = job_dir / JOB_FILE
    episodes = job_dir / "episodes"
    result = ResumePlan()
    previous = _read_hash(job_file)
    if resume and previous is not None and previous != digest:
        raise UserError(
            f"{job_dir} holds episodes of a different config (hash {previous}, this one {digest}): "
            "use a new hydra.run.dir / hydra.sweep.dir, or resume=false to start over there "
            "(the old episodes are kept aside)"
        )
    if episodes.exists() and (previous is None or not resume):
        result.set_aside.append(set_aside(episodes, time.strftime("before-%Y%m%d-%H%M%S-")))
    elif episodes.exists():
        for task_id, attempt in keys:
            folder = episodes / task_id / str(attempt)
            if not folder.exists():
                continue
            status = _final_status(folder)
            if status is None or status in NOT_JUDGED:
                result.set_aside.append(set_aside(folder, status or "incomplete"))
            else:
                result.done[(task_id, attempt)] = EpisodeResult.read(folder / "result.json")
    job_dir.mkdir(parents=True, exist_ok=True)
    job_file.write_text(json.dumps({"config_hash": digest}))
    return result


def _read_hash(job_file: Path) -> str | None:
    try:
        return str(json.loads(job_file.read_text())["config_hash"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _final_status(folder: Path) -> str | None:
    try:
        return str(json.loads((folder / "result.json").read_text(encoding="utf-8"))["status"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
