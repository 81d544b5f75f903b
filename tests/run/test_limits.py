"""Which bound an episode gets when the task and the run's agent config both set one."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from mcpworld.core.task import Task
from mcpworld.run.episode import episode_limits


def limits(task_steps, task_timeout, agent_steps, agent_timeout):
    cfg = SimpleNamespace(agent=SimpleNamespace(max_steps=agent_steps, timeout_s=agent_timeout))
    task = Task(
        id="a/b", app="a", instruction="x", dir=Path("."), source=Path("task.yaml"), max_steps=task_steps, timeout_s=task_timeout
    )
    return episode_limits(cfg, task)


@pytest.mark.parametrize(
    "task_steps,task_timeout,agent_steps,agent_timeout,expected",
    [
        (None, None, 30, 600.0, (30, 600.0)),  # the task says nothing: the run's bounds
        (15, 120, 30, 600.0, (15, 120.0)),  # the task asks for less: it gets less
        (15, 120, 30, 6.0, (15, 6.0)),  # agent.timeout_s=6 takes effect over the task's 120
        (50, 900, 30, 600.0, (30, 600.0)),  # a task cannot exceed the run's bounds
    ],
)
def test_the_tighter_bound_wins(task_steps, task_timeout, agent_steps, agent_timeout, expected):
    assert limits(task_steps, task_timeout, agent_steps, agent_timeout) == expected
