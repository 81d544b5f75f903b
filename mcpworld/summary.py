"""Summary tables: per job after its episodes, and for a whole sweep (Hydra callback)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig
from rich.console import Console
from rich.table import Table

from mcpworld.result import EpisodeResult


def print_job_table(name: str, results: list[EpisodeResult]) -> None:
    table = Table(title=f"mcpworld job: {name}")
    for col in ("task", "attempt", "status", "score", "steps", "duration s"):
        table.add_column(col)
    for r in results:
        table.add_row(r.task_id, str(r.attempt), r.status, f"{r.score:.2f}", str(r.steps), f"{r.duration_s:.1f}")
    Console().print(table)


class SweepSummary(Callback):
    """A multirun's MLflow parent run (opened first, closed last) and, at the end, one table
    comparing every job of the sweep."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from mcpworld.telemetry.tracking import start_sweep_run

        start_sweep_run(config, Path(config.hydra.sweep.dir), list(config.hydra.overrides.task))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from mcpworld.telemetry.tracking import finish_sweep_run

        sweep_dir = Path(config.hydra.sweep.dir)
        rows = []
        for path in sorted(sweep_dir.glob("*/summary.json"), key=lambda p: int(p.parent.name)
                           if p.parent.name.isdigit() else 0):
            data = json.loads(path.read_text())
            rows.append((path.parent.name, data))
        finish_sweep_run(sweep_dir, {"jobs": float(len(rows)),
                                     "episodes": float(sum(d["episodes"] for _, d in rows))})
        if not rows:
            return
        table = Table(title=f"mcpworld sweep: {sweep_dir}")
        for col in ("job", "overrides", "episodes", "success rate", "mean score", "infra errors"):
            table.add_column(col, overflow="fold")
        for num, data in rows:
            table.add_row(num, data.get("job", ""), f"{data['episodes']:.0f}", f"{data['success_rate']:.0%}",
                          f"{data['mean_score']:.2f}", f"{data['infra_errors']:.0f}")
        Console().print(table)
