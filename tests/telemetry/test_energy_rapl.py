"""CPU package energy from RAPL, read from a powercap tree laid out as Linux lays it out (a tmp folder
with intel-rapl:N zones and their sub-zones), including the counter's wrap-around."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpworld.config.schema import TelemetryConfig
from mcpworld.telemetry.energy import factory
from mcpworld.telemetry.energy.factory import make_energy_meter
from mcpworld.telemetry.energy.meter import EnergyMeter
from mcpworld.telemetry.energy.rapl import POWERCAP, RaplBackend, RaplUnavailable

RANGE = 262_143_328_850  # a real package's max_energy_range_uj


def zone(root: Path, name: str, label: str, uj: int) -> Path:
    z = root / name
    z.mkdir(parents=True)
    (z / "name").write_text(label + "\n")
    (z / "energy_uj").write_text(f"{uj}\n")
    (z / "max_energy_range_uj").write_text(f"{RANGE}\n")
    return z


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "powercap"
    (root / "intel-rapl").mkdir(parents=True)  # the control type folder: no counter
    p0 = zone(root, "intel-rapl:0", "package-0", RANGE - 30_000_000)  # 30 J before it wraps
    zone(root, "intel-rapl:0:0", "core", 5)  # inside the package's figure: not read
    p1 = zone(root, "intel-rapl:1", "package-1", 1_000_000)
    zone(root, "intel-rapl:1:0", "dram", 5)
    return root, p0, p1


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def set_uj(zone_dir: Path, uj: int) -> None:
    (zone_dir / "energy_uj").write_text(f"{uj}\n")


def test_packages_are_read_and_a_wrap_around_is_unwrapped(tree):
    root, p0, p1 = tree
    clock = Clock()
    rapl = RaplBackend(root, clock=clock)
    assert rapl.names == ["package-0", "package-1"]
    meter = EnergyMeter({"cpu": rapl}, clock=clock)
    meter.sample_once()
    clock.now = 1.0
    set_uj(p0, RANGE - 10_000_000)  # +20 J
    set_uj(p1, 6_000_000)  # +5 J
    meter.sample_once()
    clock.now = 2.0
    set_uj(p0, 15_000_000)  # wrapped: +10 J to the top, +15 J after it
    set_uj(p1, 11_000_000)  # +5 J
    meter.sample_once()
    samples = meter.domains["cpu"].ticks[-1]
    assert samples[0].power_w == pytest.approx(25) and samples[1].power_w == pytest.approx(5)
    meter.close()
    job = meter.job_metrics()
    assert job["cpu.job_energy_j"] == pytest.approx(20 + 5 + 25 + 5)
    assert job["cpu.counter_fallbacks"] == 0  # a wrap is not a reset: no interval fell back to power


def test_cpu_energy_is_shared_by_the_same_rule(tree):
    root, p0, _ = tree
    clock = Clock()
    meter = EnergyMeter({"cpu": RaplBackend(root, clock=clock)}, clock=clock)
    meter.sample_once()
    ep = meter.episode()
    for t in (1, 2):
        clock.now = float(t)
        set_uj(p0, RANGE - 30_000_000 + t * 10_000_000)  # 10 W on package 0, 0 W on package 1
        meter.sample_once()
    metrics = ep.finish()
    assert metrics["cpu.energy_j"] == pytest.approx(20) and metrics["cpu.energy_rest_j"] == pytest.approx(20)
    assert "gpu.samples" not in metrics  # GPU figures only with a GPU


def test_an_unreadable_counter_is_unavailable(tree):
    root, p0, _ = tree
    (p0 / "energy_uj").unlink()
    (p0 / "energy_uj").mkdir()  # reading it fails as a root-only file does for a user (an OSError)
    with pytest.raises(RaplUnavailable, match="energy_uj"):
        RaplBackend(root)


def test_no_tree_or_no_zone_is_unavailable(tmp_path):
    with pytest.raises(RaplUnavailable, match="no "):
        RaplBackend(tmp_path / "absent")
    with pytest.raises(RaplUnavailable, match="no intel-rapl:N zone"):
        RaplBackend(tmp_path)


def test_without_rapl_the_job_says_so_once_and_records_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(factory, "_said", set())
    cfg = TelemetryConfig()
    cfg.gpu.source = "none"
    cfg.cpu.powercap_root = str(tmp_path / "absent")
    for _ in range(2):
        meter, params = make_energy_meter(cfg)
        assert meter is None
        assert params == {"energy.gpu": "off", "energy.cpu": f"not available here: no {tmp_path / 'absent'}"}
    assert capsys.readouterr().err.count("CPU energy (RAPL) is not available here") == 1


def test_with_rapl_the_factory_meters_the_cpu(tree):
    root, _, _ = tree
    cfg = TelemetryConfig()
    cfg.gpu.source = "none"
    cfg.cpu.powercap_root = str(root)
    cfg.ledger_dir = None  # this job alone: no ledger
    meter, params = make_energy_meter(cfg)
    assert meter is not None and meter.ledger is None
    assert isinstance(meter, EnergyMeter) and list(meter.domains) == ["cpu"]
    assert params["energy.cpu"] == "RAPL package-0, package-1"
    meter.close()


@pytest.mark.skipif(POWERCAP.exists(), reason="this machine has a powercap tree")
def test_this_machine_has_no_rapl():
    """Measured where the project is built: a VM without /sys/class/powercap."""
    with pytest.raises(RaplUnavailable, match="no /sys/class/powercap"):
        RaplBackend()
