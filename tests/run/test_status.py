"""The status rules (run/status.py), case by case, without a desktop: who failed is always right. The agent is
blamed only for what it did; infra errors, a down endpoint, a grader that gives no verdict and a stopped
run never count against it."""

from __future__ import annotations

import asyncio

import pytest

from mcpworld.core.errors import EndpointUnreachable, EvalError, InfraError, Unwatchable, UserError
from mcpworld.core.result import NOT_JUDGED, Status, Termination
from mcpworld.run.interrupt import EpisodeInterrupted
from mcpworld.run.status import Outcome, classify, classify_error

T = Termination
AGENTS = {Status.success, Status.failure, Status.timeout, Status.agent_error}

# (termination, score, killed) -> status; the threshold is 1.0 throughout
FINISHED = [
    # the agent's own doing, judged
    (T.done, 1.0, False, Status.success),
    (T.done, 0.0, False, Status.failure),
    (T.done, 0.99, False, Status.failure),
    (T.infeasible, 0.0, False, Status.failure),
    (T.infeasible, 1.0, False, Status.success),  # an infeasible task the agent called infeasible
    (T.end_turn, 0.0, False, Status.failure),
    (T.max_steps, 0.0, False, Status.failure),  # out of steps is a failure, as OSWorld counts it
    (T.max_llm_calls, 0.0, False, Status.failure),
    (T.loop, 0.0, False, Status.failure),
    (T.timeout, 0.0, False, Status.timeout),
    (T.timeout, 1.0, False, Status.success),  # the desktop was right when the time ran out
    (T.agent_error, 0.0, False, Status.agent_error),
    (T.agent_error, 1.0, False, Status.success),
    # the harness ended the agent's run: never judged, never the agent's, whatever a score says
    (T.infra_error, None, False, Status.infra_error),
    (T.infra_error, 1.0, False, Status.infra_error),
    (T.infra_error, 0.0, True, Status.infra_error),
    (T.unwatchable, None, False, Status.infra_error),
    (T.interrupted, None, False, Status.interrupted),
    (T.interrupted, 0.0, True, Status.interrupted),
    # the grader gave no verdict: eval_error, whatever the agent did and whatever died
    (T.done, None, False, Status.eval_error),
    (T.timeout, None, False, Status.eval_error),
    (T.agent_error, None, False, Status.eval_error),
    (T.max_steps, None, True, Status.eval_error),
    # the app the agent worked in was killed by a signal: a failed verdict is not the agent's
    (T.done, 0.0, True, Status.infra_error),
    (T.timeout, 0.0, True, Status.infra_error),
    (T.agent_error, 0.0, True, Status.infra_error),
    (T.done, 1.0, True, Status.success),  # … but a passing verdict stands
]


@pytest.mark.parametrize(("termination", "score", "killed", "status"), FINISHED)
def test_a_finished_episodes_status(termination: Termination, score: float | None, killed: bool, status: Status):
    assert classify(Outcome(termination, score, threshold=1.0, killed=killed)) == status


def test_the_threshold_decides_success_and_a_plain_string_termination_reads_the_same():
    assert classify(Outcome("done", 0.5, threshold=0.5)) == Status.success  # result.json's strings
    assert classify(Outcome("done", 0.49, threshold=0.5)) == Status.failure
    assert classify(Outcome("timeout", 0.0, threshold=0.5)) == Status.timeout


# (the exception the harness ended the episode with, the run stopping) -> (status, termination)
ERRORS = [
    (UserError("a task's bad key"), False, Status.infra_error, T.infra_error),
    (EndpointUnreachable("the model server is down"), False, Status.infra_error, T.infra_error),
    (EndpointUnreachable("the model server is down"), True, Status.infra_error, T.infra_error),
    (InfraError("the display died"), False, Status.infra_error, T.infra_error),
    (RuntimeError("a harness bug"), False, Status.infra_error, T.infra_error),
    (EvalError("the handler crashed"), False, Status.infra_error, T.infra_error),  # raised outside judging
    (Unwatchable("the probe cannot watch this build"), False, Status.infra_error, T.unwatchable),
    (EpisodeInterrupted(), False, Status.interrupted, T.interrupted),
    (KeyboardInterrupt(), False, Status.interrupted, T.interrupted),
    (asyncio.CancelledError(), False, Status.interrupted, T.interrupted),
    (RuntimeError("the desktop was killed under it"), True, Status.interrupted, T.interrupted),
    (InfraError("the display died"), True, Status.interrupted, T.interrupted),
]


@pytest.mark.parametrize(("exc", "stopping", "status", "termination"), ERRORS)
def test_an_episode_its_harness_ended(exc: BaseException, stopping: bool, status: Status, termination: Termination):
    assert classify_error(exc, stopping) == (status, termination)


def test_no_harness_failure_is_ever_the_agents():
    assert all(classify_error(exc, stopping)[0] in NOT_JUDGED for exc, stopping, _, _ in ERRORS)
    harness = {T.infra_error, T.unwatchable, T.interrupted}
    for termination in harness:
        for score in (None, 0.0, 1.0):
            for killed in (False, True):
                assert classify(Outcome(termination, score, 1.0, killed)) in NOT_JUDGED
    for termination in set(Termination) - harness:
        assert classify(Outcome(termination, None, 1.0)) == Status.eval_error
        assert classify(Outcome(termination, 0.0, 1.0, killed=True)) in NOT_JUDGED
        assert classify(Outcome(termination, 0.0, 1.0)) in AGENTS
