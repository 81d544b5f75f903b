"""GPU telemetry per episode and per LLM call: a sampler thread, ``gpu.csv``, energy and metrics.

``make_gpu_monitor`` is the one place that picks the sampling source (``telemetry.gpu.source``):
``local`` reads NVML on this machine, ``none`` turns GPU metrics off. A backend is any object with
``read() -> list[Sample]`` (one sample per GPU) and ``close()``, so a remote sampler can be added here
without touching ``GpuMonitor`` / ``EpisodeGpu``. Without a GPU, a driver or ``pynvml`` the factory
prints one info line per process and returns None; callers then skip GPU metrics.

Energy, per GPU and summed over GPUs, is built interval by interval between consecutive samples:

* the total-energy counter's difference (mJ, ``nvmlDeviceGetTotalEnergyConsumption``, Volta+) when
  both ends have a reading and the difference is plausible;
* otherwise the trapezoid of power over the interval. This covers GPUs without the counter (any
  NVMLError from that call) and counter wrap/reset: a later reading smaller than an earlier one (or one
  implying more than ``MAX_PLAUSIBLE_W`` on average) is treated as a reset, and that one interval falls
  back to power; the counter is used again from the next interval. Such intervals are counted in
  ``EpisodeGpu.counter_fallbacks``.

``EpisodeGpu.method`` is ``"counter"`` when every sample of every GPU carried a counter reading, else
``"power"`` (some energy came from power integration because the counter is not supported).

``energy_between(t0, t1)`` (an LLM call's window, ``time.monotonic()`` times) linearly interpolates each
GPU's cumulative energy at ``t0`` and ``t1`` between the samples around them. A window shorter than one
sample interval therefore gets that interval's energy pro rata to its length (the mean power between the
neighbouring samples times the window's length). It returns None unless the samples cover the whole
window; while the episode runs, a window ending after the newest sample first takes one sample now.
"""

from __future__ import annotations

import bisect
import csv
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Self, TextIO

from mcpworld.core.errors import UserError

if TYPE_CHECKING:
    import _csv

SOURCES = ("local", "none")
DEFAULT_RATE_HZ = 4.0
MAX_CONSECUTIVE_ERRORS = 10
STOP_TIMEOUT_S = 2.0  # stop() waits at most this for a read() in progress (twice: join, then csv close)
MAX_PLAUSIBLE_W = 5000.0  # per GPU; a counter step implying more is a glitch, not energy
CSV_COLUMNS = ("t", "gpu", "util_pct", "mem_mb", "temp_c", "power_w", "energy_mj")
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
            out.append(Sample(
                t=t, gpu=i,
                util_pct=float(nv.nvmlDeviceGetUtilizationRates(h).gpu),
                mem_mb=nv.nvmlDeviceGetMemoryInfo(h).used / MIB,
                temp_c=float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
                power_w=nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
                energy_mj=self._energy(i, h),
            ))
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
            try:
                self._nvml.nvmlShutdown()
            except self._nvml.NVMLError:
                pass


def _announce(reason: str) -> None:
    global _announced
    if not _announced:
        _announced = True
        print(f"mcpworld: no NVIDIA GPU here ({reason}): GPU metrics are off", file=sys.stderr)


def make_gpu_monitor(source: str = "local", rate_hz: float = DEFAULT_RATE_HZ) -> GpuMonitor | None:
    """The one place that picks the sampling source; None (and one info line) when there is no GPU."""
    if source not in SOURCES:
        raise UserError(f"telemetry.gpu.source: unknown value {source!r}; known values: {', '.join(SOURCES)}")
    if not rate_hz or rate_hz <= 0:
        raise UserError(f"telemetry.gpu.rate_hz must be a positive number of samples per second, got {rate_hz!r}")
    if source == "none":
        return None
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
    return GpuMonitor(backend, rate_hz)


class GpuMonitor:
    """One per job; owns the backend. ``episode()`` gives a sampler for one episode."""

    def __init__(self, backend: GpuBackend, rate_hz: float = DEFAULT_RATE_HZ,
                 max_errors: int = MAX_CONSECUTIVE_ERRORS):
        self.backend = backend
        self.rate_hz = rate_hz
        self.max_errors = max_errors
        self._closed = False

    def episode(self, csv_path: Path) -> EpisodeGpu:
        return EpisodeGpu(self.backend, Path(csv_path), self.rate_hz, self.max_errors)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _GpuSeries:
    """One GPU's samples with the cumulative energy (J) at each sample."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.cum_j: list[float] = []
        self.last: Sample | None = None
        self.counter_all = True  # every sample had a counter reading

    def add(self, s: Sample) -> bool:
        """Append a sample; returns True when the counter was present at both ends but rejected."""
        self.counter_all = self.counter_all and s.energy_mj is not None
        rejected = False
        if self.last is None:
            joules = 0.0
        else:
            joules, rejected = _interval_energy(self.last, s)
        self.times.append(s.t)
        self.cum_j.append((self.cum_j[-1] if self.cum_j else 0.0) + joules)
        self.last = s
        return rejected

    def at(self, t: float) -> float:
        """Cumulative energy at ``t`` (within the samples' span), linearly interpolated."""
        i = bisect.bisect_right(self.times, t)
        if i >= len(self.times):
            return self.cum_j[-1]
        t_a, t_b = self.times[i - 1], self.times[i]
        e_a, e_b = self.cum_j[i - 1], self.cum_j[i]
        return e_a if t_b <= t_a else e_a + (e_b - e_a) * (t - t_a) / (t_b - t_a)


def _interval_energy(a: Sample, b: Sample) -> tuple[float, bool]:
    """Joules between two samples of one GPU, and whether a present counter had to be rejected."""
    dt = b.t - a.t
    if a.energy_mj is not None and b.energy_mj is not None:
        diff_j = (b.energy_mj - a.energy_mj) / 1000.0
        if diff_j == 0 or (diff_j > 0 and dt > 0 and diff_j / dt <= MAX_PLAUSIBLE_W):
            return diff_j, False
        rejected = True  # decrease (wrap/reset) or an absurd jump: this interval from power
    else:
        rejected = False
    return max(0.0, (a.power_w + b.power_w) / 2.0 * dt), rejected


class EpisodeGpu:
    """Samples one episode into ``gpu.csv`` on a thread; ``with monitor.episode(path) as g:``.

    Tests (and callers without a thread) may drive it with ``sample_once()`` instead of entering it.
    """

    def __init__(self, backend: GpuBackend, csv_path: Path, rate_hz: float = DEFAULT_RATE_HZ,
                 max_errors: int = MAX_CONSECUTIVE_ERRORS):
        self.backend = backend
        self.csv_path = csv_path
        self.interval = 1.0 / rate_hz
        self.max_errors = max_errors
        self.ticks: list[list[Sample]] = []  # one read() each: one sample per GPU
        self.errors = 0  # failed samples, all told
        self.counter_fallbacks = 0  # intervals where a present counter was rejected (reset/wrap)
        self.stopped_reason: str | None = None  # why sampling stopped early, if it did
        self._series: dict[int, _GpuSeries] = {}
        self._consecutive = 0
        self._lock = threading.RLock()  # the thread, on-demand samples in energy_between() and stop()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._file: TextIO | None = None
        self._writer: _csv.Writer | None = None
        self._stopped = False
        self._csv_closed = False

    # -- lifecycle --------------------------------------------------------------------------------
    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Take a first sample now, then sample on a daemon thread until ``stop()``."""
        if self._thread is not None:
            return
        self._safe_sample()
        self._thread = threading.Thread(target=self._run, name=f"gpu-sampler:{self.csv_path}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (bounded join), take one last sample, close the csv. Idempotent; never raises."""
        if self._stopped:
            return
        self._stopped = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=STOP_TIMEOUT_S)
            if self._thread.is_alive():
                self.stopped_reason = self.stopped_reason or "the sampler thread did not stop in time"
            else:
                self._safe_sample()  # the last sample (skipped after the thread gave up)
        if self._lock.acquire(timeout=STOP_TIMEOUT_S):  # else a hung read() holds it; the thread closes later
            try:
                self._close_csv()
            finally:
                self._lock.release()

    def _close_csv(self) -> None:
        self._csv_closed = True
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if not self._safe_sample() and self._consecutive >= self.max_errors:
                break
        if self._stopped:  # stop() may have given up on a read that hung: close the csv here
            with self._lock:
                self._close_csv()

    # -- sampling ---------------------------------------------------------------------------------
    def sample_once(self) -> list[Sample]:
        """Read the backend once, record the samples and append them to the csv (flushed). May raise."""
        with self._lock:
            samples = self.backend.read()
            self.ticks.append(samples)
            for s in samples:
                if self._series.setdefault(s.gpu, _GpuSeries()).add(s):
                    self.counter_fallbacks += 1
            self._write(samples)
            return samples

    def _safe_sample(self) -> bool:
        with self._lock:
            if self._consecutive >= self.max_errors:
                return False  # given up
            try:
                self.sample_once()
            except Exception as e:  # noqa: BLE001 - sampling never raises into the episode
                self.errors += 1
                self._consecutive += 1
                if self._consecutive >= self.max_errors:
                    self.stopped_reason = (f"{self._consecutive} consecutive sampling errors, "
                                           f"last: {type(e).__name__}: {e}")
                    print(f"mcpworld: warning: GPU sampling stopped: {self.stopped_reason}", file=sys.stderr)
                return False
            self._consecutive = 0
            return True

    def _write(self, samples: list[Sample]) -> None:
        if self._csv_closed:
            return
        if self._file is None or self._writer is None:  # (both are made together)
            self.csv_path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.csv_path, "w", newline="")  # noqa: SIM115 - open for the episode
            self._writer = csv.writer(self._file)
            self._writer.writerow(CSV_COLUMNS)
        for s in samples:
            self._writer.writerow([repr(s.t), s.gpu, s.util_pct, s.mem_mb, s.temp_c, s.power_w,
                                   "" if s.energy_mj is None else s.energy_mj])
        self._file.flush()

    # -- results ----------------------------------------------------------------------------------
    @property
    def method(self) -> str:
        """``counter`` when every GPU's every sample had the energy counter, else ``power``."""
        with self._lock:
            series = list(self._series.values())
        return "counter" if series and all(s.counter_all for s in series) else "power"

    def energy_between(self, t0: float, t1: float) -> float | None:
        """Joules used by all GPUs between two monotonic times; None if the samples do not cover it."""
        if t1 < t0:
            raise ValueError(f"energy_between: t1 ({t1}) is before t0 ({t0})")
        if self.running:
            with self._lock:
                newest = self.ticks[-1][0].t if self.ticks and self.ticks[-1] else None
            if newest is None or newest < t1:
                self._safe_sample()
        with self._lock:
            series = list(self._series.values())
            if not series or any(not s.times or t0 < s.times[0] or t1 > s.times[-1] for s in series):
                return None
            return sum(s.at(t1) - s.at(t0) for s in series)

    def metrics(self) -> dict[str, float]:
        """``gpu.*`` metrics of the episode; only ``gpu.samples`` (0) when nothing was sampled."""
        with self._lock:
            ticks = [t for t in self.ticks if t]
            series = list(self._series.values())
        out: dict[str, float] = {"gpu.samples": float(len(ticks))}
        if not ticks:
            return out
        power = [sum(s.power_w for s in tick) for tick in ticks]
        every = [s for tick in ticks for s in tick]
        out.update({
            "gpu.energy_j": sum(s.cum_j[-1] for s in series),
            "gpu.power_w_mean": sum(power) / len(power),
            "gpu.power_w_max": max(power),
            "gpu.util_mean": sum(s.util_pct for s in every) / len(every),
            "gpu.mem_peak_mb": max(sum(s.mem_mb for s in tick) for tick in ticks),
            "gpu.temp_max_c": max(s.temp_c for s in every),
        })
        return out
