"""What MLflow tracking costs an experiment: the oracle suite (every built-in GUI task) run with
``tracking=mlflow`` (params, metrics, screenshots, trajectory GIF, one trace per episode) and with
``tracking=none``, alternated, in one run of this script.

Why this exists: the card's bound is tracking ≤ 2 % of episode wall time. The tracker logs on its
own thread, so episodes do not wait for it; what an experiment pays is the wait for the tracker to
drain at the end of the job, plus contention for the CPU while it works. Figures:
- tracker busy: time the tracker thread spent logging, against the sum of episode durations;
- job waited: time the job waited at its end for the tracker to drain, against the same sum;
- episode time: mean episode duration with and without tracking (contention shows here).

    python benchmarks/tracking_overhead.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]


def run(tracking: str, work: Path) -> dict:
    out = work / f"{tracking}-{len(list(work.glob(tracking + '-*')))}"
    args = [
        sys.executable,
        "-m",
        "mcpworld",
        "modality=gui",
        f"hydra.run.dir={out}",
        f"tracking.uri=sqlite:///{work}/mlflow.db",
        f"tracking.artifact_root={work}/artifacts",
    ]
    args.append("tracking=none" if tracking == "none" else "tracking.experiment=overhead")
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-2000:])
    durations = [json.loads(p.read_text())["duration_s"] for p in out.rglob("result.json")]
    summary = json.loads((out / "summary.json").read_text())
    return {
        "episodes": len(durations),
        "episode_s": sum(durations),
        "busy_s": summary.get("tracking_busy_s", 0.0),
        "wait_s": summary.get("tracking_wait_s", 0.0),
        "mean_episode_s": statistics.fmean(durations),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tracking-bench-"))
    runs: dict[str, list[dict]] = {"mlflow": [], "none": []}
    run("mlflow", work)  # warm-up: creates the store's schema (≈ 1 s, once per store)
    for i in range(args.rounds):
        for tracking in ("mlflow", "none") if i % 2 == 0 else ("none", "mlflow"):
            runs[tracking].append(run(tracking, work))
    tracked, untracked = runs["mlflow"], runs["none"]
    episode_s = sum(r["episode_s"] for r in tracked)
    busy = sum(r["busy_s"] for r in tracked) / episode_s
    waited = sum(r["wait_s"] for r in tracked) / episode_s
    with_t = statistics.fmean(r["mean_episode_s"] for r in tracked)
    without = statistics.fmean(r["mean_episode_s"] for r in untracked)
    table = Table(title=f"MLflow tracking overhead: {tracked[0]['episodes']} oracle episodes x {args.rounds} rounds")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("tracker busy / episode wall time", f"{busy:.1%}")
    table.add_row("job waited for the tracker / episode wall time", f"{waited:.1%}")
    table.add_row("mean episode, tracking=mlflow", f"{with_t:.3f} s")
    table.add_row("mean episode, tracking=none", f"{without:.3f} s")
    table.add_row("episode slowdown from tracking", f"{with_t / without - 1:+.1%}")
    Console().print(table)


if __name__ == "__main__":
    main()
