"""A job's folder as a run leaves it, written directly: for tests of what reads it back (tracking,
upload, the report) without running an episode."""

from __future__ import annotations

import json
import time
from pathlib import Path

from mcpworld.core.result import EpisodeResult, MetricOutcome


def write_episode(
    job_dir: Path, task_id: str, attempt: int = 0, status: str = "success", folder: str | None = None, trace: bool = True
) -> tuple[EpisodeResult, Path]:
    """An episode folder as a job leaves it: result.json and trace.jsonl."""
    result = EpisodeResult(
        task_id=task_id,
        app=task_id.split("/")[0],
        attempt=attempt,
        status=status,
        score=float(status == "success"),
        metrics=[MetricOutcome("exact_match#0", 1.0)],
        labels={"model": "oracle", "modality": "gui"},
    )
    where = job_dir / "episodes" / task_id / (folder or str(attempt))
    where.mkdir(parents=True)
    result.write(where / "result.json")
    if trace:
        now = time.time()
        events = [
            {"type": "episode_start", "ts": now - 2, "task": task_id},
            {"type": "tool_call", "ts": now - 1, "tool": "computer", "latency_s": 0.1, "ok": True, "step": 1},
            {"type": "episode_end", "ts": now, "status": status, "score": result.score},
        ]
        (where / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return result, where
