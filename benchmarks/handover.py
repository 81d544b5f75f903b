"""The perceived reset of a job's episodes, read from their traces: for each episode, the time from the
end of the episode its worker ran before it (``episode_end``) to its own first observation. Shared by
certify_throughput.py and reset_to_ready.py."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Handover:
    task_id: str
    staged: bool
    perceived_s: float  # previous end → first observation, on one worker
    ready_ahead_s: float | None  # a staged one: how long it waited for its episode (0: the episode waited for it)
    outlasted: bool = False  # a staged one that was ready before the episode before it ended


def _events(trace: Path) -> list[dict]:
    events = []
    for line in trace.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


def handovers(job: Path) -> list[Handover]:
    """Every episode of ``job`` (a job folder) that followed another on its worker."""
    runs = []
    for trace in job.glob("episodes/**/trace.jsonl"):
        if not trace.parent.name.isdigit():  # a failed try set aside
            continue
        events = _events(trace)
        start = next((e for e in events if e.get("type") == "episode_start"), None)
        end = next((e for e in events if e.get("type") == "episode_end"), None)
        seen = next((e for e in events if e.get("type") == "observation"), None)
        staged = next((e for e in events if e.get("type") == "staged"), None)
        if start and end and seen and "worker" in start:
            runs.append((start["worker"], start["ts"], end["ts"], seen["ts"], start["task"], staged))
    out = []
    for worker in {r[0] for r in runs}:
        mine = sorted((r for r in runs if r[0] == worker), key=lambda r: r[1])
        for before, after in itertools.pairwise(mine):
            staged = after[5]
            out.append(
                Handover(
                    after[4],
                    staged is not None,
                    after[3] - before[2],
                    staged["ready_ahead_s"] if staged else None,
                    bool(staged) and staged["ready"] <= before[2],
                )
            )
    return out
