"""Episodes on N desktops at once: one worker thread per desktop, results handed to the caller's
thread as they finish.

Workers are daemon threads, so an episode stuck in a call that ignores cancellation can never keep
the process alive. On Ctrl-C/SIGTERM no new episode starts, running ones are told to stop (their
agent task is cancelled), and whatever has not ended after ``grace_s`` has its desktop killed under
it; the results that did arrive are still handed over before the interrupt goes on up.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Generic, Protocol, TypeVar

from mcpworld.env.base import Environment
from mcpworld.run.interrupt import Interrupted, StopSignal, signals_deferred

Item = TypeVar("Item")
Result = TypeVar("Result")
Staged = TypeVar("Staged", contravariant=True)


class Staging(Protocol[Staged]):
    """env.stage: how a worker readies its next episode on its second desktop while one runs."""

    def stage(self, env: Environment, item: Staged) -> None:
        """Reset ``env`` for ``item`` ahead (``Environment.stage``); never raises."""

    def withdraw(self, env: Environment, item: Staged) -> None:
        """``item`` will not run on ``env`` (the run stops): end what was staged for it."""


class EpisodePool(Generic[Item, Result]):
    def __init__(
        self,
        envs: list[Environment],
        run_one: Callable[[Environment, Item], Result],
        stop: StopSignal,
        grace_s: float = 10.0,
        staging: Staging[Item] | None = None,
    ):
        """``staging``: each worker has two of ``envs`` (one lane: envs[2i], envs[2i+1]) and claims its
        next item when it starts one, so that item's reset runs on the other desktop meanwhile."""
        if staging is not None and len(envs) % 2:
            raise ValueError("staging needs two desktops per worker")
        self.envs, self.run_one, self.stop = envs, run_one, stop
        self.grace_s = grace_s
        self.staging = staging
        self._halted = threading.Event()

    def halt(self) -> None:
        """Start nothing new; running episodes finish normally (an endpoint that went down)."""
        self._halted.set()

    def run(self, items: list[Item], on_result: Callable[[Result], None]) -> None:
        todo: queue.Queue[Item] = queue.Queue()
        for item in items:
            todo.put(item)
        done: queue.Queue[tuple[Result | None, BaseException | None]] = queue.Queue()

        def claim() -> Item | None:
            if self.stop.is_set() or self._halted.is_set():
                return None
            try:
                return todo.get_nowait()
            except queue.Empty:
                return None

        def run(env: Environment, item: Item) -> None:
            try:
                done.put((self.run_one(env, item), None))
            except BaseException as exc:  # handed to the caller, never lost in a thread
                done.put((None, exc))

        def work(env: Environment) -> None:
            while (item := claim()) is not None:
                run(env, item)

        def work_staged(front: Environment, back: Environment) -> None:
            assert self.staging is not None
            item = claim()
            while item is not None:
                following = claim()
                ahead = None
                if following is not None:  # its reset on the other desktop while this episode runs
                    ahead = threading.Thread(
                        target=self.staging.stage,
                        args=(back, following),
                        name=f"{threading.current_thread().name}-stage",
                        daemon=True,
                    )
                    ahead.start()
                run(front, item)
                if ahead is not None:
                    ahead.join(None if not self.stop.is_set() else self.grace_s)
                if following is not None and (self.stop.is_set() or self._halted.is_set()):
                    if ahead is None or not ahead.is_alive():  # (one still resetting is killed with the run)
                        self.staging.withdraw(back, following)
                    return
                front, back, item = back, front, following

        if self.staging is not None:
            lanes = [(self.envs[i], self.envs[i + 1]) for i in range(0, len(self.envs), 2)]
            workers = [
                threading.Thread(target=work_staged, args=lane, name=f"episode-{i}", daemon=True) for i, lane in enumerate(lanes)
            ]
        else:
            workers = [
                threading.Thread(target=work, args=(env,), name=f"episode-{i}", daemon=True) for i, env in enumerate(self.envs)
            ]
        failure: BaseException | None = None
        try:
            for worker in workers:
                worker.start()
            for result, error in _arrivals(workers, done):
                if error is None:
                    on_result(result)
                elif isinstance(error, KeyboardInterrupt):
                    raise error
                else:  # a harness bug outside the episode: let the others end, then report it
                    failure = failure or error
                    self.halt()
        except KeyboardInterrupt as exc:
            with signals_deferred():
                self._wind_down(workers, done, on_result, exc.signal_name if isinstance(exc, Interrupted) else "SIGINT")
            raise
        if failure is not None:
            raise failure

    def _wind_down(
        self,
        workers: list[threading.Thread],
        done: queue.Queue[tuple[Any, BaseException | None]],
        on_result: Callable[[Result], None],
        why: str,
    ) -> None:
        """Stop the running episodes and hand over their (interrupted) results, within a bound."""
        self.stop.set(why)
        deadline = time.monotonic() + self.grace_s
        killed = False
        for result, error in _arrivals(workers, done, idle=True):
            if not killed and time.monotonic() > deadline:
                for env in self.envs:  # an episode blocked on its desktop: pull the desktop away
                    env.kill()
                killed, deadline = True, time.monotonic() + self.grace_s
            elif killed and time.monotonic() > deadline:
                return  # daemon threads: they cannot hold the process
            if error is None and result is not None:
                on_result(result)


def _arrivals(
    workers: list[threading.Thread], done: queue.Queue[tuple[Any, BaseException | None]], idle: bool = False
) -> Iterator[tuple[Any, BaseException | None]]:
    """(result, error) pairs as the workers hand them over, until all ended and all were taken;
    with ``idle``, also (None, None) every 0.2 s with nothing new (so the caller can watch a clock)."""
    while any(w.is_alive() for w in workers) or not done.empty():
        try:
            yield done.get(timeout=0.2)
        except queue.Empty:
            if idle:
                yield None, None
