"""The run's configuration composed as `python -m mcpworld` composes it, from the package's own conf/."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir

from mcpworld.config.schema import register

register()  # the structured schema the tree composes against
CONF = str((Path(__file__).resolve().parents[2] / "mcpworld" / "conf").absolute())


def make(*overrides: str, hydra_cfg: bool = False):
    """The composed config for these command-line overrides (with Hydra's own node when ``hydra_cfg``)."""
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=hydra_cfg)
