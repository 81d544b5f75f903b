"""The committed certificates at a glance: tasks per status for each suite and app, as the README shows
them (``python -m mcpworld.certify.table``). A certificate file's suite is its name up to the first
``_`` (``pccanary_obs.csv`` → pccanary), so one suite may be certified in parts."""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from mcpworld.certify.certificate import read_rows
from mcpworld.certify.verdict import Verdict
from mcpworld.core.errors import UserError

CERTIFICATES = Path(__file__).resolve().parents[1] / "data" / "certificates"


def suite_of(path: Path) -> str:
    return path.stem.split("_", 1)[0]


def tally(paths: Sequence[Path]) -> dict[tuple[str, str], Counter[str]]:
    """{(suite, app): statuses counted}; a task certified in two files of one suite counts once (the
    later file's row wins, so a part certified again replaces the older one)."""
    latest: dict[tuple[str, str], tuple[str, str]] = {}
    for path in paths:
        for r in read_rows(path, str(path), ("task_id", "app", "status")):
            latest[(suite_of(path), r["task_id"])] = (r["app"], r["status"])
    out: dict[tuple[str, str], Counter[str]] = {}
    for (suite, _task), (app, status) in sorted(latest.items()):
        out.setdefault((suite, app), Counter())[status] += 1
    return out


def to_markdown(paths: Sequence[Path]) -> str:
    """One line per suite and app, and a total line per suite."""
    counted = tally(paths)
    statuses = [str(v) for v in Verdict]
    lines = ["| suite | app | tasks | " + " | ".join(statuses) + " |", "|:---|:---|---:|" + "---:|" * len(statuses)]

    def line(suite: str, app: str, c: Counter[str]) -> str:
        return f"| {suite} | {app} | {sum(c.values())} | " + " | ".join(str(c.get(s, 0)) for s in statuses) + " |"

    for suite in sorted({s for s, _ in counted}):
        apps = sorted(a for s, a in counted if s == suite)
        for app in apps:
            lines.append(line(suite, app, counted[(suite, app)]))
        if len(apps) > 1:
            lines.append(line(f"**{suite}**", "**all**", sum((counted[(suite, a)] for a in apps), Counter())))
    return "\n".join(lines) + "\n"


BLOCK = re.compile(r"(<!-- certificates-table -->\n)(.*?)(<!-- /certificates-table -->)", re.S)


def rewrite_block(readme: Path, table: str) -> None:
    """Replace the table between ``<!-- certificates-table -->`` markers of ``readme``."""
    text = readme.read_text(encoding="utf-8")
    if not BLOCK.search(text):
        raise UserError(f"{readme}: no <!-- certificates-table --> … <!-- /certificates-table --> block to rewrite")
    readme.write_text(BLOCK.sub(lambda m: m.group(1) + table + m.group(3), text, count=1), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mcpworld.certify.table", description="Tasks per status for each suite and app of certificate CSVs."
    )
    parser.add_argument("csv", nargs="*", type=Path, help=f"certificate files (default: every *.csv in {CERTIFICATES})")
    parser.add_argument("--readme", type=Path, help="rewrite this file's certificates-table block instead of printing")
    args = parser.parse_args(argv)
    try:
        table = to_markdown(args.csv or sorted(CERTIFICATES.glob("*.csv")))
        if args.readme:
            rewrite_block(args.readme, table)
        else:
            print(table, end="")
    except UserError as exc:
        print(f"certify.table: {exc}")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
