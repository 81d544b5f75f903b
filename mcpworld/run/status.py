"""An episode's status, decided from what happened and nothing else: pure rules, tested without a desktop.

Who failed is always right: the agent is blamed (``failure``, ``timeout``, ``agent_error``) only for
what the agent did. A desktop, an endpoint or a harness part that failed is ``infra_error`` (run again),
a grader that gave no verdict ``eval_error``, a stopped run ``interrupted``; none of them counts
against the agent (core.result.NOT_JUDGED).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from mcpworld.core.errors import EndpointUnreachable, Unwatchable, UserError
from mcpworld.core.result import Status, Termination
from mcpworld.run.interrupt import EpisodeInterrupted

# how the agent's run ended when the harness, not the agent, ended it: no verdict is asked for
NOT_THE_AGENTS = frozenset({Termination.infra_error, Termination.unwatchable, Termination.interrupted})


@dataclass(frozen=True)
class Outcome:
    """What decides a finished episode's status: how the agent's run ended, the grader's score (None:
    it gave no verdict, or was not asked), the score that passes, and whether an app the task works
    in was ended by a signal during the episode (a crash, an outside kill)."""

    termination: str
    score: float | None
    threshold: float
    killed: bool = False


def classify(outcome: Outcome) -> Status:
    """The status of an episode whose agent ran (its harness raised nothing)."""
    if outcome.termination == Termination.interrupted:
        return Status.interrupted
    if outcome.termination in NOT_THE_AGENTS:
        return Status.infra_error  # the desktop or an endpoint failed under the agent: never judged
    if outcome.score is None:
        return Status.eval_error  # the grader gave no verdict: not the agent failing, not to be retried
    if outcome.score >= outcome.threshold:
        return Status.success
    if outcome.killed:
        return Status.infra_error  # the app the agent worked in died by a signal: a failed verdict is not the agent's
    if outcome.termination == Termination.timeout:
        return Status.timeout
    if outcome.termination == Termination.agent_error:
        return Status.agent_error
    return Status.failure


def classify_error(exc: BaseException, stopping: bool) -> tuple[Status, Termination]:
    """The status and termination of an episode its harness ended with ``exc`` (``stopping``: the run is
    being stopped, so a desktop killed under the episode is the stop's doing). Never the agent's."""
    if isinstance(exc, UserError | EndpointUnreachable):
        return Status.infra_error, Termination.infra_error  # every later episode would fail the same way
    if isinstance(exc, EpisodeInterrupted | asyncio.CancelledError | KeyboardInterrupt) or stopping:
        return Status.interrupted, Termination.interrupted
    if isinstance(exc, Unwatchable):
        return Status.infra_error, Termination.unwatchable  # every try repeats it: not retried
    return Status.infra_error, Termination.infra_error
