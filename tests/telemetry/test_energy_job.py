"""A whole job at ``concurrency=2`` on real desktops (the oracle works two mousepad episodes at once)
metered by a fake NVML GPU at a steady 150 W and a fake RAPL tree: the episodes' energies and the part
outside them add up to the job's integrated energy in summary.json, with the idle baseline."""

from __future__ import annotations

import json

import pytest

from mcpworld.run import job
from mcpworld.telemetry.energy import factory
from tests.fakes.nvml import FakeNvml, SteadyGpu
from tests.helpers.config import make

pytestmark = [pytest.mark.desktop, pytest.mark.slow]


def test_a_concurrency_2_job_adds_up(tmp_path, monkeypatch, capsys):
    nvml = FakeNvml(n=1)
    nvml.gpus = [SteadyGpu(150.0)]
    nvml.install(monkeypatch)
    monkeypatch.setattr(job, "job_dir", lambda: tmp_path / "job")
    monkeypatch.setattr(factory, "_said", set())
    cfg = make(
        "task=mousepad/create_todo",
        "tracking=none",
        "attempts=2",
        "concurrency=2",
        "telemetry.idle_s=0.5",
        "telemetry.gpu.rate_hz=20",
        f"telemetry.cpu.powercap_root={tmp_path / 'no-rapl'}",
        f"telemetry.ledger_dir={tmp_path / 'ledger'}",
    )
    job.run_job(cfg)
    out = tmp_path / "job"
    summary = json.loads((out / "summary.json").read_text())
    results = [json.loads(p.read_text()) for p in sorted(out.glob("episodes/*/*/*/result.json"))]
    assert len(results) == 2 and all(r["status"] == "success" for r in results)
    episodes_j = sum(r["gpu"]["gpu.energy_j"] for r in results)
    assert summary["gpu.energy_j"] == pytest.approx(episodes_j)
    assert episodes_j + summary["gpu.energy_outside_episodes_j"] == pytest.approx(summary["gpu.job_energy_j"], rel=1e-9)
    assert summary["gpu.job_energy_j"] == pytest.approx(150.0 * summary["gpu.job_s"], rel=0.02)
    assert summary["gpu.power_w_idle"] == pytest.approx(150.0, rel=0.05)  # a steady GPU: idle is all it draws
    assert abs(summary["gpu.job_energy_net_j"]) < 0.05 * summary["gpu.job_energy_j"]
    for r in results:
        assert len(r["llm_call_windows"]) == len(r["llm_energy_j"]) == r["llm_calls"] > 0
        assert r["gpu"]["gpu.energy_j"] == pytest.approx(r["gpu"]["gpu.energy_llm_j"] + r["gpu"]["gpu.energy_rest_j"])
    assert (out / "gpu.csv").is_file()
    assert capsys.readouterr().err.count("CPU energy (RAPL) is not available here") == 1
