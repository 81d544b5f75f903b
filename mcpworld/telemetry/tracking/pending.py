"""``tracking_pending.json``: what a job could not log, written by the logger (or by the job when
its tracker process died) and read by ``python -m mcpworld.telemetry.upload``. One file format,
one place, shared by both sides."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcpworld.core.secrets import mask_secrets

PENDING_FILE = "tracking_pending.json"


def read_pending(job_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((Path(job_dir) / PENDING_FILE).read_text())
    except (OSError, ValueError):
        return {}


def write_pending(job_dir: Path, uri: str, experiment: str, job_run_id: str | None, records: list[dict[str, Any]]) -> Path:
    path = Path(job_dir) / PENDING_FILE
    path.write_text(
        json.dumps(
            {"uri": mask_secrets(uri), "experiment": experiment, "job_run_id": job_run_id, "not_logged": records}, indent=2
        )
    )
    return path


def note_lost(why: str, uri: str, experiment: str, job_dir: Path | None) -> str:
    """The tracker process ended before it answered: say so in one line and in the pending file
    (``upload`` finds what is missing by itself)."""
    where = ""
    if job_dir is not None:
        old = read_pending(job_dir)
        path = write_pending(
            job_dir, uri, experiment, old.get("job_run_id"), [*old.get("not_logged", []), {"kind": "unknown", "error": why}]
        )
        where = f"; noted in {path}: log what is missing with python -m mcpworld.telemetry.upload {job_dir}"
    print(f"mcpworld: warning: {why}; this job's MLflow runs may be incomplete{where}", file=sys.stderr)
    return why
