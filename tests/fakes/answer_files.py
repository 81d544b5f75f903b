"""What a benchmark keeps that its agent must not read, laid out as on a host: a suite's task file and
another task's, an oracle solution, a ground-truth workspace and an earlier run's result, each holding
``secret`` and readable by every account, so that only a desktop's isolation stands in the way."""

from __future__ import annotations

import tempfile
from pathlib import Path


def plant_answers(secret: str) -> tuple[Path, dict[str, Path]]:
    """A fresh folder in /var/tmp (not pytest's 0700 tmp) and the planted files by what they are."""
    base = Path(tempfile.mkdtemp(prefix="mcpworld-probe-", dir="/var/tmp"))
    files = {
        "own task": base / "suite/tasks/a/task.yaml",
        "another task": base / "suite/tasks/b/task.yaml",
        "solution": base / "solutions/a.yaml",
        "ground truth": base / "suite/tasks/a/groundtruth_workspace/x.js",
        "outputs": base / "outputs/2026-01-01/episodes/a/1/result.json",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{secret} {path.name}\n")
    readable(base)
    return base, files


def readable(base: Path) -> None:
    """``base`` and everything in it open to every account."""
    base.chmod(0o755)
    for path in base.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
