"""``python -m mcpworld [overrides] [-m]``: compose the config with Hydra and run one job."""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from mcpworld.config import register

register()


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> float:
    from mcpworld.errors import UserError
    from mcpworld.experiment import run_job

    try:
        return run_job(cfg)
    except UserError as exc:
        print(f"mcpworld: error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    from mcpworld.sweep_preview import preview, wants_preview

    if wants_preview(sys.argv[1:]):  # Hydra refuses --multirun with --cfg; print the sweep's jobs instead
        sys.exit(preview(sys.argv[1:]))
    main()
