"""The episode pool: N desktops in parallel, a halt that lets running episodes finish, and an
interrupt that stops them within a bound and still hands over their results."""

from __future__ import annotations

import _thread
import asyncio
import threading
import time

import pytest

from mcpworld.run.interrupt import EpisodeInterrupted, StopSignal
from mcpworld.run.pool import EpisodePool


class Desk:
    """Stands in for an Environment: the pool only hands it to run_one and may kill it."""

    def __init__(self) -> None:
        self.killed = threading.Event()

    def kill(self) -> None:
        self.killed.set()


def test_every_item_runs_once_on_distinct_desktops_in_parallel():
    desks = [Desk() for _ in range(3)]
    busy: set[int] = set()
    overlap = []

    def run_one(env, item):
        assert id(env) not in busy  # one episode per desktop at a time
        busy.add(id(env))
        overlap.append(len(busy))
        time.sleep(0.05)
        busy.discard(id(env))
        return (item, id(env))

    got = []
    EpisodePool(desks, run_one, StopSignal()).run(list(range(9)), got.append)
    assert sorted(i for i, _ in got) == list(range(9))
    assert max(overlap) > 1 and len({d for _, d in got}) == 3


def test_halt_lets_running_episodes_finish_and_starts_nothing_new():
    pool: EpisodePool

    def run_one(env, item):
        if item == 0:
            pool.halt()
        time.sleep(0.05)
        return item

    got: list[int] = []
    pool = EpisodePool([Desk()], run_one, StopSignal())
    pool.run([0, 1, 2], got.append)
    assert got == [0]


def test_a_harness_exception_is_raised_after_the_other_episodes_end():
    def run_one(env, item):
        if item == 1:
            raise RuntimeError("bug")
        time.sleep(0.1)
        return item

    got: list[int] = []
    with pytest.raises(RuntimeError, match="bug"):
        EpisodePool([Desk(), Desk()], run_one, StopSignal()).run([0, 1, 2, 3], got.append)
    assert 0 in got and len(got) < 4  # the running one finished, the rest never started


def test_an_interrupt_cancels_running_agents_and_hands_over_their_results():
    stop = StopSignal()
    started = threading.Barrier(3)

    def run_one(env, item):
        async def agent() -> None:
            with stop.watching():
                started.wait(timeout=5)
                await asyncio.sleep(60)  # an LLM call in flight

        try:
            asyncio.run(agent())
        except asyncio.CancelledError:
            return f"{item}:interrupted"
        return f"{item}:done"

    def interrupt_soon() -> None:
        started.wait(timeout=5)
        _thread.interrupt_main()  # what Ctrl-C does to the main thread

    threading.Thread(target=interrupt_soon, daemon=True).start()
    got: list[str] = []
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        EpisodePool([Desk(), Desk()], run_one, stop, grace_s=5).run([0, 1, 2, 3], got.append)
    assert time.monotonic() - t0 < 5
    assert sorted(got) == ["0:interrupted", "1:interrupted"]  # 2 and 3 never started
    assert stop.is_set() and stop.reason == "SIGINT"


def test_an_episode_that_ignores_the_stop_has_its_desktop_killed_then_is_left_behind():
    desks = [Desk()]
    stop = StopSignal()
    running = threading.Event()

    def run_one(env, item):
        running.set()
        if env.killed.wait(timeout=30):  # blocked on the desktop until it goes away
            raise EpisodeInterrupted("desktop gone")
        return item

    def interrupt_soon() -> None:
        running.wait(timeout=5)
        _thread.interrupt_main()

    threading.Thread(target=interrupt_soon, daemon=True).start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        EpisodePool(desks, run_one, stop, grace_s=0.3).run([0], lambda r: None)
    assert desks[0].killed.is_set() and time.monotonic() - t0 < 3


def test_stop_check_raises_inside_an_episode():
    stop = StopSignal()
    stop.check()
    stop.set("SIGTERM")
    with pytest.raises(EpisodeInterrupted, match="SIGTERM"):
        stop.check()
