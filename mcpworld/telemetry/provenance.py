"""Where a run came from, as MLflow tags: code version (git commit, dirty flag), package versions,
host, the Hydra override string and a hash of the resolved config — so two runs in the UI can be
told apart, and a paper table can name exactly what produced it."""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from mcpworld.core.paths import PROJECT

ROOT = PROJECT
PACKAGES = ("mcpworld", "hydra-core", "omegaconf", "mlflow", "mcp", "httpx", "nvidia-ml-py")


def git_state(root: Path = ROOT) -> dict[str, str]:
    """Commit and dirty flag of the checkout, or 'unknown' outside a git work tree."""

    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"mcpworld.git.commit": "unknown", "mcpworld.git.dirty": "unknown"}
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    return {"mcpworld.git.commit": commit, "mcpworld.git.dirty": str(dirty).lower()}


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[f"mcpworld.version.{name}"] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def config_hash(resolved: Any) -> str:
    """A short, stable hash of the resolved config (key order does not matter)."""
    return hashlib.sha256(json.dumps(resolved, sort_keys=True, default=str).encode()).hexdigest()[:16]


def run_tags(resolved: Any, overrides: str) -> dict[str, str]:
    return {
        **git_state(),
        **package_versions(),
        "mcpworld.host": socket.gethostname(),
        "mcpworld.overrides": overrides[:5000],
        "mcpworld.config_hash": config_hash(resolved),
    }
