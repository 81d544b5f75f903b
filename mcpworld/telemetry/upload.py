"""Log a job's folder to MLflow after the fact: what a job could not log (its store was down:
``tracking_pending.json``), or a whole job run with ``tracking=none``. Everything is read from disk:
``resolved_config.yaml`` (params), ``summary.json`` (job metrics) and every episode's folder.

    python -m mcpworld.telemetry.upload JOB_DIR [--uri URI] [--experiment NAME]

The job's existing run is found (the pending file's ``job_run_id``, or the ``mcpworld.job_dir``
tag) and only what it lacks is added: episodes with no complete run, and those listed as pending.
Running it again adds nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from mcpworld.core.result import EpisodeResult
from mcpworld.core.secrets import mask_secrets
from mcpworld.telemetry.provenance import run_tags
from mcpworld.telemetry.tracking.keys import JOB_DIR
from mcpworld.telemetry.tracking.logger import MlflowLogger
from mcpworld.telemetry.tracking.pending import read_pending
from mcpworld.telemetry.tracking.store import reason
from mcpworld.telemetry.tracking.sweep import swept_keys
from mcpworld.telemetry.tracking.tracker import RUN_STATUSES
from mcpworld.telemetry.tracking.vocabulary import differs_tag, job_params, job_run_name, source_tags


def hydra_overrides(job_dir: Path) -> list[str]:
    """The job's overrides as Hydra kept them (``.hydra/overrides.yaml``), secrets masked."""
    try:
        return [mask_secrets(str(o)) for o in yaml.safe_load((job_dir / ".hydra" / "overrides.yaml").read_text()) or []]
    except (OSError, yaml.YAMLError, TypeError):
        return []


def upload(
    job_dir: Path, uri: str | None = None, experiment: str | None = None, artifact_root: str = "outputs/mlartifacts"
) -> list[str]:
    """Log what the job's runs lack; what still could not be logged."""
    job_dir = Path(job_dir).absolute()
    config_file = job_dir / "resolved_config.yaml"
    if not config_file.is_file():
        raise SystemExit(f"mcpworld.telemetry.upload: {job_dir} is not a job folder (no resolved_config.yaml)")
    resolved = yaml.safe_load(config_file.read_text()) or {}
    pending = read_pending(job_dir)
    tracking = resolved.get("tracking") or {}
    uri = uri or pending.get("uri") or tracking.get("uri") or "sqlite:///outputs/mlflow.db"
    tracker = MlflowLogger(
        uri,
        tracking.get("artifact_root") or artifact_root,
        experiment or pending.get("experiment") or tracking.get("experiment") or "default",
        bool(tracking.get("log_screenshots", True)),
        bool(tracking.get("traces", True)),
    )
    summary_file = job_dir / "summary.json"
    summary = json.loads(summary_file.read_text()) if summary_file.is_file() else {"status": "FAILED"}
    name = str(summary.pop("job", job_dir.name))
    given = summary.get("status")
    status = given if isinstance(given, str) and given in RUN_STATUSES else "FINISHED"
    try:
        job_status = tracker.attach(job_dir, pending.get("job_run_id"))
    except Exception as exc:
        raise SystemExit(
            f"mcpworld.telemetry.upload: the tracking store {mask_secrets(tracker.uri)} cannot be "
            f"read ({reason(exc)}); nothing was logged"
        ) from None
    if job_status is None:
        params, provenance = job_params(resolved), run_tags(resolved, name)
        overrides, swept = hydra_overrides(job_dir), swept_keys(job_dir.parent)  # named as the job would have
        tracker.start_job(
            job_run_name(params, overrides, swept),
            params,
            {
                JOB_DIR: str(job_dir),
                "mcpworld.uploaded": "true",
                **provenance,
                **differs_tag(overrides, swept),
                **source_tags(provenance),
            },
            start_ms=int(config_file.stat().st_mtime * 1000),
        )  # when the job began, not now
    elif job_status != "RUNNING" and not pending and not tracker.unlogged_episodes(job_dir):
        return []  # everything is in MLflow already
    for record in pending.get("not_logged", []):  # listed: logged again even where a run exists
        key = record.get("key") or f"{record.get('task_id')}/{record.get('attempt')}"
        folder = job_dir / "episodes" / key
        if record.get("kind") == "episode" and (folder / "result.json").is_file():
            tracker.log_episode(EpisodeResult.read(folder / "result.json"), folder)
    metrics = {k: float(v) for k, v in summary.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    artifacts = [p for p in (job_dir / ".hydra", summary_file, config_file) if p.exists()]
    ended = int(summary_file.stat().st_mtime * 1000) if summary_file.is_file() else None
    return tracker.finish_job(metrics, artifacts, status=status, job_dir=job_dir, end_ms=ended)  # and the unlogged episodes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mcpworld.telemetry.upload", description=__doc__.split("\n\n")[0])
    parser.add_argument("job_dir", type=Path)
    parser.add_argument("--uri", help="tracking URI (default: the job's, or the one it could not reach)")
    parser.add_argument("--experiment", help="MLflow experiment (default: the job's)")
    args = parser.parse_args(argv)
    not_logged = upload(args.job_dir, args.uri, args.experiment)
    if not_logged:
        sys.exit(1)  # the one-line summary was printed, and the pending file rewritten
    print(f"mcpworld: {args.job_dir} is logged to MLflow")


if __name__ == "__main__":
    main()
