"""Episodes per hour at concurrency 1, 2 and 4: the light apps' oracle suite (mousepad, xterm,
pcmanfm tasks, several attempts each) run at each level in one run of this script, side by side.
(The real apps' start-up is measured apart, by reset_to_ready.py.)

The figure is episodes over the wall time of the job's episode phase (``episodes_wall_s`` in
summary.json: interpreter start, config and the tracker are left out). Every episode must succeed:
a speed-up bought with wrong results is not one.

    python benchmarks/concurrency.py [--attempts 2] [--levels 1,2,4]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]


def run(level: int, attempts: int, work: Path) -> dict:
    out = work / f"c{level}"
    args = [
        sys.executable,
        "-m",
        "mcpworld",
        "modality=gui",
        "tracking=none",
        f"concurrency={level}",
        "task=[mousepad/*,xterm/*,pcmanfm/*]",
        f"attempts={attempts}",
        f"hydra.run.dir={out}",
    ]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-2000:])
    statuses = [json.loads(p.read_text())["status"] for p in out.rglob("result.json")]
    summary = json.loads((out / "summary.json").read_text())
    return {"episodes": len(statuses), "successes": statuses.count("success"), "wall_s": summary["episodes_wall_s"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=2)
    parser.add_argument("--levels", default="1,2,4")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="concurrency-bench-"))
    rows = {int(level): run(int(level), args.attempts, work) for level in args.levels.split(",")}
    base = rows[min(rows)]
    table = Table(title="episodes per hour by concurrency (oracle suite)")
    for col in ("concurrency", "episodes", "successes", "wall s", "episodes/hour", "speed-up"):
        table.add_column(col, justify="right")
    for level, row in rows.items():
        rate = row["episodes"] / row["wall_s"] * 3600
        speedup = (base["wall_s"] / base["episodes"]) / (row["wall_s"] / row["episodes"])
        table.add_row(
            str(level), str(row["episodes"]), str(row["successes"]), f"{row['wall_s']:.1f}", f"{rate:.0f}", f"{speedup:.2f}x"
        )
    Console().print(table)


if __name__ == "__main__":
    main()
