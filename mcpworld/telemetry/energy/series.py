"""One device's cumulative energy over time, built from its samples (a GPU, or a CPU package).

Energy is built interval by interval between consecutive samples:

* the energy counter's difference (mJ) when both ends have a reading and the difference is plausible;
* otherwise the trapezoid of power over the interval. This covers devices without a counter and counter
  resets: a later reading smaller than an earlier one (or one implying more than ``MAX_PLAUSIBLE_W`` on
  average) is treated as a reset, and that one interval falls back to power. Such intervals are counted
  (``rejected``). A counter that wraps at a known range (RAPL) is unwrapped by its reader before this.

``at(t)`` interpolates the cumulative energy linearly between the samples around ``t``, so any window
gets the mean power of the intervals it cuts times its length in them.
"""

from __future__ import annotations

import bisect

MAX_PLAUSIBLE_W = 5000.0  # per device; a counter step implying more is a glitch, not energy


def interval_energy(dt: float, power_a: float, power_b: float, mj_a: float | None, mj_b: float | None) -> tuple[float, bool]:
    """Joules between two samples of one device, and whether a present counter had to be rejected."""
    rejected = False
    if mj_a is not None and mj_b is not None:
        diff_j = (mj_b - mj_a) / 1000.0
        if diff_j == 0 or (diff_j > 0 and dt > 0 and diff_j / dt <= MAX_PLAUSIBLE_W):
            return diff_j, False
        rejected = True  # decrease (reset) or an absurd jump: this interval from power
    return max(0.0, (power_a + power_b) / 2.0 * dt), rejected


class EnergySeries:
    """Times (our clock) and the cumulative joules at each; not thread-safe (the meter holds a lock)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.cum_j: list[float] = []
        self.counter_all = True  # every sample had a counter reading
        self.rejected = 0  # intervals where a present counter was rejected
        self._last: tuple[float, float, float | None] | None = None  # t, power_w, energy_mj

    def add(self, t: float, power_w: float, energy_mj: float | None) -> None:
        if self._last is not None and t <= self._last[0]:
            return  # a sample no newer than the last one (two readers raced): nothing to add
        self.counter_all = self.counter_all and energy_mj is not None
        joules = 0.0
        if self._last is not None:
            t0, p0, e0 = self._last
            joules, rejected = interval_energy(t - t0, p0, power_w, e0, energy_mj)
            self.rejected += rejected
        self.times.append(t)
        self.cum_j.append((self.cum_j[-1] if self.cum_j else 0.0) + joules)
        self._last = (t, power_w, energy_mj)

    def covers(self, t: float) -> bool:
        return bool(self.times) and self.times[0] <= t <= self.times[-1]

    def at(self, t: float) -> float:
        """Cumulative joules at ``t``, linearly interpolated; clamped to the ends outside the samples."""
        if not self.times or t <= self.times[0]:
            return 0.0
        i = bisect.bisect_right(self.times, t)
        if i >= len(self.times):
            return self.cum_j[-1]
        t_a, t_b = self.times[i - 1], self.times[i]
        e_a, e_b = self.cum_j[i - 1], self.cum_j[i]
        return e_a + (e_b - e_a) * (t - t_a) / (t_b - t_a)
