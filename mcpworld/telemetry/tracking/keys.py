"""Names and values as MLflow takes them: config flattened to params, any name made a valid key,
the tag names that find runs again. Pure functions, shared by every writer (and by the ``none``
backend's callers), so kept apart from anything that talks to a store."""

from __future__ import annotations

import re
from typing import Any

from mcpworld.core.result import EpisodeResult
from mcpworld.core.secrets import SECRET_KEY

MAX_PARAM_LEN = 6000
MAX_KEY_LEN = 250  # MLflow's limit on metric, param and tag keys
MAX_TAG_LEN = 8000
KEY_UNSAFE = re.compile(r"[^\w.\- :/]")
LEVEL = "mcpworld.level"
JOB_DIR, EPISODE_DIR, EPISODE_KEY = "mcpworld.job_dir", "mcpworld.episode_dir", "mcpworld.episode_key"
# what tells a job from its sweep siblings (its overrides of the swept keys, `` · ``-joined): a tag on
# the job run and its episode runs, whose names it completes
DIFFERS = "mcpworld.differs"


def flatten(data: Any, prefix: str = "") -> dict[str, str]:
    """Dotted keys → string values, secrets dropped."""
    out: dict[str, str] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            if SECRET_KEY.search(str(key)):
                continue
            out.update(flatten(value, f"{prefix}{key}."))
    else:
        out[prefix.rstrip(".")] = str(data)[:MAX_PARAM_LEN]
    return out


def mlflow_key(name: str) -> str:
    """Any name as a metric, param or tag key that MLflow 3.17 takes (alphanumerics and ``_ - . space
    : /``; no empty, ``.`` or ``..`` path part; ≤ 250 chars): one bad key rejects the whole batch.
    Stable and readable: ``metric.exact_match#0`` → ``metric.exact_match.0``, other characters → ``_``."""
    text = KEY_UNSAFE.sub("_", str(name).replace("#", "."))[: MAX_KEY_LEN - 1]
    key = "/".join("_" if part in (".", "..") else part for part in text.split("/") if part) or "_"
    return "_" + key if key.startswith("..") else key


def mlflow_keys(data: dict[str, Any], max_len: int = MAX_TAG_LEN) -> dict[str, str]:
    """Params or tags with valid keys and values cut to MLflow's length limit."""
    return {mlflow_key(k): str(v)[:max_len] for k, v in data.items()}


def episode_key(result: EpisodeResult) -> str:
    """An episode's identity inside its job (its folder is ``episodes/<key>``)."""
    return f"{result.task_id}/{result.attempt}"
