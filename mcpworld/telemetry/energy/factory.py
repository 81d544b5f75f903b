"""``make_energy_meter(cfg.telemetry)``: the job's meter over the sources this machine (or the model
host) has, and params that say what was measured and what could not be."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from mcpworld.config.schema import TelemetryConfig
from mcpworld.core.errors import UserError
from mcpworld.telemetry.energy.ledger import SharedLedger
from mcpworld.telemetry.energy.meter import EnergyMeter
from mcpworld.telemetry.energy.rapl import RaplBackend, RaplUnavailable
from mcpworld.telemetry.gpu import GpuBackend, make_gpu_backend

_said: set[str] = set()  # "not available here" lines already printed in this process


def say_once(line: str) -> None:
    if line not in _said:
        _said.add(line)
        print(f"mcpworld: {line}", file=sys.stderr)


def make_energy_meter(telemetry: TelemetryConfig) -> tuple[EnergyMeter | None, dict[str, str]]:
    """The meter (None when nothing can be measured) and ``energy.*`` params for the job run."""
    gpu_cfg = telemetry.gpu
    if not gpu_cfg.rate_hz or gpu_cfg.rate_hz <= 0:
        raise UserError(f"telemetry.gpu.rate_hz must be a positive number of samples per second, got {gpu_cfg.rate_hz!r}")
    if telemetry.idle_s < 0:
        raise UserError(f"telemetry.idle_s must be 0 (no idle baseline) or more seconds, got {telemetry.idle_s!r}")
    params: dict[str, str] = {}
    sources: dict[str, GpuBackend] = {}
    gpu = make_gpu_backend(str(gpu_cfg.source), gpu_cfg.url)
    if gpu is not None:
        sources["gpu"] = gpu
        count = getattr(gpu, "count", "?")
        params["energy.gpu"] = (
            f"prometheus {gpu_cfg.url}, {count} GPU(s)" if str(gpu_cfg.source) == "prometheus" else f"local NVML, {count} GPU(s)"
        )
        offset = getattr(gpu, "clock_offset_s", None)
        if offset is not None:
            params["energy.gpu_clock_offset_s"] = f"{offset:.3f}"
    else:
        params["energy.gpu"] = "off" if str(gpu_cfg.source) == "none" else "not available here"
    if telemetry.cpu.rapl:
        try:
            rapl = RaplBackend(Path(telemetry.cpu.powercap_root))
        except RaplUnavailable as e:
            params["energy.cpu"] = f"not available here: {e}"
            say_once(f"CPU energy (RAPL) is not available here ({e}): no cpu.* energy metrics")
        else:
            sources["cpu"] = rapl
            params["energy.cpu"] = "RAPL " + ", ".join(rapl.names)
    else:
        params["energy.cpu"] = "off"
    if not sources:
        return None, params
    return EnergyMeter(sources, gpu_cfg.rate_hz, telemetry.idle_s, ledger=shared_ledger(telemetry)), params


def shared_ledger(telemetry: TelemetryConfig) -> SharedLedger | None:
    """The host's ledger for the jobs that read the same GPUs (one folder per GPU source)."""
    if not telemetry.ledger_dir:
        return None
    source = str(telemetry.gpu.source)
    group = re.sub(r"[^A-Za-z0-9.]+", "_", telemetry.gpu.url or "") if source == "prometheus" else source
    try:
        return SharedLedger(Path(telemetry.ledger_dir) / group)
    except OSError as e:
        say_once(
            f"telemetry.ledger_dir={telemetry.ledger_dir} is not writable ({e}): jobs running at the same "
            "time on these GPUs will each count all of their energy"
        )
        return None
