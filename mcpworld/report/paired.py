"""Paired comparisons: two conditions (e.g. ``resolution=square`` vs ``rect``) over the same tasks.

Per task, the success rate under each condition (over its judged attempts); the difference is
averaged over the tasks both conditions ran, with a percentile bootstrap CI that resamples tasks
(the report's ``bootstrap_ci``). Pairing removes the spread between easy and hard tasks, which an
unpaired comparison of two group rates would count as noise; a task only one side ran is left out.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mcpworld.report.tables import Episode, bootstrap_ci, fmt_pct, group_episodes, write_csv

COLUMNS = ("a", "b", "tasks", "success_a", "success_b", "diff", "diff_ci_low", "diff_ci_high", "b_better", "a_better")


def per_task(episodes: list[Episode]) -> dict[str, float]:
    """Each task's success rate over its judged attempts."""
    wins: dict[str, list[float]] = {}
    for ep in episodes:
        if ep.judged:
            wins.setdefault(ep.task_id, []).append(ep.success)
    return {task: float(np.mean(v)) for task, v in wins.items()}


def compare_rows(
    episodes: list[Episode], keys: Sequence[str], key: str, seed: int, resamples: int
) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per pair of ``key``'s values within each group of the other ``keys``: ``diff`` is
    b − a (percentage points as a fraction), over the tasks both ran."""
    others = [k for k in keys if k != key]
    rows = []
    for values, group in group_episodes(episodes, others).items():
        by_value = group_episodes(group, [key])
        for (a,), (b,) in itertools.combinations(sorted(by_value), 2):
            rate_a, rate_b = per_task(by_value[(a,)]), per_task(by_value[(b,)])
            tasks = sorted(set(rate_a) & set(rate_b))
            row: dict[str, Any] = {
                **dict(zip(others, values, strict=True)),
                key: f"{b} vs {a}",
                "a": a,
                "b": b,
                "tasks": len(tasks),
            }
            if tasks:
                diffs = [rate_b[t] - rate_a[t] for t in tasks]
                row.update(
                    success_a=float(np.mean([rate_a[t] for t in tasks])),
                    success_b=float(np.mean([rate_b[t] for t in tasks])),
                    diff=float(np.mean(diffs)),
                    b_better=sum(d > 0 for d in diffs),
                    a_better=sum(d < 0 for d in diffs),
                )
                row["diff_ci_low"], row["diff_ci_high"] = bootstrap_ci(diffs, seed, resamples)
            rows.append(row)
    return rows, [*others, key, *COLUMNS]


def to_markdown(rows: list[dict[str, Any]], columns: list[str], key: str) -> str:
    shown = [c for c in columns if c not in ("a", "b", "diff_ci_low", "diff_ci_high")]
    header = ["success b − a [95 % CI]" if c == "diff" else c for c in shown]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if c in COLUMNS else ":---" for c in shown) + "|"]
    for row in rows:
        cells = []
        for c in shown:
            value = row.get(c)
            if c == "diff" and value is not None:
                cells.append(f"{100 * value:+.1f} pp [{100 * row['diff_ci_low']:+.1f}, {100 * row['diff_ci_high']:+.1f}]")
            elif c in ("success_a", "success_b"):
                cells.append(fmt_pct(value))
            else:
                cells.append("—" if value is None else str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return f"Paired by task, {key}:\n\n" + "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], columns: list[str], key: str, path: Path) -> bool:
    """The paired differences with their CIs, one bar per pair; False (nothing written) without any."""
    rows = [r for r in rows if r.get("diff") is not None]
    if not rows:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    others = [c for c in columns[: columns.index(key)]]
    labels = [" / ".join([*(str(r[k]) for k in others if len({x[k] for x in rows}) > 1), str(r[key])]) for r in rows]
    diff = np.array([100 * r["diff"] for r in rows])
    err = np.array([[diff[i] - 100 * r["diff_ci_low"], 100 * r["diff_ci_high"] - diff[i]] for i, r in enumerate(rows)]).T
    fig, ax = plt.subplots(figsize=(8, max(2.5, 0.5 * len(rows) + 1.4)))
    y = np.arange(len(rows))[::-1]
    ax.barh(y, diff, xerr=err, capsize=4, color=["#55A868" if d >= 0 else "#C44E52" for d in diff], ecolor="#333333")
    ax.axvline(0, color="#333333", linewidth=0.8)
    ax.set_yticks(y, labels)
    ax.set_xlim(-105, 105)
    ax.set_xlabel("success difference b − a (percentage points), paired by task, 95 % bootstrap CI")
    ax.set_title(f"Paired comparison by {key}", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return True


def write(rows: list[dict[str, Any]], columns: list[str], key: str, out: Path) -> list[Path]:
    """compare.csv, compare.md and compare.png (when some pair shares tasks)."""
    written = [out / "compare.csv", out / "compare.md"]
    write_csv(rows, columns, written[0])
    markdown = to_markdown(rows, columns, key)
    written[1].write_text(markdown, encoding="utf-8")
    print(markdown)
    if plot(rows, columns, key, out / "compare.png"):
        written.append(out / "compare.png")
    else:
        (out / "compare.png").unlink(missing_ok=True)
        print("compare.png not written: no pair ran a task in common")
    return written
