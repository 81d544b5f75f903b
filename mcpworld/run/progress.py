"""Live progress of a job's episodes: done/total, successes, errors and an ETA (rich). Each
finished episode also gets one plain line, so logs and CI output keep the record."""

from __future__ import annotations

import threading
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from mcpworld.core.result import EpisodeResult, Status


class SweepProgress:
    def __init__(self, total: int, console: Console | None = None):
        self.total = total
        self.successes = self.errors = 0
        self.console = console or Console()
        self.progress = Progress(
            TextColumn("[bold]episodes"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[tally]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
        )
        self.task = self.progress.add_task("episodes", total=total, tally=self._tally())

    def _tally(self) -> str:
        return f"[green]{self.successes} ok[/] [red]{self.errors} errors[/]"

    def done(self, result: EpisodeResult) -> None:
        self.successes += result.status == Status.success
        self.errors += result.status in (Status.infra_error, Status.eval_error, Status.agent_error)
        n = self.progress.tasks[0].completed + 1
        # the cause whole: a grader's traceback line or an interpreter fix cut at 120 characters helps no one
        reason = f"  ({' '.join(result.reason.split())})" if result.reason and result.status != Status.success else ""
        self.progress.console.print(
            f"  [{int(n)}/{self.total}] {result.task_id:<36} {result.status:<12} score={result.score:.2f} "
            f"steps={result.steps} {result.duration_s:.1f}s{reason}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        self.progress.update(self.task, advance=1, tally=self._tally())

    def __enter__(self) -> SweepProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.stop()


class DownloadProgress:
    """One bar per file being downloaded (bytes, rate, ETA), gone when the file is complete; fed
    from download threads through ``update(url, done, total)``."""

    def __init__(self, console: Console | None = None):
        from rich.progress import DownloadColumn, TransferSpeedColumn

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=console or Console(stderr=True),
            transient=True,
        )
        self.bars: dict[str, Any] = {}
        self.lock = threading.Lock()

    def update(self, url: str, done: int, total: int | None) -> None:
        with self.lock:
            self._update(url, done, total)

    def _update(self, url: str, done: int, total: int | None) -> None:
        bar = self.bars.get(url)
        if bar is None:
            bar = self.bars[url] = self.progress.add_task(url.rsplit("/", 1)[-1][:40], total=total)
        self.progress.update(bar, completed=done, total=total)
        if total is not None and done >= total:
            self.progress.remove_task(bar)
            del self.bars[url]

    def __enter__(self) -> DownloadProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.stop()
