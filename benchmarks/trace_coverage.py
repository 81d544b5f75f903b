"""How much of each episode's wall time its MLflow trace accounts for: per episode of the job or
sweep folders given, the fraction of ``episode_start`` → ``episode_end`` that the union of the
trace's spans covers, and the largest stretch no span covers (with what came before it). The spans
are the ones ``telemetry.spans.log_trace`` writes, planned from each episode's ``trace.jsonl``.

    python benchmarks/trace_coverage.py OUTPUT_FOLDER [...] [--worst 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from mcpworld.core.result import EpisodeResult
from mcpworld.telemetry.spans import Coverage, plan_spans, trace_coverage
from mcpworld.telemetry.trace import read_trace

GAP_LIMIT_S = 0.1  # issue 39: no stretch over 100 ms outside a span


def episodes(folders: list[Path]) -> list[Path]:
    """Every episode folder (one with a trace.jsonl) under the folders, set-aside tries included."""
    return sorted(
        {trace.parent.resolve() for folder in folders for trace in folder.rglob("trace.jsonl") if "episodes" in trace.parts}
    )


def measure(folder: Path) -> tuple[Coverage, str] | None:
    """The episode's coverage and the span its largest gap follows (None: no episode in its trace)."""
    events = read_trace(folder / "trace.jsonl")
    result = EpisodeResult.read(folder / "result.json") if (folder / "result.json").is_file() else None
    found = trace_coverage(events, result)
    if found is None:
        return None
    start = next(float(e["ts"]) for e in events if e.get("type") == "episode_start")
    at = start + found.largest_gap_at
    spans = sorted((s for top in plan_spans(events, result) for s in top.flat()), key=lambda s: s.end)
    before = [s.name for s in spans if s.end <= at + 1e-6]
    return found, before[-1] if before else "episode start"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--worst", type=int, default=5, help="list this many episodes with the largest gaps")
    args = parser.parse_args(argv)
    rows = [(folder, *found) for folder in episodes(args.folders) if (found := measure(folder)) is not None]
    if not rows:
        print("no episode traces under " + ", ".join(map(str, args.folders)), file=sys.stderr)
        return 2
    fractions = [c.fraction for _, c, _ in rows]
    gaps = [c.largest_gap_s for _, c, _ in rows]
    over = sum(gap > GAP_LIMIT_S for gap in gaps)
    print(
        f"{len(rows)} episodes: coverage min {min(fractions):.2%}, median {statistics.median(fractions):.2%}; "
        f"largest gap {max(gaps) * 1000:.0f} ms (median of each episode's largest {statistics.median(gaps) * 1000:.0f} ms); "
        f"{over} episodes with a gap over {GAP_LIMIT_S * 1000:.0f} ms"
    )
    for folder, found, after in sorted(rows, key=lambda row: -row[1].largest_gap_s)[: args.worst]:
        print(
            f"  {found.fraction:7.2%}  gap {found.largest_gap_s * 1000:6.0f} ms at {found.largest_gap_at:7.2f} s "
            f"after {after!r}: {folder}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
