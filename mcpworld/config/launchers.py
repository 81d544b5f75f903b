"""Hydra launcher plugins a sweep may run on (mcpworld/conf/hydra/launcher/), and the extra each needs.

Selecting a launcher whose plugin is not installed would otherwise end in an import traceback from
deep inside Hydra; this says which extra to install before Hydra starts.
"""

from __future__ import annotations

import importlib.util
import warnings

# launcher preset -> (the plugin's module, the mcpworld extra that installs it)
PLUGINS = {
    "joblib": ("hydra_plugins.hydra_joblib_launcher", None),
    "submitit_local": ("hydra_plugins.hydra_submitit_launcher", "slurm"),
    "submitit_slurm": ("hydra_plugins.hydra_submitit_launcher", "slurm"),
    "ray": ("hydra_plugins.hydra_ray_launcher", "ray"),
}


def missing_plugin(argv: list[str]) -> str | None:
    """One line naming the extra to install when ``argv`` picks a launcher whose plugin is absent."""
    for arg in argv:
        key, _, name = arg.partition("=")
        if key.lstrip("+~") != "hydra/launcher" or name not in PLUGINS:
            continue
        module, extra = PLUGINS[name]
        if importlib.util.find_spec(module) is None:
            fix = f"pip install -e '.[{extra}]'" if extra else "pip install -e ."
            return (
                f"hydra/launcher={name} needs its Hydra plugin ({module.split('.')[-1]}), which is not "
                f"installed: {fix} (the `{extra or 'core'}` extra)"
            )
    return None


def quiet_schema_matching() -> None:
    """Our presets carry the plugins' own names, so Hydra checks them against the plugin's schema
    and fills in what they leave out; that is what we want, but Hydra warns about it each run."""
    warnings.filterwarnings(
        "ignore", message=r"(?s).*is validated against ConfigStore schema with the same name", category=UserWarning
    )
