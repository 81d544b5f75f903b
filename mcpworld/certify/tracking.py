"""The certificate as one MLflow run (tag ``mcpworld.level=certificate``, so reports of episode
runs never count it): the tasks per status as metrics, the CSV and Markdown table as artifacts.
It goes where ``tracking.*`` says, as a job's runs do; a store that fails costs a warning, not the
certificate, which is on disk already."""

from __future__ import annotations

import sys
from pathlib import Path

from mcpworld.certify.certificate import counts
from mcpworld.certify.verdict import TaskCertificate
from mcpworld.config.schema import TrackingConfig
from mcpworld.core.secrets import mask_secrets
from mcpworld.telemetry.tracking.keys import LEVEL
from mcpworld.telemetry.tracking.store import (
    absolute_sqlite_uri,
    check_artifact_folder,
    create_experiment,
    log_batch,
    mlflow_client,
    reason,
)


def log_certificate(
    tracking: TrackingConfig, certs: list[TaskCertificate], params: dict[str, str], regressions: int, files: list[Path]
) -> str | None:
    """The run's id, or None (tracking=none, or the store failed: one warning line)."""
    if tracking.backend == "none":
        return None
    uri = absolute_sqlite_uri(tracking.uri)
    try:
        client = mlflow_client(uri)
        exp = client.get_experiment_by_name(tracking.experiment)
        if exp is None:  # as a job's logger makes it: artifacts where a moved store finds them
            experiment_id = create_experiment(client, uri, tracking.artifact_root, tracking.experiment)
        else:
            check_artifact_folder(uri, exp)
            experiment_id = exp.experiment_id
        run = client.create_run(experiment_id, run_name="certify", tags={LEVEL: "certificate"})
        run_id = run.info.run_id
        metrics: dict[str, float] = {k: float(v) for k, v in counts(certs).items()}
        metrics |= {
            "tasks": float(len(certs)),
            "regressions": float(regressions),
            "episodes": float(sum(m.judged + len(m.unjudged) for c in certs for m in (c.oracle, c.noop, c.spoiled))),
        }
        log_batch(client, run_id, params={k: mask_secrets(v) for k, v in params.items()}, metrics=metrics)
        for path in files:
            client.log_artifact(run_id, str(path))
        client.set_terminated(run_id, "FINISHED")
        return str(run_id)
    except Exception as exc:
        print(f"certify: warning: the certificate was not logged to MLflow ({mask_secrets(uri)}): {reason(exc)}", file=sys.stderr)
        return None
