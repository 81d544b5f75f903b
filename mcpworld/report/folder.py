"""Episodes from job and sweep folders (``outputs/…``) instead of MLflow: a run with
``tracking=none``, or one whose store is elsewhere, can still be reported. The folder's
``result.json`` files hold what MLflow's episode runs hold: the labels are the params (model,
resolution, modality, provider, seed …) and ``EpisodeResult.numbers()`` the metrics. A job folder's
``resolved_config.yaml`` adds the job params MLflow's episode runs carry too (``max_steps``, ``screen``,
``temperature`` …: telemetry/tracking/vocabulary.py), so a sweep over ``agent.max_steps`` groups here as
it does in MLflow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mcpworld.core.errors import UserError
from mcpworld.core.result import EpisodeResult, Status
from mcpworld.report.tables import Episode
from mcpworld.telemetry.tracking.vocabulary import job_params

CONFIG = "resolved_config.yaml"  # what a job writes beside its episodes/ (secrets masked)


def episode_of(result: EpisodeResult, job: dict[str, str] | None = None) -> Episode:
    params = {
        **(job or {}),
        **result.labels,
        "app": result.app,
        "task_id": result.task_id,
        "attempt": str(result.attempt),
        "termination": result.termination,
    }
    return Episode(
        params=params,
        task_id=result.task_id,
        infra_error=result.status == Status.infra_error,
        success=float(result.status == Status.success),
        metrics=result.numbers(),
        eval_error=result.status == Status.eval_error,
        status=str(result.status),
    )


def job_config(job_dir: Path) -> dict[str, Any] | None:
    """The job's resolved config (``resolved_config.yaml``), or None when the folder has none or it does
    not read (a job written before the file existed)."""
    path = job_dir / CONFIG
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    return data if isinstance(data, dict) else None


def job_configs(folders: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """Each job folder under ``folders`` with its resolved config (those that have one)."""
    found = []
    for folder in folders:
        for path in sorted(folder.rglob(CONFIG)):
            config = job_config(path.parent)
            if config is not None:
                found.append((path.parent, config))
    return found


def load_folders(folders: list[Path]) -> list[Episode]:
    """Every episode under the folders (a job's ``episodes/<task>/<attempt>/result.json``; a sweep's
    jobs below it). Set-aside tries (``0.infra_error1``) are not episodes: their attempt is no number."""
    episodes = []
    for folder in folders:
        if not folder.is_dir():
            raise UserError(f"--dir {folder}: no such folder (a job or sweep folder under outputs/)")
        found = [
            p
            for p in sorted(folder.rglob("result.json"))
            if p.parent.name.isdigit() and "episodes" in p.parts[len(folder.parts) :]
        ]
        if not found:
            raise UserError(f"--dir {folder}: no episodes/<task>/<attempt>/result.json under it")
        params: dict[Path, dict[str, str]] = {}
        for path in found:
            result = EpisodeResult.read(path)
            # <job>/episodes/<task>/<attempt>/result.json, a task id with a slash (suite/name) one folder deeper
            job_dir = path.parents[len(result.task_id.split("/")) + 2]
            if job_dir not in params:
                config = job_config(job_dir)
                params[job_dir] = (
                    {k: v for k, v in job_params(config).items() if k not in ("tasks", "config.sha256")} if config else {}
                )
            episodes.append(episode_of(result, params[job_dir]))
    return episodes
