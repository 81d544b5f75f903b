"""Stopping a run on Ctrl-C or SIGTERM: no new episode starts, running ones end within a bound.

SIGTERM is turned into ``Interrupted`` (a KeyboardInterrupt), so both signals take one path. The
job sets a ``StopSignal``; each episode registers its agent's event loop with it, and setting the
signal cancels the agent's task at once (an LLM call in flight included), so the episode ends as
``interrupted`` instead of running on to its step limit.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM; ``signal_name`` says which."""

    def __init__(self, signal_name: str = "SIGINT"):
        super().__init__(signal_name)
        self.signal_name = signal_name

    @property
    def exit_code(self) -> int:
        return 128 + (signal.SIGTERM if self.signal_name == "SIGTERM" else signal.SIGINT)


class EpisodeInterrupted(Exception):
    """Raised inside an episode that was told to stop; its result is ``interrupted``."""


def raise_on_sigterm() -> None:
    """SIGTERM behaves like Ctrl-C (only the main thread can install handlers)."""
    if threading.current_thread() is not threading.main_thread():
        return

    owner = os.getpid()

    def handler(signum: int, frame: object) -> None:
        if os.getpid() != owner:  # a forked child (the MLflow tracker) keeps the default: it just ends
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise Interrupted("SIGTERM")

    signal.signal(signal.SIGTERM, handler)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """While a stop is under way, a second Ctrl-C/SIGTERM says so instead of cutting the clean-up short."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        print("mcpworld: already stopping: ending the running episodes (a few seconds)", file=sys.stderr)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class StopSignal:
    """Set once by the job when the run must stop; thread-safe."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._tasks: set[tuple[asyncio.AbstractEventLoop, asyncio.Task[object]]] = set()
        self.reason = ""

    def is_set(self) -> bool:
        return self._event.is_set()

    def set(self, reason: str) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            tasks = list(self._tasks)
        for loop, task in tasks:
            with suppress(RuntimeError):  # that loop already closed
                loop.call_soon_threadsafe(task.cancel)

    def check(self) -> None:
        """Raise EpisodeInterrupted when the run is stopping (between blocking steps)."""
        if self._event.is_set():
            raise EpisodeInterrupted(self.reason)

    @contextmanager
    def watching(self) -> Iterator[None]:
        """Within a coroutine: cancel the current task when the run stops."""
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("watching() is for a coroutine that runs as an asyncio task")
        entry = (asyncio.get_running_loop(), task)
        with self._lock:
            self._tasks.add(entry)
        try:
            self.check()
            yield
        finally:
            with self._lock:
                self._tasks.discard(entry)
