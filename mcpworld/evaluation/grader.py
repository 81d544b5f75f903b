"""Script graders (Toolathlon's ``evaluation/main.py``): the task's own program judges the
workspace. It gets ``--agent_workspace``, ``--groundtruth_workspace``, ``--res_log_file`` (the
episode's ``traj_log.json``) and ``--launch_time``; exit code 0 means pass. It runs with this
interpreter (the harness's libraries: openpyxl, python-docx, pypdf …) and a scrubbed environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcpworld.result import MetricOutcome

TIMEOUT_S = 300.0


def run_grader(grader: dict[str, Any], workspace: Path, trajectory: Path | None,
               timeout_s: float = TIMEOUT_S) -> tuple[float, MetricOutcome]:
    script = Path(grader["script"])
    argv = [sys.executable, str(script), "--agent_workspace", str(workspace),
            "--groundtruth_workspace", str(grader.get("groundtruth") or ""),
            "--res_log_file", str(trajectory or workspace.parent / "traj_log.json"),
            "--launch_time", str(grader.get("launch_time") or "")]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": str(workspace.parent),
           "PYTHONPATH": str(script.parent.parent)}
    try:
        proc = subprocess.run(argv, cwd=script.parent.parent, env=env, capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return 0.0, MetricOutcome("grader", 0.0, f"{script} did not finish within {timeout_s:.0f}s")
    said = (proc.stdout.strip().splitlines() or [""])[-1:] + (proc.stderr.strip().splitlines() or [""])[-1:]
    reason = " | ".join(s for s in said if s)[:500]
    score = 1.0 if proc.returncode == 0 else 0.0
    return score, MetricOutcome("grader", score, reason or f"exit code {proc.returncode}",
                                actual=f"exit {proc.returncode}", expected="exit 0")
