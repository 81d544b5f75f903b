"""The calls and episodes of every job on this host, so that two jobs on one GPU (a joblib sweep)
share its energy instead of each counting all of it.

Each meter appends its own spans to ``<dir>/<pid>-<n>.jsonl`` (a start line, then an end line, flushed)
and reads the other files when it shares energy out. Times are ``time.monotonic()``, which on Linux is
one clock for every process of the host. A span another job has not ended is active up to now, as in
one job. Files of processes that are gone are removed when a meter starts, once older than a day.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TextIO

from mcpworld.telemetry.energy.attribution import OPEN, Interval

STALE_S = 24 * 3600.0
_count = 0


class SharedLedger:
    def __init__(self, folder: Path):
        global _count
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        _count += 1
        self.path = self.folder / f"{os.getpid()}-{_count}-{time.monotonic_ns()}.jsonl"
        self._file: TextIO | None = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - for the job
        self._clean()

    def _clean(self) -> None:
        for p in self.folder.glob("*.jsonl"):
            try:
                pid = int(p.name.split("-")[0])
                if not _alive(pid) and time.time() - p.stat().st_mtime > STALE_S:
                    p.unlink()
            except (ValueError, OSError):
                continue

    def started(self, span: Interval, call: bool) -> None:
        self._write({"id": span.key, "owner": span.owner, "call": call, "start": span.start})

    def ended(self, span: Interval) -> None:
        self._write({"id": span.key, "end": span.end})

    def _write(self, line: dict) -> None:
        if self._file is not None:
            self._file.write(json.dumps(line) + "\n")
            self._file.flush()

    def others(self) -> tuple[list[Interval], list[Interval]]:
        """The other jobs' calls and episodes (keys made negative, so they never meet ours)."""
        calls: list[Interval] = []
        episodes: list[Interval] = []
        for n, p in enumerate(sorted(self.folder.glob("*.jsonl"))):
            if p == self.path:
                continue
            try:
                lines = p.read_text(encoding="utf-8").splitlines()
            except OSError:
                continue
            spans: dict[int, tuple[Interval, bool]] = {}
            for text in lines:
                try:
                    line = json.loads(text)
                except ValueError:
                    continue  # a line being written
                if "start" in line:
                    key = -(n + 1) * 1_000_000_000 - int(line["id"])
                    owner = -(n + 1) * 1_000_000_000 - int(line["owner"])
                    spans[line["id"]] = (Interval(key, owner, float(line["start"]), OPEN), bool(line["call"]))
                elif line.get("id") in spans:
                    spans[line["id"]][0].end = float(line["end"])
            for span, call in spans.values():
                (calls if call else episodes).append(span)
        return calls, episodes

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
