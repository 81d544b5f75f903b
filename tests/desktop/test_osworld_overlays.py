"""Real OSWorld test_all task files, unchanged (tests/data/osworld), run end to end on the real apps:
with our solution overlays (mcpworld/data/solutions/osworld) the oracle scores 1.0 on each, and an agent that
does nothing scores 0.0 on each — the evaluator path of the suite, proven task by task."""

from __future__ import annotations

import pytest

from tests.helpers.cli import results, run_cli

pytestmark = [pytest.mark.desktop, pytest.mark.slow]

SUITE = [
    "tasks.root=tests/data/osworld",
    "tasks.solutions=mcpworld/data/solutions/osworld",
    "provider=oracle",
    "modality=cli",
    "concurrency=2",
    "tracking=none",
    "infra_retries=1",
]
# (a desktop that fails under load, e.g. a browser window that does not answer input yet, is tried once
# more: the try set aside sorts before the episode's own folder, so outcomes() keeps the last word)


def outcomes(folder) -> dict[str, tuple[str, float, str]]:
    return {r["task_id"]: (r["status"], r["score"], r["reason"]) for r in results(folder)}


def run_resumed(folder, *overrides):
    """The job, and once more on its folder (resume: only what has no result) if its process died of a
    signal. Seen once in ~300 such episodes: a native abort in a worker thread's exit ("tcache_thread_
    shutdown(): unaligned tcache chunk detected"), not yet traced; the results before it are kept."""
    proc = run_cli(folder, *overrides, timeout=1500)
    if proc.returncode < 0:
        print(f"the job died of signal {-proc.returncode}; resuming it: {proc.stderr[-500:]}")
        proc = run_cli(folder, *overrides, timeout=1500)
    return proc


def test_overlays_score_one_and_doing_nothing_scores_zero(tmp_path):
    solved = run_resumed(tmp_path / "oracle", *SUITE)
    assert solved.returncode == 0, solved.stderr[-3000:]
    got = outcomes(tmp_path / "oracle" / "run")
    assert len(got) >= 58
    assert {t: o for t, o in got.items() if o[:2] != ("success", 1.0)} == {}

    idle = run_resumed(tmp_path / "idle", *SUITE, "agent.max_steps=0")
    assert idle.returncode == 0, idle.stderr[-3000:]
    nothing = outcomes(tmp_path / "idle" / "run")
    assert set(nothing) == set(got)
    assert {t: o for t, o in nothing.items() if o[:2] != ("failure", 0.0)} == {}
