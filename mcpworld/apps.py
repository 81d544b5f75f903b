"""An app's own settings (``conf/app/<app>.yaml``), whichever app selection runs its tasks: the
selected app config when it is that app's, else the app's file (``app=all`` runs every app)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf

CONF_APPS = Path(__file__).resolve().parents[1] / "conf" / "app"


def app_setting(cfg: Any, app: str, key: str, default: Any = None) -> Any:
    if cfg.app.name == app:
        value = OmegaConf.select(cfg.app, key, default=default)
        return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    return _app_file(app).get(key, default)


@lru_cache(maxsize=None)
def _app_file(app: str) -> dict[str, Any]:
    """The app's file, read once per process (asked for at every episode)."""
    path = CONF_APPS / f"{app}.yaml"
    return (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}
