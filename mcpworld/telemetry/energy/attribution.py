"""Sharing measured energy between the LLM calls and episodes that ran at the same time.

The rule (the same for GPU and CPU energy): cut the time line at every sample and at every call's and
episode's start and end. Within one piece the set of active calls is constant, and its energy (the
cumulative energy interpolated at both ends) goes

* in equal parts to the LLM calls active in it, of any episode (two calls served at once each get half);
* when no call is active, in equal parts to the episodes running then (their "rest": setup, tools,
  grading, a model idling between turns);
* when no episode runs either, to the job's "outside" (desktops starting, results being written).

Every joule of the window lands in exactly one bucket, so the episodes' energies plus the outside add
up to the job's integrated energy however the episodes overlap. Time is shared by the same rule, which
is what makes a net energy (gross minus idle power times the shared seconds) add up as well.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

OPEN = math.inf  # the end of a call or episode that has not ended yet


@dataclass
class Interval:
    key: int  # the call's or episode's id
    owner: int  # the episode a call belongs to (an episode owns itself)
    start: float
    end: float = OPEN


@dataclass
class Shares:
    call_j: dict[int, float] = field(default_factory=dict)
    call_s: dict[int, float] = field(default_factory=dict)
    rest_j: dict[int, float] = field(default_factory=dict)  # per episode
    rest_s: dict[int, float] = field(default_factory=dict)
    outside_j: float = 0.0
    outside_s: float = 0.0

    @property
    def total_j(self) -> float:
        return sum(self.call_j.values()) + sum(self.rest_j.values()) + self.outside_j


def attribute(
    a: float,
    b: float,
    sample_times: Iterable[float],
    energy_at: Callable[[float], float],
    calls: list[Interval],
    episodes: list[Interval],
) -> Shares:
    """Shares of the energy between ``a`` and ``b``; ``energy_at(t)`` is the cumulative energy (J)."""
    out = Shares()
    if b <= a:
        return out
    calls = [c for c in calls if c.start < b and c.end > a]
    episodes = [e for e in episodes if e.start < b and e.end > a]
    spans = [(c, True) for c in calls] + [(e, False) for e in episodes]
    events = sorted(
        [(s.start, 0, i) for i, (s, _) in enumerate(spans) if s.start > a]
        + [(s.end, 1, i) for i, (s, _) in enumerate(spans) if s.end < b]
    )
    cuts = sorted({a, b, *(t for t in sample_times if a < t < b), *(t for t, _, _ in events)})
    active_calls = {i for i, (s, is_call) in enumerate(spans) if is_call and s.start <= a}
    active_eps = {i for i, (s, is_call) in enumerate(spans) if not is_call and s.start <= a}
    nxt = 0
    e_u = energy_at(a)
    for u, v in itertools.pairwise(cuts):
        while nxt < len(events) and events[nxt][0] <= u:
            _, kind, i = events[nxt]
            target = active_calls if spans[i][1] else active_eps
            (target.add if kind == 0 else target.discard)(i)
            nxt += 1
        e_v = energy_at(v)
        joules, seconds = e_v - e_u, v - u
        e_u = e_v
        if active_calls:
            _share(out.call_j, out.call_s, [spans[i][0].key for i in active_calls], joules, seconds)
        elif active_eps:
            _share(out.rest_j, out.rest_s, [spans[i][0].key for i in active_eps], joules, seconds)
        else:
            out.outside_j += joules
            out.outside_s += seconds
    return out


def _share(joules_by: dict[int, float], seconds_by: dict[int, float], keys: list[int], joules: float, seconds: float) -> None:
    n = len(keys)
    for k in keys:
        joules_by[k] = joules_by.get(k, 0.0) + joules / n
        seconds_by[k] = seconds_by.get(k, 0.0) + seconds / n
