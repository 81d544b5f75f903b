"""Episodes from job and sweep folders (``outputs/…``) instead of MLflow: a run with
``tracking=none``, or one whose store is elsewhere, can still be reported. The folder's
``result.json`` files hold what MLflow's episode runs hold: the labels are the params (model,
resolution, modality, provider, seed …) and ``EpisodeResult.numbers()`` the metrics."""

from __future__ import annotations

from pathlib import Path

from mcpworld.core.errors import UserError
from mcpworld.core.result import EpisodeResult, Status
from mcpworld.report.tables import Episode


def episode_of(result: EpisodeResult) -> Episode:
    params = {**result.labels, "app": result.app, "task_id": result.task_id, "attempt": str(result.attempt),
              "termination": result.termination}
    return Episode(params=params, task_id=result.task_id, infra_error=result.status == Status.infra_error,
                   success=float(result.status == Status.success), metrics=result.numbers(),
                   eval_error=result.status == Status.eval_error)


def load_folders(folders: list[Path]) -> list[Episode]:
    """Every episode under the folders (a job's ``episodes/<task>/<attempt>/result.json``; a sweep's
    jobs below it). Set-aside tries (``0.infra_error1``) are not episodes: their attempt is no number."""
    episodes = []
    for folder in folders:
        if not folder.is_dir():
            raise UserError(f"--dir {folder}: no such folder (a job or sweep folder under outputs/)")
        found = [p for p in sorted(folder.rglob("result.json"))
                 if p.parent.name.isdigit() and "episodes" in p.parts[len(folder.parts):]]
        if not found:
            raise UserError(f"--dir {folder}: no episodes/<task>/<attempt>/result.json under it")
        episodes += [episode_of(EpisodeResult.read(p)) for p in found]
    return episodes
