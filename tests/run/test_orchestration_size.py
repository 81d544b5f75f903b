"""The run layer's two orchestrators stay short enough to read at a glance (issue 40's "done when"):
an episode's attempt builds, runs and judges its agent and leaves the status to run/status.py; a job's
episodes are planned, started, run and closed by functions of their own."""

from __future__ import annotations

import inspect

import pytest

from mcpworld.run import episode, job

MAX_LINES = 50


@pytest.mark.parametrize("function", [episode._attempt, job._run_episodes], ids=lambda f: f.__name__)
def test_an_orchestrator_is_under_50_lines(function):
    lines = len(inspect.getsource(function).splitlines())
    assert lines < MAX_LINES, f"{function.__module__}.{function.__name__} is {lines} lines: give a step a function of its own"
