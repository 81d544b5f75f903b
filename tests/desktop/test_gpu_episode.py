"""GPU telemetry inside a real episode: a backend standing in for NVML (one GPU at a steady 150 W
whose energy counter advances with the wall clock) is sampled while the oracle works a desktop;
the episode gets its share of the job meter's energy, a gpu.csv and an energy per LLM call."""

from __future__ import annotations

import csv
import time
from pathlib import Path

import pytest

from mcpworld.core.paths import BUILTIN_TASKS
from mcpworld.env import DesktopSettings, make_environment
from mcpworld.run.episode import run_episode
from mcpworld.tasks.select import discover
from mcpworld.telemetry.energy.meter import EnergyMeter
from mcpworld.telemetry.gpu import Sample
from tests.helpers.config import make

pytestmark = [pytest.mark.desktop, pytest.mark.slow]
WATTS = 150.0


class SteadyGpu:
    """read() as NVML would answer it: 150 W, the counter (mJ) = 150 W x seconds since start."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def read(self) -> list[Sample]:
        t = time.monotonic()
        return [
            Sample(t=t, gpu=0, util_pct=80.0, mem_mb=20_000.0, temp_c=61.0, power_w=WATTS, energy_mj=(t - self.t0) * WATTS * 1000)
        ]

    def close(self) -> None:
        pass


def test_an_episode_measures_its_energy(tmp_path: Path) -> None:
    cfg = make("task=mousepad/create_todo", "tracking=none")
    (task,) = [t for t in discover(BUILTIN_TASKS) if t.id == "mousepad/create_todo"]
    monitor = EnergyMeter({"gpu": SteadyGpu()}, rate_hz=20)
    monitor.start()
    env = make_environment(DesktopSettings.of(cfg))
    try:
        result = run_episode(cfg, task, 0, tmp_path / "ep", env, monitor)
    finally:
        env.close()
        monitor.close()
    assert result.status == "success"
    # the sampler covered the whole episode: energy ≈ 150 W x its duration
    assert result.gpu["gpu.energy_j"] == pytest.approx(WATTS * result.duration_s, rel=0.15)
    assert result.gpu["gpu.power_w_mean"] == pytest.approx(WATTS) and result.gpu["gpu.temp_max_c"] == 61.0
    assert len(result.llm_energy_j) == len(result.llm_call_windows) == result.llm_calls
    job = monitor.job_metrics()  # the only episode: its energy and the outside make the job's
    assert result.gpu["gpu.energy_j"] + job["gpu.energy_outside_episodes_j"] == pytest.approx(job["gpu.job_energy_j"])
    rows = list(csv.DictReader((tmp_path / "ep" / "gpu.csv").open()))
    assert len(rows) >= 5 and set(rows[0]) >= {"t", "gpu", "power_w", "energy_mj"}
    numbers = result.numbers()
    assert numbers["gpu.energy_j"] == result.gpu["gpu.energy_j"]
