"""One mode's episodes: a Hydra job of ``python -m mcpworld`` (the same machinery as any run), run
again once on its own folder when some episode gave no verdict (resume runs exactly those again),
then read back with report/folder.py."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from mcpworld.certify.modes import Mode, job_overrides
from mcpworld.certify.verdict import ModeOutcome
from mcpworld.core.errors import UserError
from mcpworld.core.result import EpisodeResult
from mcpworld.report.folder import load_folders
from mcpworld.report.tables import Episode

TRIES = 2  # the job, then once more for the episodes without a verdict
JOB_STOP_S = 180.0  # a stopping job's episodes end within their own bound; this is its outer one


def run_mode(mode: Mode, user: list[str], task_ids: list[str], n: int, concurrency: int, out: Path) -> dict[str, ModeOutcome]:
    """{task id: outcome} of N episodes per task in ``mode``; the job's folder is ``out / mode.name``."""
    folder = out / mode.name
    outcomes: dict[str, ModeOutcome] = {}
    for attempt in range(TRIES):
        failed = run_job(job_overrides(user, mode, task_ids, n, concurrency, str(folder)), folder)
        outcomes = collect(folder, task_ids, n, failed)
        if not any(o.unjudged for o in outcomes.values()):
            break
        if attempt + 1 < TRIES:
            print(
                f"certify: {mode.name}: {sum(len(o.unjudged) for o in outcomes.values())} episode(s) gave no "
                "verdict; running them once more",
                file=sys.stderr,
            )
    return outcomes


def run_job(overrides: list[str], folder: Path) -> str:
    """Run the job; '' when it finished, else why not (its episodes may be partly there). A job the
    user can fix (exit 2: a bad override, every task skipped) stops certify; Ctrl-C stops it too."""
    proc = subprocess.Popen([sys.executable, "-m", "mcpworld", *overrides])
    try:
        returncode = proc.wait()
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM to certify alone: the job stops as it would by itself
        stop_job(proc)
        raise
    if returncode == 0:
        return ""
    if returncode in (130, 143):
        raise KeyboardInterrupt
    if returncode == 2:
        raise UserError(f"the job in {folder} stopped with an error the user can fix (its last line above)")
    error = folder / "error.txt"
    return f"the job exited {returncode}" + (f" (traceback in {error})" if error.exists() else "")


def stop_job(proc: subprocess.Popen[bytes], grace_s: float = JOB_STOP_S) -> None:
    """SIGTERM to a job still running, then its own clean stop awaited (its episodes end as
    ``interrupted``, its desktops torn down); killed only when that takes past ``grace_s``. A killed
    job would leave its desktops to the next run's reaper."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # a job that got Ctrl-C too takes it as "already stopping"
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def collect(folder: Path, task_ids: list[str], n: int, failed: str) -> dict[str, ModeOutcome]:
    """Each task's judged passes and durations; an episode that is infra_error, eval_error or
    interrupted, or that never ran, is listed with its reason instead."""
    try:
        episodes = load_folders([folder])
    except UserError:
        episodes = []  # no episode ran at all: each is missing below
    outcomes = {t: ModeOutcome() for t in task_ids}
    seen: dict[str, set[str]] = {t: set() for t in task_ids}
    for ep in episodes:
        outcome = outcomes.get(ep.task_id)
        if outcome is None:
            continue
        seen[ep.task_id].add(ep.params["attempt"])
        if judged(ep):
            outcome.judged += 1
            outcome.passed += int(ep.success == 1.0)
            outcome.durations_s.append(ep.metrics["duration_s"])
        else:
            outcome.unjudged.append(why_unjudged(folder, ep))
    skipped = skip_reasons(folder)
    for task_id, outcome in outcomes.items():
        missing = n - len(seen[task_id])
        if missing > 0:
            cause = skipped.get(task_id) or failed or "the job ran no episode for it"
            outcome.unjudged += [f"not run: {cause}"] * missing
    return outcomes


def judged(ep: Episode) -> bool:
    return not (ep.infra_error or ep.eval_error or ep.params.get("termination") == "interrupted")


def why_unjudged(folder: Path, ep: Episode) -> str:
    result = EpisodeResult.read(folder / "episodes" / ep.task_id / ep.params["attempt"] / "result.json")
    return f"{result.status}: {result.reason}"[:300]


def skip_reasons(folder: Path) -> dict[str, str]:
    """{task id: why the job skipped it} from its summary.json."""
    path = folder / "summary.json"
    if not path.is_file():
        return {}
    skipped = json.loads(path.read_text(encoding="utf-8")).get("skipped") or []
    return {task: f"skipped: {group['reason']}" for group in skipped for task in group.get("tasks", [])}
