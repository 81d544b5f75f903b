"""Script graders (Toolathlon's ``evaluation/main.py``): the task's own program judges the
workspace. As upstream runs it: ``python -m <module>`` from the Toolathlon root (so relative imports
and ``utils.*`` resolve), with ``--res_log_file`` (the episode's ``traj_log.json``, written first),
``--agent_workspace``, ``--groundtruth_workspace`` and ``--launch_time``; exit code 0 means pass.

A grader that ran and said no (non-zero exit, including a traceback over the agent's files) is a
failure. One that gave no verdict is :class:`EvalError` (status ``eval_error``): it did not finish
in time, was killed, could not import its modules, or its own code is not valid on the interpreter
(a 3.12-only grader on 3.11). Upstream's claim_done rule: an agent that did not end by claiming done
(``status`` in traj_log.json other than ``success``) fails without the grader running.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from mcpworld.core.errors import EvalError
from mcpworld.core.result import MetricOutcome
from mcpworld.core.task_parts import ScriptGrader

TIMEOUT_S = 300.0
NO_VERDICT = re.compile(r"^(ModuleNotFoundError|ImportError)\b|No module named ")
CODE_ERROR = re.compile(r"^(SyntaxError|IndentationError|TabError)\b")
FRAME = re.compile(r'^\s*File "([^"]+)", line \d+')


def minimal_trajectory(path: Path, status: str = "success") -> Path:
    """A traj_log.json for grading without an episode (standalone): no messages, claimed done."""
    path.write_text(json.dumps({"config": {}, "messages": [], "status": status, "key_stats": {}}), encoding="utf-8")
    return path


def _python_version(python: str) -> str:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    return out or "?"


def no_verdict(stderr: str, returncode: int, python: str, code_dirs: list[Path], stdout: str = "") -> str | None:
    """Why the grader gave no verdict, or None when its exit code is its verdict. A missing module
    counts on stdout too: some graders catch their import error, print it and exit 1."""
    if returncode < 0:
        return f"the grader was killed by signal {-returncode}"
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    last = lines[-1].strip() if lines else ""
    printed = ([line.strip() for line in stdout.strip().splitlines() if line.strip()] or [""])[-1]
    for said in (last, printed):
        if returncode and NO_VERDICT.search(said):
            return f"the grader could not import its modules on {python}: {said}"
    if returncode and CODE_ERROR.match(last):
        files = [m.group(1) for line in lines if (m := FRAME.match(line))]
        where = Path(files[-1]).resolve() if files else None
        if where is None or any(where.is_relative_to(d) for d in code_dirs):  # its own code, not the agent's file
            version = _python_version(python)
            return (
                f"the grader's code is not valid on {python} (Python {version}): {last} "
                f"({where or 'unknown file'}); upstream runs Python 3.12: set toolathlon.python=PATH "
                f"to a Python 3.12 with the graders' requirements (`make toolathlon`)"
            )
    return None


def run_grader(
    grader: ScriptGrader, workspace: Path, trajectory: Path | None, timeout_s: float = TIMEOUT_S
) -> tuple[float, MetricOutcome]:
    script = grader.script
    python = grader.python or sys.executable
    root = grader.root or script.parent.parent.parent
    module = grader.module
    with tempfile.TemporaryDirectory(prefix="mcpworld-grader-") as scratch:
        if trajectory is None or not Path(trajectory).is_file():
            trajectory = minimal_trajectory(Path(scratch) / "traj_log.json")
        if grader.claim_done:
            try:
                status = json.loads(Path(trajectory).read_text(encoding="utf-8")).get("status")
            except (OSError, ValueError, AttributeError):
                status = None
            if status != "success":
                return 0.0, MetricOutcome(
                    "grader",
                    0.0,
                    f"not graded: the agent ended with status {status!r}, and upstream grades only an agent that claimed done",
                    actual=str(status),
                    expected="success",
                )
        target = ["-m", module] if module else [str(script)]
        argv = [
            python,
            *target,
            "--res_log_file",
            str(trajectory),
            "--agent_workspace",
            str(workspace),
            "--groundtruth_workspace",
            grader.groundtruth,
            "--launch_time",
            grader.launch_time,
        ]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": str(workspace.parent),
            "PYTHONPATH": str(root),
            "PYTHONDONTWRITEBYTECODE": "1",
            **{str(k): str(v) for k, v in grader.env.items()},
        }  # env=klavis: the accounts' credentials
        try:
            proc = subprocess.run(
                argv, cwd=root if module else script.parent.parent, env=env, capture_output=True, text=True, timeout=timeout_s
            )
        except subprocess.TimeoutExpired:
            raise EvalError(f"the grader {module or script} did not finish within {timeout_s:.0f}s") from None
        except OSError as exc:
            raise EvalError(f"the grader could not start on {python}: {exc}; set toolathlon.python=PATH") from None
    why = no_verdict(proc.stderr, proc.returncode, python, [root.resolve() / "utils", script.parent.resolve()], proc.stdout)
    if why:
        raise EvalError(f"{module or script}: {why}")
    said = (proc.stdout.strip().splitlines() or [""])[-1:] + (proc.stderr.strip().splitlines() or [""])[-1:]
    reason = " | ".join(s for s in said if s)[:500]
    score = 1.0 if proc.returncode == 0 else 0.0
    return score, MetricOutcome(
        "grader", score, reason or f"exit code {proc.returncode}", actual=f"exit {proc.returncode}", expected="exit 0"
    )
