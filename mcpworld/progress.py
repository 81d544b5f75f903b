"""Live progress of a job's episodes: done/total, successes, errors and an ETA (rich). Each
finished episode also gets one plain line, so logs and CI output keep the record."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from mcpworld.result import EpisodeResult


class SweepProgress:
    def __init__(self, total: int, console: Console | None = None):
        self.total = total
        self.successes = self.errors = 0
        self.console = console or Console()
        self.progress = Progress(TextColumn("[bold]episodes"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[tally]}"), TimeElapsedColumn(), TextColumn("ETA"),
                                 TimeRemainingColumn(), console=self.console, transient=True)
        self.task = self.progress.add_task("episodes", total=total, tally=self._tally())

    def _tally(self) -> str:
        return f"[green]{self.successes} ok[/] [red]{self.errors} errors[/]"

    def done(self, result: EpisodeResult) -> None:
        self.successes += result.status == "success"
        self.errors += result.status in ("infra_error", "agent_error")
        n = self.progress.tasks[0].completed + 1
        reason = f"  ({result.reason[:120]})" if result.reason and result.status != "success" else ""
        self.progress.console.print(
            f"  [{int(n)}/{self.total}] {result.task_id:<36} {result.status:<12} score={result.score:.2f} "
            f"steps={result.steps} {result.duration_s:.1f}s{reason}", markup=False, highlight=False, soft_wrap=True)
        self.progress.update(self.task, advance=1, tally=self._tally())

    def __enter__(self) -> "SweepProgress":
        self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.stop()
