"""A task's certificate from its episodes' outcomes: pass counts per mode, the flake rate, the
oracle's durations, and the one status that sums them up."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from enum import StrEnum


class Verdict(StrEnum):
    certified = "certified"  # the oracle always passes; doing nothing and the spoiled oracle always fail
    flaky = "flaky"  # an outcome differs between repeats, or some episode gave no verdict even when retried
    unsolved = "unsolved"  # the oracle never passes
    lenient = "lenient"  # doing nothing, or the nearly right answer, passes every time
    excluded = "excluded"  # it cannot run here (its skip reason, no solution, no verdict from any oracle episode)


@dataclass
class ModeOutcome:
    """One mode's judged episodes of one task, and why others gave no verdict."""

    passed: int = 0
    judged: int = 0
    durations_s: list[float] = field(default_factory=list)  # of the judged episodes
    unjudged: list[str] = field(default_factory=list)  # "infra_error: …" per episode without a verdict

    @property
    def mixed(self) -> bool:
        return 0 < self.passed < self.judged

    @property
    def always_passed(self) -> bool:
        return self.judged > 0 and self.passed == self.judged

    @property
    def flakes(self) -> int:
        """Episodes that disagree with the mode's majority outcome."""
        return min(self.passed, self.judged - self.passed)

    def cell(self) -> str:
        return f"{self.passed}/{self.judged}" if self.judged or self.unjudged else "—"


@dataclass
class TaskCertificate:
    task_id: str
    app: str
    status: Verdict
    spoil: str  # declared (the solution's spoil: steps), generic (last state-changing step left out), none
    oracle: ModeOutcome = field(default_factory=ModeOutcome)
    noop: ModeOutcome = field(default_factory=ModeOutcome)
    spoiled: ModeOutcome = field(default_factory=ModeOutcome)
    note: str = ""

    @property
    def flake_rate(self) -> float | None:
        modes = (self.oracle, self.noop, self.spoiled)
        judged = sum(m.judged for m in modes)
        return sum(m.flakes for m in modes) / judged if judged else None

    @property
    def median_s(self) -> float | None:
        return statistics.median(self.oracle.durations_s) if self.oracle.durations_s else None

    @property
    def p90_s(self) -> float | None:
        """Nearest rank: a duration some oracle episode took (with N=2, the slower one)."""
        values = sorted(self.oracle.durations_s)
        return values[math.ceil(0.9 * len(values)) - 1] if values else None


def grouped(reasons: list[str]) -> list[str]:
    """Each distinct reason once, with how many episodes gave it ("… (×2)")."""
    return [f"{why} (×{reasons.count(why)})" if reasons.count(why) > 1 else why for why in dict.fromkeys(reasons)]


def excluded(task_id: str, app: str, cause: str) -> TaskCertificate:
    return TaskCertificate(task_id, app, Verdict.excluded, spoil="", note=cause)


def judge(task_id: str, app: str, spoil: str, oracle: ModeOutcome, noop: ModeOutcome, spoiled: ModeOutcome) -> TaskCertificate:
    """The status, worst first: no oracle verdict at all (excluded), the oracle never passes (unsolved),
    a run that must fail passes every repeat (lenient), any outcome that differs between repeats or any
    episode left without a verdict (flaky), else certified."""
    cert = TaskCertificate(task_id, app, Verdict.certified, spoil, oracle, noop, spoiled)
    unjudged = grouped(
        [f"{name}: {why}" for name, mode in (("oracle", oracle), ("noop", noop), ("spoiled", spoiled)) for why in mode.unjudged]
    )
    if oracle.judged == 0:
        cert.status = Verdict.excluded
        cert.note = "no oracle episode gave a verdict, even when run again: " + "; ".join(unjudged)
    elif oracle.passed == 0:
        cert.status = Verdict.unsolved
        cert.note = "the oracle never passes"
    elif noop.always_passed or spoiled.always_passed:
        cert.status = Verdict.lenient
        cert.note = " and ".join(
            f"{what} passes" for what, mode in (("doing nothing", noop), ("the spoiled oracle", spoiled)) if mode.always_passed
        )
    elif oracle.mixed or noop.mixed or spoiled.mixed or unjudged:
        cert.status = Verdict.flaky
        differs = [name for name, mode in (("oracle", oracle), ("noop", noop), ("spoiled", spoiled)) if mode.mixed]
        cert.note = "; ".join(
            ([f"outcomes differ between repeats ({', '.join(differs)})"] if differs else [])
            + ([f"no verdict, even when run again: {'; '.join(unjudged)}"] if unjudged else [])
        )
    if spoil == "none" and cert.status != Verdict.excluded:
        extra = "no spoiled run: the solution has no state-changing step and declares no spoil"
        cert.note = f"{cert.note}; {extra}" if cert.note else extra
    return cert
