"""GPU readers: what one GPU reads as (``Sample``), local GPUs through NVML, and the factory that picks
the source (``telemetry.gpu.source``).

A reader is any object with ``read() -> list[Sample]`` (one sample per GPU, stamped with our clock) and
``close()``. ``local`` reads NVML on this machine; ``prometheus`` scrapes a DCGM exporter or our
``gpu_agent`` on the model host (``mcpworld.telemetry.energy.prometheus``); ``none`` turns GPU energy
off. Without a GPU, a driver or ``pynvml``, ``local`` prints one info line per process and gives None.
Sampling, integration and the sharing of energy between calls and episodes are in
``mcpworld.telemetry.energy`` (one sampler per job).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mcpworld.core.errors import UserError

SOURCES = ("local", "prometheus", "none")
MIB = 1024 * 1024

_announced = False  # the "no GPU" info line is printed once per process


@dataclass
class Sample:
    t: float  # time.monotonic() (or the backend's clock)
    gpu: int
    util_pct: float
    mem_mb: float  # MiB, as nvidia-smi shows it
    temp_c: float
    power_w: float
    energy_mj: float | None  # total-energy counter (an int from NVML); None when unsupported


class GpuBackend(Protocol):
    def read(self) -> list[Sample]: ...

    def close(self) -> None: ...


class NvmlBackend:
    """Local GPUs through NVML. Raises ``pynvml.NVMLError`` from the constructor when NVML is unusable."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        import pynvml

        self._nvml = pynvml
        self._clock = clock
        pynvml.nvmlInit()
        try:
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except BaseException:
            pynvml.nvmlShutdown()
            raise
        self._no_counter: set[int] = set()  # GPUs whose counter is NotSupported: not asked again
        self._closed = False

    @property
    def count(self) -> int:
        return len(self._handles)

    def read(self) -> list[Sample]:
        nv = self._nvml
        t = self._clock()
        out = []
        for i, h in enumerate(self._handles):
            out.append(
                Sample(
                    t=t,
                    gpu=i,
                    util_pct=float(nv.nvmlDeviceGetUtilizationRates(h).gpu),
                    mem_mb=nv.nvmlDeviceGetMemoryInfo(h).used / MIB,
                    temp_c=float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
                    power_w=nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
                    energy_mj=self._energy(i, h),
                )
            )
        return out

    def _energy(self, i: int, handle) -> float | None:
        if i in self._no_counter:
            return None
        nv = self._nvml
        try:
            return nv.nvmlDeviceGetTotalEnergyConsumption(handle)  # an int: exact differences near 2**64
        except nv.NVMLError_NotSupported:
            self._no_counter.add(i)
        except nv.NVMLError:
            pass  # a transient failure: power integration covers the intervals around this sample
        return None

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            with contextlib.suppress(self._nvml.NVMLError):
                self._nvml.nvmlShutdown()


def _announce(reason: str) -> None:
    global _announced
    if not _announced:
        _announced = True
        print(f"mcpworld: no NVIDIA GPU here ({reason}): GPU metrics are off", file=sys.stderr)


def make_gpu_backend(source: str = "local", url: str | None = None) -> GpuBackend | None:
    """The one place that picks the GPU source; None (and one info line) when there is no local GPU."""
    if source not in SOURCES:
        raise UserError(f"telemetry.gpu.source: unknown value {source!r}; known values: {', '.join(SOURCES)}")
    if source == "none":
        return None
    if source == "prometheus":
        if not url:
            raise UserError(
                "telemetry.gpu.source=prometheus needs telemetry.gpu.url, the model host's metrics "
                "endpoint (e.g. http://model-host:9400/metrics for dcgm-exporter)"
            )
        from mcpworld.telemetry.energy.prometheus import AGENT_TOKEN, PrometheusBackend

        return PrometheusBackend(url, token=os.environ.get(AGENT_TOKEN) or None)  # gpu_agent's (docs/security.md)
    try:
        import pynvml
    except ImportError:
        _announce("pynvml is not installed")
        return None
    try:
        backend = NvmlBackend()
    except pynvml.NVMLError as e:
        _announce(type(e).__name__)
        return None
    if backend.count == 0:
        backend.close()
        _announce("NVML reports 0 devices")
        return None
    return backend
