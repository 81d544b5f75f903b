"""Running ``python -m mcpworld`` as a user does, from the repository root, and reading its results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_cli(tmp_path: Path, *overrides: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """The CLI with these overrides, its run and sweep folders under ``tmp_path``; never raises on failure."""
    cmd = [sys.executable, "-m", "mcpworld", *overrides, f"hydra.run.dir={tmp_path}/run", f"hydra.sweep.dir={tmp_path}/sweep"]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})


def results(folder: Path) -> list[dict]:
    """Every episode's result.json under ``folder``, in path order."""
    return [json.loads(p.read_text()) for p in sorted(folder.rglob("result.json"))]
