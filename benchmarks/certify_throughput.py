"""Certification wall time with env=local's warm pool (env.pool=2) beside the same run without one
(env.pool=1), in one run.

Why: a certificate replays every task N times in three modes (oracle, doing nothing, the spoiled
oracle), so its wall time is set by the many short episodes and by what each one waits for
between them. With env.pool=2 the next episode's desktop (X server, D-Bus, window manager, account,
cgroup, network namespace) is started while an episode runs, so the reset only restores the home
and starts the app. Each figure is the wall time of the whole `python -m mcpworld.certify` command
(start-up, three jobs, the certificate), as a user sees it.

The default selection is a subset of the built-in suite: the Mousepad, xterm and PCManFM tasks
(9 tasks, 81 episodes per run at N=3). Add `--tasks 'mousepad/*,xterm/*,pcmanfm/*,libreoffice_*/*'`
for the LibreOffice tasks too, or `--tasks all` for the whole built-in suite (much longer: its
spoiled replays wait out their `wait_for` steps). `--rounds 2` runs the pair twice, in alternating
order, so that a busy neighbour on the machine weighs on both sides alike.

    python benchmarks/certify_throughput.py [--n 3] [--concurrency 1] [--tasks …] [--rounds 1] [--keep DIR]

Exits 0 whatever the figures (a flaky task may differ between the certificates: printed); 1 when a
run failed.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
SUBSET = "mousepad/*,xterm/*,pcmanfm/*"
MODES = ("oracle", "noop", "spoiled")


@dataclass
class Run:
    """One certify command's figures."""

    pool: int
    wall_s: float
    returncode: int
    episodes: int = 0
    setup_s: list[float] = field(default_factory=list)  # each episode's reset to ready (result.json)
    waits_s: list[float] = field(default_factory=list)  # env.pool ≥ 2: each reset's wait for its desktop
    statuses: dict[str, str] = field(default_factory=dict)
    error: str = ""


def certify(out: Path, pool: int, args: argparse.Namespace) -> Run:
    selection = [] if args.tasks == "all" else [f"task=[{args.tasks}]"]
    argv = [sys.executable, "-m", "mcpworld.certify", *selection, "env=local", f"env.pool={pool}", "tracking=none",
            "--n", str(args.n), "--concurrency", str(args.concurrency), "--out", str(out)]
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    run = Run(pool, time.perf_counter() - started, proc.returncode)
    if proc.returncode not in (0, 1):  # 1: a regression against --against, which is not given here
        run.error = proc.stderr.strip()[-400:]
    for mode in MODES:
        for result in (out / mode / "episodes").rglob("result.json"):
            if not result.parent.name.isdigit():  # a failed try set aside, run again
                continue
            data = json.loads(result.read_text())
            run.episodes += 1
            if data.get("setup_s") is not None:
                run.setup_s.append(float(data["setup_s"]))
            desktop = result.parent / "logs" / "desktop.json"
            if desktop.is_file() and "pool_wait_s" in (log := json.loads(desktop.read_text())):
                run.waits_s.append(float(log["pool_wait_s"]))
    if (out / "certificate.csv").is_file():
        with open(out / "certificate.csv", newline="") as f:
            run.statuses = {row["task_id"]: row["status"] for row in csv.DictReader(f)}
    return run


def median(values: list[float]) -> str:
    return f"{statistics.median(values):.3f}" if values else "–"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=3, help="episodes per task and mode (default 3)")
    parser.add_argument("--concurrency", type=int, default=1, help="desktops at once (default 1)")
    parser.add_argument("--tasks", default=SUBSET, help=f"task ids or globs, comma-separated, or all (default {SUBSET})")
    parser.add_argument("--rounds", type=int, default=1, help="pairs of runs, in alternating order (default 1)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the certify folders here (default: removed)")
    args = parser.parse_args()

    base = args.keep or Path(tempfile.mkdtemp(prefix="certify-throughput-"))
    runs: dict[int, list[Run]] = {1: [], 2: []}
    try:
        for r in range(args.rounds):
            for pool in ((1, 2) if r % 2 == 0 else (2, 1)):
                run = certify(base / f"round{r}-pool{pool}", pool, args)
                runs[pool].append(run)
                print(f"round {r + 1}, env.pool={pool}: {run.wall_s:.1f} s, {run.episodes} episodes"
                      + (f", FAILED: {run.error}" if run.error else ""), flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)

    table = Table(title=f"certify, {args.tasks}, N={args.n}, concurrency={args.concurrency} (wall s per round)")
    for column in ("env.pool", "episodes", "wall s", "episodes/hour", "reset median s", "pool wait median s",
                   "vs env.pool=1"):
        table.add_column(column)
    base_wall = statistics.mean(r.wall_s for r in runs[1])
    for pool, done in runs.items():
        wall = statistics.mean(r.wall_s for r in done)
        episodes = done[0].episodes
        table.add_row(str(pool), str(episodes), " / ".join(f"{r.wall_s:.1f}" for r in done),
                      f"{episodes / wall * 3600:.0f}", median([s for r in done for s in r.setup_s]),
                      median([s for r in done for s in r.waits_s]), f"{base_wall / wall:.2f}x")
    Console(width=140).print(table)
    certificates = [r.statuses for pool in runs.values() for r in pool]
    same = all(c == certificates[0] for c in certificates)
    print("certificates: " + ("identical" if same else "DIFFER: " + "; ".join(
        f"{task}: {' / '.join(c.get(task, '-') for c in certificates)}"
        for task in sorted({t for c in certificates for t in c}) if len({c.get(task) for c in certificates}) > 1)))
    failed = [r for pool in runs.values() for r in pool if r.error]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
