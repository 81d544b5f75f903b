"""One energy meter per job: one sampler thread over every source, the idle baseline, and the ledger
of the episodes and LLM calls that the measured energy is shared between.

Episodes run in parallel threads (``concurrency>1``) and share one GPU, so a per-episode sampler would
count the same joules in several episodes. Here the job's samples are integrated once
(``series.EnergySeries`` per device) and each finished episode gets its share by the rule in
``attribution``. An episode's share is final when it ends: a call of another episode still running then
is known (its start was recorded), and is active up to now.

Times are our ``time.monotonic()`` (or an injected clock in tests); a remote reader stamps its samples
with our clock too. The idle baseline is the mean power over ``idle_s`` seconds of samples taken before
the first episode (``power_w_idle``); net energy is gross minus that power times the seconds shared to
the call or episode by the same rule as the joules.
"""

from __future__ import annotations

import csv
import itertools
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from mcpworld.telemetry.energy.attribution import OPEN, Interval, Shares, attribute
from mcpworld.telemetry.energy.ledger import SharedLedger
from mcpworld.telemetry.energy.series import EnergySeries
from mcpworld.telemetry.gpu import GpuBackend, Sample

if TYPE_CHECKING:
    from mcpworld.core.result import EpisodeResult

DEFAULT_RATE_HZ = 4.0
MAX_CONSECUTIVE_ERRORS = 10
STOP_TIMEOUT_S = 2.0  # close() waits at most this for a read() in progress
CSV_COLUMNS = ("t", "gpu", "util_pct", "mem_mb", "temp_c", "power_w", "energy_mj")

CURRENT: ContextVar[EpisodeEnergy | None] = ContextVar("mcpworld_episode_energy", default=None)


def current_episode() -> EpisodeEnergy | None:
    """The episode being metered in this thread (set while ``with meter.episode(...)`` is entered)."""
    return CURRENT.get()


class _Domain:
    """One kind of device (``gpu``, ``cpu``): its reader, samples and per-device series."""

    def __init__(self, name: str, backend: GpuBackend):
        self.name = name
        self.backend = backend
        self.ticks: list[list[Sample]] = []
        self.series: dict[int, EnergySeries] = {}
        self.errors = 0
        self.consecutive = 0
        self.stopped_reason: str | None = None

    def span(self) -> tuple[float, float] | None:
        """Where every device has samples: the latest first sample to the earliest last one."""
        series = [s for s in self.series.values() if s.times]
        if not series:
            return None
        lo, hi = max(s.times[0] for s in series), min(s.times[-1] for s in series)
        return (lo, hi) if lo <= hi else None

    def energy_at(self, t: float) -> float:
        return sum(s.at(t) for s in self.series.values())

    def sample_times(self) -> list[float]:
        return [tick[0].t for tick in self.ticks if tick]

    @property
    def method(self) -> str:
        series = list(self.series.values())
        return "counter" if series and all(s.counter_all for s in series) else "power"


class EnergyMeter:
    """``start()`` once (baseline, then the thread), ``episode()`` per episode, ``close()`` at the end."""

    def __init__(
        self,
        sources: dict[str, GpuBackend],
        rate_hz: float = DEFAULT_RATE_HZ,
        idle_s: float = 0.0,
        max_errors: int = MAX_CONSECUTIVE_ERRORS,
        clock: Callable[[], float] = time.monotonic,
        ledger: SharedLedger | None = None,
    ):
        self.domains = {name: _Domain(name, b) for name, b in sources.items()}
        self.interval = 1.0 / rate_hz
        self.idle_s = idle_s
        self.max_errors = max_errors
        self.clock = clock
        self.wall_offset = time.time() - clock()  # our clock → epoch seconds, for result.json
        self.idle_w: dict[str, float] = {}
        self.begin_t: float | None = None  # the job's span starts here (after the baseline)
        self.ledger = ledger  # other jobs' spans on this host (None: this job alone on its GPUs)
        self._calls: list[Interval] = []
        self._episodes: list[Interval] = []
        self._ids = itertools.count()
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._job: dict[str, float] | None = None

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        """Sample now, start the thread, and measure the idle baseline over ``idle_s`` (blocking)."""
        self._safe_sample()
        self._thread = threading.Thread(target=self._run, name="energy-sampler", daemon=True)
        self._thread.start()
        if self.idle_s > 0:
            first = self.clock()
            print(f"mcpworld: measuring idle power for {self.idle_s:g} s before the first episode", file=sys.stderr)
            self._stop.wait(self.idle_s)
            self._safe_sample()
            self.set_baseline(first, self.clock())
        else:
            self.begin_t = self.clock()

    def set_baseline(self, t0: float, t1: float) -> None:
        """Idle power = the energy between ``t0`` and ``t1`` over the time; the job's span begins at ``t1``."""
        with self._lock:
            for d in self.domains.values():
                span = d.span()
                if span is None:
                    continue
                a, b = max(t0, span[0]), min(t1, span[1])
                if b > a:
                    self.idle_w[d.name] = (d.energy_at(b) - d.energy_at(a)) / (b - a)
            self.begin_t = t1

    def close(self, csv_path: Path | None = None) -> None:
        """Stop the thread (bounded), take a last sample, keep the job's figures; the job's gpu.csv."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=STOP_TIMEOUT_S)
        if self._lock.acquire(timeout=STOP_TIMEOUT_S):  # else a hung read() holds it
            try:
                if self._thread is None or not self._thread.is_alive():
                    self._safe_sample()
                self._job = self._job_metrics()
                if csv_path is not None:
                    self._write_csv(csv_path, None, None)
            finally:
                self._lock.release()
        if self.ledger:
            self.ledger.close()
        for d in self.domains.values():
            with suppress(Exception):
                d.backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if all(d.consecutive >= self.max_errors for d in self.domains.values()):
                break
            self._safe_sample()

    # -- sampling ---------------------------------------------------------------------------------
    def sample_once(self) -> None:
        """Read every source once and record what it gave. Raises the first reader's error (tests)."""
        with self._lock:
            for d in self.domains.values():
                self._read(d)

    def _read(self, d: _Domain) -> None:
        samples = d.backend.read()
        d.ticks.append(samples)
        for s in samples:
            d.series.setdefault(s.gpu, EnergySeries()).add(s.t, s.power_w, s.energy_mj)

    def _safe_sample(self) -> None:
        with self._lock:
            for d in self.domains.values():
                if d.consecutive >= self.max_errors:
                    continue  # given up on this reader
                try:
                    self._read(d)
                except Exception as e:
                    d.errors += 1
                    d.consecutive += 1
                    if d.consecutive >= self.max_errors:
                        d.stopped_reason = f"{d.consecutive} consecutive errors, last: {type(e).__name__}: {e}"
                        print(f"mcpworld: warning: {d.name} energy sampling stopped: {d.stopped_reason}", file=sys.stderr)
                else:
                    d.consecutive = 0

    # -- the ledger -------------------------------------------------------------------------------
    def episode(self, csv_path: Path | None = None) -> EpisodeEnergy:
        """Open an episode's span now; ``with`` it around the work so its LLM calls are metered."""
        with self._lock:
            span = Interval(next(self._ids), 0, self.clock())
            span.owner = span.key
            self._episodes.append(span)
            if self.ledger:
                self.ledger.started(span, call=False)
        return EpisodeEnergy(self, span, csv_path)

    def _open_call(self, episode: Interval) -> Interval:
        with self._lock:
            call = Interval(next(self._ids), episode.key, self.clock())
            self._calls.append(call)
            if self.ledger:
                self.ledger.started(call, call=True)
            return call

    def _end(self, span: Interval) -> None:
        with self._lock:
            if span.end == OPEN:
                span.end = self.clock()
                if self.ledger:
                    self.ledger.ended(span)

    def shares(self, domain: str, a: float, b: float) -> tuple[Shares, float, float] | None:
        """Shares of one domain's energy in [a, b] clipped to its samples, and the clipped window;
        None when the samples miss the window altogether."""
        with self._lock:
            d = self.domains[domain]
            span = d.span()
            lo, hi = (max(a, span[0]), min(b, span[1])) if span else (a, a - 1)
            if hi < lo:
                return None
            calls, episodes = self.ledger.others() if self.ledger else ([], [])
            return attribute(lo, hi, d.sample_times(), d.energy_at, [*self._calls, *calls], [*self._episodes, *episodes]), lo, hi

    # -- job figures ------------------------------------------------------------------------------
    def job_metrics(self) -> dict[str, float]:
        """The job's integrated energy per domain (``gpu.job_energy_j``, …); final after ``close()``."""
        if self._job is not None:
            return dict(self._job)
        with self._lock:
            return self._job_metrics()

    def _job_metrics(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, d in self.domains.items():
            span = d.span()
            out[f"{name}.samples"] = float(len(d.ticks))
            out[f"{name}.sampling_errors"] = float(d.errors)
            if span is None:
                continue
            begin = span[0] if self.begin_t is None else self.begin_t  # (no start(): from the first sample)
            got = self.shares(name, begin, span[1])
            if got is None:
                continue
            shares, a, b = got
            total = d.energy_at(b) - d.energy_at(a)
            out[f"{name}.job_energy_j"] = total
            out[f"{name}.job_s"] = b - a
            out[f"{name}.energy_outside_episodes_j"] = shares.outside_j
            if self.ledger:  # what other jobs' calls and episodes on this host took of the span
                mine = {c.key for c in self._calls} | {e.key for e in self._episodes}
                out[f"{name}.energy_other_jobs_j"] = sum(
                    v for part in (shares.call_j, shares.rest_j) for k, v in part.items() if k not in mine
                )
            out[f"{name}.counter_fallbacks"] = float(sum(s.rejected for s in d.series.values()))
            if name in self.idle_w:
                out[f"{name}.power_w_idle"] = self.idle_w[name]
                out[f"{name}.job_energy_net_j"] = total - self.idle_w[name] * (b - a)
        return out

    def _write_csv(self, path: Path, a: float | None, b: float | None) -> None:
        d = self.domains.get("gpu")
        if d is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(CSV_COLUMNS)
            for tick in d.ticks:
                for s in tick:
                    if (a is None or s.t >= a) and (b is None or s.t <= b):
                        writer.writerow(
                            [
                                repr(s.t),
                                s.gpu,
                                s.util_pct,
                                s.mem_mb,
                                s.temp_c,
                                s.power_w,
                                "" if s.energy_mj is None else s.energy_mj,
                            ]
                        )


class EpisodeEnergy:
    """One episode's span in the meter. ``with`` it while the episode works, ``finish(result)`` at the end."""

    def __init__(self, meter: EnergyMeter, span: Interval, csv_path: Path | None):
        self.meter = meter
        self.span = span
        self.csv_path = csv_path
        self.calls: list[tuple[Interval, bool]] = []  # each call and whether it gave a reply
        self._token: Any = None

    def __enter__(self) -> Self:
        self._token = CURRENT.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        CURRENT.reset(self._token)

    @contextmanager
    def call(self) -> Iterator[None]:
        """Around one LLM request: its window is an active call for the sharing rule."""
        span = self.meter._open_call(self.span)
        ok = False
        try:
            yield
            ok = True
        finally:
            self.meter._end(span)
            self.calls.append((span, ok))

    def finish(self, result: EpisodeResult | None = None) -> dict[str, float]:
        """End the span, take a sample now, and share out the episode's energy; fills ``result``."""
        meter = self.meter
        meter._end(self.span)
        for span, _ in self.calls:
            meter._end(span)
        if meter.running:
            meter._safe_sample()
        metrics: dict[str, float] = {}
        per_call: dict[int, float] = {}
        tokens_out = result.tokens_out if result is not None else 0
        for name in meter.domains:
            got = meter.shares(name, self.span.start, self.span.end)
            if got is None:
                continue
            shares, a, b = got
            mine = [c.key for c, _ in self.calls]
            llm_j = sum((shares.call_j.get(k, 0.0) for k in mine), 0.0)
            rest_j = shares.rest_j.get(self.span.key, 0.0)
            seconds = sum(shares.call_s.get(k, 0.0) for k in mine) + shares.rest_s.get(self.span.key, 0.0)
            gross = llm_j + rest_j
            metrics.update({f"{name}.energy_j": gross, f"{name}.energy_llm_j": llm_j, f"{name}.energy_rest_j": rest_j})
            if name in meter.idle_w:
                metrics[f"{name}.power_w_idle"] = meter.idle_w[name]
                metrics[f"{name}.energy_net_j"] = gross - meter.idle_w[name] * seconds
            uncovered = (a - self.span.start) + (self.span.end - b)
            if uncovered > 1e-9:
                metrics[f"{name}.uncovered_s"] = uncovered
            if tokens_out and gross > 0:
                metrics[f"{name}.j_per_1k_tokens_out"] = gross / tokens_out * 1000
                metrics[f"{name}.tokens_out_per_j"] = tokens_out / gross
            if name == "gpu":
                per_call = {k: shares.call_j[k] for k in mine if k in shares.call_j}
        metrics.update(self._gpu_stats())
        if result is not None:
            result.gpu = metrics
            result.llm_energy_j = [per_call.get(c.key) for c, ok in self.calls if ok] if "gpu" in meter.domains else []
            result.llm_call_windows = [
                [round(c.start + meter.wall_offset, 4), round(c.end + meter.wall_offset, 4)] for c, ok in self.calls if ok
            ]
        if self.csv_path is not None and "gpu" in meter.domains:
            with meter._lock:
                meter._write_csv(self.csv_path, self.span.start, self.span.end)
        return metrics

    def _gpu_stats(self) -> dict[str, float]:
        """The whole GPUs' power, utilisation, memory and temperature while the episode ran (not shared)."""
        d = self.meter.domains.get("gpu")
        if d is None:
            return {}
        with self.meter._lock:
            ticks = [t for t in d.ticks if t and self.span.start <= t[0].t <= self.span.end]
        out: dict[str, float] = {"gpu.samples": float(len(ticks))}
        if not ticks:
            return out
        power = [sum(s.power_w for s in tick) for tick in ticks]
        every = [s for tick in ticks for s in tick]
        out.update(
            {
                "gpu.power_w_mean": sum(power) / len(power),
                "gpu.power_w_max": max(power),
                "gpu.util_mean": sum(s.util_pct for s in every) / len(every),
                "gpu.mem_peak_mb": max(sum(s.mem_mb for s in tick) for tick in ticks),
                "gpu.temp_max_c": max(s.temp_c for s in every),
            }
        )
        return out
