"""Keys typed on the command line (``provider.api_key=…``) never stay in what Hydra writes or
prints: its config files are rewritten with secret values masked as soon as a job starts (the job
itself still gets the real value), and the launcher's "#0 : overrides" log lines are masked."""

from __future__ import annotations

import logging
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from mcpworld.core.secrets import mask_secrets

LAUNCHER_LOGGERS = (
    "hydra._internal.core_plugins.basic_launcher",
    "hydra_plugins.hydra_joblib_launcher.joblib_launcher",
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher",
    "hydra_plugins.hydra_ray_launcher.ray_launcher",
)


class MaskFilter(logging.Filter):
    """Masks secret assignments in a log record's message (arguments included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = mask_secrets(record.getMessage()), None
        return True


def mask_launcher_logs() -> None:
    for name in LAUNCHER_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, MaskFilter) for f in logger.filters):
            logger.addFilter(MaskFilter())


def mask_file(path: Path) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return
    masked = mask_secrets(text)
    if masked != text:
        path.write_text(masked, encoding="utf-8")


class MaskSecrets(Callback):
    def on_run_start(self, config: DictConfig, **kwargs: object) -> None:
        mask_launcher_logs()

    def on_multirun_start(self, config: DictConfig, **kwargs: object) -> None:
        mask_launcher_logs()

    def on_job_start(self, config: DictConfig, **kwargs: object) -> None:
        hc = config.hydra
        if hc.output_subdir is not None:
            folder = Path(hc.runtime.output_dir) / hc.output_subdir
            for name in ("config.yaml", "hydra.yaml", "overrides.yaml"):
                mask_file(folder / name)
        mask_file(Path(hc.sweep.dir) / "multirun.yaml")

    def on_multirun_end(self, config: DictConfig, **kwargs: object) -> None:
        mask_file(Path(config.hydra.sweep.dir) / "multirun.yaml")
