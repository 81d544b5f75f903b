"""A multirun's parent run: opened (or reopened) before its jobs, its id left in the sweep folder
for jobs in other processes or on other hosts, closed with the sweep's numbers. Called by Hydra's
sweep callback and the job, not by the tracker, so kept on its own."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from mcpworld.core.secrets import mask_secrets
from mcpworld.telemetry.tracking.keys import LEVEL, mlflow_keys
from mcpworld.telemetry.tracking.logger import MlflowLogger
from mcpworld.telemetry.tracking.store import STORE_LOG, log_batch, mlflow_client, reason
from mcpworld.telemetry.tracking.tracker import check_status
from mcpworld.telemetry.tracking.vocabulary import command_line, source_tags, sweep_run_name

SWEEP_FILE = ".mcpworld_sweep.json"
UI_DEFAULT = "http://127.0.0.1:5000"  # where `mlflow ui` serves unless told
MULTIRUN_FILE = "multirun.yaml"  # the sweep's config, which Hydra's sweeper writes before any job


def start_sweep_run(cfg: Any, sweep_dir: Path, overrides: list[str]) -> str | None:
    """The parent run a multirun's job runs nest under (a resumed sweep's own run again, found by its
    folder); its id is left in the sweep folder for the jobs (which may run in other processes or on
    other hosts sharing the folder)."""
    if cfg.tracking.backend != "mlflow":
        return None
    where = str(Path(sweep_dir).absolute())
    try:
        tracker = MlflowLogger(cfg.tracking.uri, cfg.tracking.artifact_root, cfg.tracking.experiment, traces=False)
        tracker._connect()
        from mcpworld.telemetry.provenance import git_state

        command = mask_secrets(command_line(sys.argv))
        tracker.note_command(command)
        tags = {
            LEVEL: "sweep",
            "mcpworld.sweep_dir": where,
            "mcpworld.sweep": mask_secrets(" ".join(overrides))[:5000],
            **source_tags(git_state()),
            "mlflow.note.content": command,
        }
        run = tracker._find_run("sweep", "mcpworld.sweep_dir", where)
        if run is None:
            name = mask_secrets(sweep_run_name(list(overrides), Path(sweep_dir).as_posix()))
            run = tracker.client.create_run(tracker.experiment_id, run_name=name, tags=mlflow_keys(tags))
        else:
            tracker.client.update_run(run.info.run_id, status="RUNNING")
            log_batch(tracker.client, run.info.run_id, tags=tags)
    except Exception as exc:
        print(
            f"mcpworld: warning: no MLflow parent run for this sweep ({reason(exc)}); its jobs are logged without one",
            file=sys.stderr,
        )
        return None
    Path(sweep_dir).mkdir(parents=True, exist_ok=True)
    (Path(sweep_dir) / SWEEP_FILE).write_text(
        json.dumps({"run_id": run.info.run_id, "uri": tracker.uri, "experiment_id": tracker.experiment_id})
    )
    return run.info.run_id


def swept_keys(sweep_dir: Path) -> list[str]:
    """The keys a multirun sweeps (``resolution=square,rect``, ``range(…)``, a preset's
    ``hydra.sweeper.params``), read from the ``multirun.yaml`` Hydra's sweeper left in the sweep
    folder; none for a folder that holds no sweep (a single run)."""
    import yaml
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    try:
        hydra = OmegaConf.load(Path(sweep_dir) / MULTIRUN_FILE).hydra
        params = hydra.sweeper.get("params") or {}
        lines = [str(o) for o in hydra.overrides.task] + [f"{k}={v}" for k, v in params.items()]
    except (OSError, ValueError, AttributeError, yaml.YAMLError):
        return []
    parser, keys = OverridesParser.create(), []
    for line in lines:
        try:
            (override,) = parser.parse_overrides([line])
        except HydraException:  # not Hydra's grammar: no job could have come of it
            continue
        if override.is_sweep_override() and override.key_or_group not in keys:
            keys.append(override.key_or_group)
    return keys


def sweep_parent(job_dir: Path) -> str | None:
    """The sweep's parent run id when this job belongs to one."""
    path = Path(job_dir).parent / SWEEP_FILE
    try:
        return json.loads(path.read_text())["run_id"]
    except (OSError, ValueError, KeyError):
        return None


def runs_link(sweep_dir: Path) -> str | None:
    """Where the sweep's runs open in MLflow's UI: the runs table, since MLflow 3.17.2 opens an
    experiment's plain link on its GenAI overview in a browser that never chose "Model training"
    (docs/tracking.md). A sqlite store's is where ``mlflow ui`` serves by default."""
    try:
        info = json.loads((Path(sweep_dir) / SWEEP_FILE).read_text())
        uri, experiment_id = str(info["uri"]), str(info["experiment_id"])
    except (OSError, ValueError, KeyError):
        return None
    served = uri.startswith(("http://", "https://"))
    if served:  # a password in the store's URI stays out of a printed link
        parts = urlsplit(uri)
        uri = urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1])).rstrip("/")
    link = f"{uri if served else UI_DEFAULT}/#/experiments/{experiment_id}/runs?workflowType=machine_learning"
    return mask_secrets(link if served else f"{link} (once `mlflow ui --backend-store-uri {uri}` serves it)")


def finish_sweep_run(sweep_dir: Path, metrics: dict[str, float], status: str = "FINISHED") -> None:
    """Log the sweep's numbers on its parent run and close it as ``status`` (FINISHED, FAILED, KILLED)."""
    check_status(status)
    path = Path(sweep_dir) / SWEEP_FILE
    if not path.exists():  # not a tracked sweep
        return
    try:
        info = json.loads(path.read_text())
        client = mlflow_client(info["uri"])
        STORE_LOG.records.clear()
        log_batch(client, info["run_id"], metrics=metrics)
        client.set_terminated(info["run_id"], status)
        STORE_LOG.check()
    except Exception as exc:
        print(f"mcpworld: warning: the sweep's MLflow parent run was not closed ({reason(exc)})", file=sys.stderr)
