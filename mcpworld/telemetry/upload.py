"""Log a finished job's folder to MLflow after the fact: for a job whose tracking store was down
(``tracking_pending.json``), or one run with ``tracking=none``. Everything is read from disk:
``resolved_config.yaml`` (params), ``summary.json`` (job metrics) and every episode's folder.

    python -m mcpworld.telemetry.upload JOB_DIR [--uri URI] [--experiment NAME]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from mcpworld.result import EpisodeResult
from mcpworld.telemetry.provenance import run_tags
from mcpworld.telemetry.tracking import MlflowLogger, flatten


def upload(job_dir: Path, uri: str | None = None, experiment: str | None = None,
           artifact_root: str = "outputs/mlartifacts") -> list[str]:
    """Log the job and its episodes; what still could not be logged."""
    job_dir = Path(job_dir)
    config_file = job_dir / "resolved_config.yaml"
    if not config_file.is_file():
        raise SystemExit(f"mcpworld.telemetry.upload: {job_dir} is not a job folder (no resolved_config.yaml)")
    resolved = yaml.safe_load(config_file.read_text()) or {}
    pending_file = job_dir / "tracking_pending.json"
    pending = json.loads(pending_file.read_text()) if pending_file.is_file() else {}
    tracking = resolved.get("tracking") or {}
    uri = uri or pending.get("uri") or tracking.get("uri") or "sqlite:///outputs/mlflow.db"
    tracker = MlflowLogger(uri, tracking.get("artifact_root") or artifact_root,
                            experiment or pending.get("experiment") or tracking.get("experiment") or "default",
                            bool(tracking.get("log_screenshots", True)), bool(tracking.get("traces", True)))
    summary = json.loads((job_dir / "summary.json").read_text()) if (job_dir / "summary.json").is_file() else {}
    name = str(summary.pop("job", job_dir.name))
    listed = {r.get("dir") for r in pending.get("not_logged", []) if r.get("kind") == "episode"}
    if pending.get("job_run_id"):  # the job run exists: add only what it is missing
        tracker.job_run_id = pending["job_run_id"]
    else:
        listed = set()
        tracker.start_job(name, flatten(resolved), {"mcpworld.job_dir": str(job_dir), "mcpworld.uploaded": "true",
                                                    **run_tags(resolved, name)})
    for result_file in sorted((job_dir / "episodes").rglob("result.json")):
        if not listed or str(result_file.parent) in listed:
            tracker.log_episode(EpisodeResult.read(result_file), result_file.parent)
    metrics = {k: float(v) for k, v in summary.items() if isinstance(v, (int, float))}
    artifacts = [p for p in (job_dir / ".hydra", job_dir / "summary.json", config_file) if p.exists()]
    not_logged = tracker.finish_job(metrics, artifacts, job_dir=job_dir)
    if not not_logged and pending_file.is_file():
        pending_file.unlink()
    return not_logged


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mcpworld.telemetry.upload", description=__doc__.split("\n\n")[0])
    parser.add_argument("job_dir", type=Path)
    parser.add_argument("--uri", help="tracking URI (default: the job's, or the one it could not reach)")
    parser.add_argument("--experiment", help="MLflow experiment (default: the job's)")
    args = parser.parse_args(argv)
    not_logged = upload(args.job_dir, args.uri, args.experiment)
    if not_logged:
        sys.exit(1)
    print(f"mcpworld: logged {args.job_dir} to MLflow")


if __name__ == "__main__":
    main()
