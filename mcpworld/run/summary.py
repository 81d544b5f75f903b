"""Summary tables: per job after its episodes, and for a whole sweep (Hydra callback)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TextIO

from hydra.experimental.callback import Callback
from omegaconf import DictConfig
from rich.console import Console
from rich.table import Table

from mcpworld.core.result import EpisodeResult, Status

UNBOUNDED = 100_000  # a table printed to a log takes the width its cells need, up to this


def is_terminal(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def console(out: TextIO) -> Console:
    """A terminal: rich fits tables to its width. A log file or a pipe has no width: rich would assume
    80 columns and fold or cut the cells, so a table there is as wide as its cells need."""
    return Console(file=out) if is_terminal(out) else Console(file=out, width=UNBOUNDED)


def print_job_table(name: str, results: list[EpisodeResult]) -> None:
    title = f"mcpworld job: {name}"
    terminal = is_terminal(sys.stdout)
    table = Table(title=title if terminal else None)  # in a log the title is a line of its own, never wrapped
    for col in ("task", "attempt", "status", "score", "steps", "duration s"):
        table.add_column(col)
    for r in results:
        table.add_row(r.task_id, str(r.attempt), r.status, f"{r.score:.2f}", str(r.steps), f"{r.duration_s:.1f}")
    if not terminal:
        print(title, flush=True)
    console(sys.stdout).print(table)
    for r in results:  # whole lines: a grader's failure must be readable, not folded into a cell
        if r.status == Status.eval_error:
            print(f"  {r.task_id} attempt {r.attempt} eval_error: {r.reason}", flush=True)


# Set when a sweep ends: 1 when any of its jobs failed (``python -m mcpworld`` exits with it).
SWEEP_EXIT_CODE = 0
_active_sweep: Path | None = None  # the running sweep's folder, closed as KILLED on an interrupt


def ensure_writable(folder: Path, key: str) -> None:
    """Make the output folder now, so an unwritable one is one line (not a traceback) before any job."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".mcpworld-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        print(
            f"mcpworld: error: cannot write to the output folder {folder} ({exc.strerror or exc}); choose another with {key}=DIR",
            file=sys.stderr,
        )
        sys.exit(2)


def job_rows(sweep_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    """Each job folder of the sweep with its summary; a job that left none crashed."""
    rows = []
    jobs = (
        sorted((p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name))
        if sweep_dir.is_dir()
        else []
    )
    for folder in jobs:
        try:
            data = json.loads((folder / "summary.json").read_text())
        except (OSError, ValueError):
            data = {"status": "FAILED", "reason": "the job ended without a summary (its process died)"}
        rows.append((folder.name, data))
    return rows


def sweep_interrupted() -> None:
    """Close the running sweep's parent run as KILLED (Ctrl-C or SIGTERM ended it)."""
    global _active_sweep
    if _active_sweep is None:
        return
    from mcpworld.telemetry.tracking.sweep import finish_sweep_run

    rows = job_rows(_active_sweep)
    finish_sweep_run(_active_sweep, sweep_counts(rows), status="KILLED")
    print(
        f"mcpworld: sweep stopped after {len(rows)} job(s); run the same command with "
        f"hydra.sweep.dir={_active_sweep} to resume it",
        file=sys.stderr,
    )
    _active_sweep = None


def sweep_counts(rows: list[tuple[str, dict[str, Any]]]) -> dict[str, float]:
    failed = sum(d.get("status", "FINISHED") != "FINISHED" for _, d in rows)
    return {"jobs": float(len(rows)), "jobs_failed": float(failed), "episodes": float(sum(d.get("episodes", 0) for _, d in rows))}


def sweep_overrides(config: DictConfig) -> list[str]:
    """The sweep's command-line overrides, then the values a preset sweeps (``hydra.sweeper.params``,
    e.g. ``experiment=demo``'s ``resolution=square,rect``) that the command line did not override."""
    given = [str(o) for o in config.hydra.overrides.task]
    keys = {o.split("=", 1)[0].lstrip("+~") for o in given}
    params = config.hydra.sweeper.get("params") or {}
    return given + [f"{key}={value}" for key, value in params.items() if key not in keys]


class SweepSummary(Callback):
    """Checks the output folder before anything runs; a multirun's MLflow parent run (opened first,
    closed last, FAILED when a job failed) and, at the end, one table comparing every job."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        ensure_writable(Path(config.hydra.run.dir), "hydra.run.dir")

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        global _active_sweep, SWEEP_EXIT_CODE
        from mcpworld.telemetry.tracking.sweep import start_sweep_run

        sweep_dir = Path(config.hydra.sweep.dir)
        ensure_writable(sweep_dir, "hydra.sweep.dir")
        SWEEP_EXIT_CODE = 0
        _active_sweep = sweep_dir
        start_sweep_run(config, sweep_dir, sweep_overrides(config))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        global _active_sweep, SWEEP_EXIT_CODE
        from mcpworld.telemetry.tracking.sweep import finish_sweep_run, runs_link

        sweep_dir = Path(config.hydra.sweep.dir)
        _active_sweep = None
        rows = job_rows(sweep_dir)
        counts = sweep_counts(rows)
        SWEEP_EXIT_CODE = 1 if counts["jobs_failed"] else 0
        finish_sweep_run(sweep_dir, counts, status="FAILED" if counts["jobs_failed"] else "FINISHED")
        if not rows:
            return
        print_sweep_table(sweep_dir, rows)
        link = runs_link(sweep_dir)
        if link:
            print(f"mcpworld: the runs in MLflow: {link}")
        if SWEEP_EXIT_CODE:
            print(f"mcpworld: {counts['jobs_failed']:.0f} of {len(rows)} job(s) failed", file=sys.stderr)


def job_number(data: dict[str, Any], name: str, old: str) -> float:
    """A summary.json number by its name, or by the name jobs wrote before the metrics took the
    episode's vocabulary (``success_rate`` → ``success``, ``mean_score`` → ``score``)."""
    return float(data.get(name, data.get(old, 0)) or 0)


def print_sweep_table(sweep_dir: Path, rows: list[tuple[str, dict[str, Any]]], out: TextIO | None = None) -> None:
    """One row per job. On a terminal a table; in a log file or a pipe one plain line per job, its
    overrides last and whole (a table cell would fold them into slivers), for reading and for grep."""
    out = out or sys.stdout
    cells = [
        (
            num,
            data.get("status", "FINISHED"),
            f"{data.get('episodes', 0):.0f}",
            f"{job_number(data, 'success', 'success_rate'):.0%}",
            f"{job_number(data, 'score', 'mean_score'):.2f}",
            f"{data.get('infra_errors', 0):.0f}",
            f"{data.get('eval_errors', 0):.0f}",
            f"{data.get('tasks_skipped', 0):.0f}",
            data.get("job", ""),
        )
        for num, data in rows
    ]
    if is_terminal(out):
        table = Table(title=f"mcpworld sweep: {sweep_dir}")
        skips = any(c[-2] != "0" for c in cells)  # a column only when some job skipped tasks (space is short)
        for col in (
            "job",
            "overrides",
            "status",
            "episodes",
            "success rate",
            "mean score",
            "infra errors",
            "eval errors",
            *(["tasks skipped"] if skips else []),
        ):
            table.add_column(col, overflow="fold")
        for num, *rest, skipped, overrides in cells:
            table.add_row(num, overrides, *rest, *([skipped] if skips else []))
        console(out).print(table)
    else:
        print(f"mcpworld sweep: {sweep_dir}", file=out)
        width = max(len(num) for num, *_ in cells)
        for num, status, episodes, rate, score, infra, evals, skipped, overrides in cells:
            print(
                f"  job {num:>{width}}  {status:<8}  episodes {episodes}  success {rate}  mean score {score}  "
                f"infra errors {infra}  eval errors {evals}"
                + (f"  tasks skipped {skipped}" if skipped != "0" else "")
                + (f"  overrides: {overrides}" if overrides else ""),
                file=out,
            )
    for num, data in rows:  # whole lines: a reason must be readable, not folded into a cell
        if data.get("status", "FINISHED") != "FINISHED":
            print(f"  job {num} {data['status']}: {data.get('reason', '')}", file=out)
    out.flush()
