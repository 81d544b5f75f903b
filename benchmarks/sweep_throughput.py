"""Episodes per hour for the oracle suite of the light apps: one job at concurrency 1, 2 and 4, then a
two-job sweep (resolution=square,rect) through each launcher, all in one run.

Why: the wall time of a benchmark run is what researchers pay; concurrency is the first lever on one
machine, the launchers the next. Every figure is the whole command's wall time (start-up, the desktops,
the agent, grading, logging), as a user would see it. Goal: >= 1.6x at concurrency 2 on 2 cores.

    python benchmarks/sweep_throughput.py [--concurrency 1,2,4] [--launchers basic,joblib,submitit_local,submitit_slurm,ray]

SLURM and Ray need an engine to submit to: SLURM_CONF (or a default cluster sbatch reaches) and
RAY_ADDRESS; a launcher without one, or without its plugin, is skipped with a printed line. Exits 0
whatever the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from mcpworld.config.launchers import missing_plugin

ROOT = Path(__file__).resolve().parents[1]
SUITE = "task=[mousepad/*,xterm/*,pcmanfm/*]"
GOAL_AT_2 = 1.6


def run(out: Path, *overrides: str, multirun: bool = False) -> tuple[int, float, int]:
    """(episodes that finished successfully, wall seconds, exit status) of one command."""
    where = f"hydra.sweep.dir={out}" if multirun else f"hydra.run.dir={out}"
    argv = [sys.executable, "-m", "mcpworld", "provider=oracle", SUITE, "tracking=none", *overrides, where]
    started = time.perf_counter()
    proc = subprocess.run(argv + ["-m"] * multirun, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    ok = sum(json.loads(p.read_text())["status"] == "success" for p in out.rglob("result.json"))
    if proc.returncode != 0:
        print(f"  {' '.join(overrides)}: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return ok, wall, proc.returncode


def engine_missing(launcher: str) -> str | None:
    if launcher == "basic":
        return None
    plugin = missing_plugin([f"hydra/launcher={launcher}"])
    if plugin:
        return plugin
    if launcher == "submitit_slurm" and shutil.which("sbatch") is None:
        return "no sbatch on this machine"
    if launcher == "submitit_slurm" and subprocess.run(["sinfo"], capture_output=True).returncode != 0:
        return "no SLURM controller answers (set SLURM_CONF)"
    if launcher == "ray" and not os.environ.get("RAY_ADDRESS"):
        return "RAY_ADDRESS is not set (start a head with `ray start --head`)"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default="1,2,4")
    parser.add_argument("--launchers", default="basic,joblib,submitit_local,submitit_slurm,ray")
    args = parser.parse_args()
    table = Table(title=escape(f"oracle suite ({SUITE}), whole-command wall time on {os.cpu_count()} cores"))
    for column in ("how", "episodes ok", "wall s", "episodes / hour", "vs concurrency 1"):
        table.add_column(column, justify="left" if column == "how" else "right")
    with tempfile.TemporaryDirectory(prefix="mcpworld-throughput-") as tmp:
        base = None
        for n in (int(c) for c in args.concurrency.split(",")):
            ok, wall, _ = run(Path(tmp) / f"c{n}", f"concurrency={n}")
            rate = ok / wall * 3600
            base = base or rate
            goal = f" (goal ≥ {GOAL_AT_2}x: {'met' if rate / base >= GOAL_AT_2 else 'MISSED'})" if n == 2 else ""
            table.add_row(f"1 job, concurrency={n}", str(ok), f"{wall:.1f}", f"{rate:.0f}", f"{rate / base:.2f}x{goal}")
        for launcher in args.launchers.split(","):
            why = engine_missing(launcher)
            if why:
                print(f"skipping hydra/launcher={launcher}: {why}")
                continue
            chosen = [] if launcher == "basic" else [f"hydra/launcher={launcher}"]
            if launcher == "submitit_slurm":
                chosen.append("hydra.launcher.cpus_per_task=1")
            ok, wall, _ = run(Path(tmp) / launcher, "resolution=square,rect", "concurrency=2", *chosen, multirun=True)
            rate = ok / wall * 3600
            table.add_row(
                f"2 jobs x conc. 2, {launcher}", str(ok), f"{wall:.1f}", f"{rate:.0f}", f"{rate / base:.2f}x" if base else "-"
            )
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
