"""Where a command's CPU goes, by program: the Linux process accounting of everything that ran on the
machine while it ran (the apps a desktop starts, the X servers, the harness, Tesseract, the short
shell helpers), summed by command name, beside the wall time and the CPU the machine had.

Why: a certificate on 2 cores is bound by CPU, not by waits; what to cut is what this table names.
Needs root and the acct package (`apt-get install acct`: accton, dump-acct). Processes still running
when the command ends are not counted; a process that lived under 10 ms counts 0 (its record's unit).

    python benchmarks/cpu_by_program.py [--top 25] -- python -m mcpworld.certify --n 3 --concurrency 4
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def per_program(records: str) -> dict[str, tuple[float, float, int]]:
    """{command: (user s, system s, processes)} from dump-acct's lines (``name|v3|utime|stime|…``, in
    hundredths of a second)."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for line in records.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) < 4:
            continue
        total = totals[fields[0]]
        total[0] += float(fields[2]) / 100
        total[1] += float(fields[3]) / 100
        total[2] += 1
    return {name: (u, s, int(n)) for name, (u, s, n) in totals.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=25, help="programs to show (default 25)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to measure")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to measure after --")
    if os.geteuid() != 0 or not (shutil.which("accton") and shutil.which("dump-acct")):
        print("cpu_by_program: needs root and the acct package (apt-get install acct)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        ledger = Path(folder) / "pacct"
        ledger.touch()
        subprocess.run(["accton", str(ledger)], check=True, capture_output=True)
        start = time.monotonic()
        try:
            code = subprocess.run(command).returncode
        finally:
            wall = time.monotonic() - start
            subprocess.run(["accton", "off"], capture_output=True)
        records = subprocess.run(["dump-acct", str(ledger)], capture_output=True, text=True, check=True).stdout
    programs = per_program(records)
    used = sum(u + s for u, s, _ in programs.values())
    cores = os.cpu_count() or 1
    print(
        f"wall {wall:.1f} s; CPU counted {used:.1f} s of the {wall * cores:.0f} s that {cores} cores had "
        f"({100 * used / (wall * cores):.0f} %); {sum(n for *_, n in programs.values())} processes"
    )
    print(f"{'program':<24} {'CPU s':>8} {'share':>6} {'user s':>8} {'system s':>9} {'processes':>10}")
    for name, (u, s, n) in sorted(programs.items(), key=lambda item: -(item[1][0] + item[1][1]))[: args.top]:
        print(f"{name:<24} {u + s:8.1f} {100 * (u + s) / used if used else 0:5.1f}% {u:8.1f} {s:9.1f} {n:10d}")
    return code


if __name__ == "__main__":
    sys.exit(main())
