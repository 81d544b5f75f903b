"""env.stage: each worker sets up its next episode whole (home, app, setup steps) on a second desktop
while the current one runs, so that episode's reset is a hand-over (``Environment.begin``).

What is never staged: a task that opts out (``stage: false``), one whose app hooks watch the episode
live (their probe's variables reach the app when it starts), and every task of a run whose MCP
sandboxes are leased per episode (a hosted sandbox, ``Sandbox.hosted``: its preprocess gets the lease's credentials). Those
reset at their episode's start, as without staging. A staged desktop serves its own episode only:
``begin`` compares the task and the folder, and resets anew on any difference.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from mcpworld.core.errors import UserError
from mcpworld.core.task import Task
from mcpworld.env.base import Environment

logger = logging.getLogger(__name__)


def episode_folder(out: Path, task_id: str, attempt: int) -> Path:
    """Where an episode's files go in its job's folder."""
    return out / "episodes" / task_id / str(attempt)


def check_stage(backend: str, stages: bool, mcp_sandbox: str, hosted: bool) -> None:
    """env.stage=true where it cannot hold: one line before any episode. ``stages``: the backend can set
    up a second desktop while one runs; ``hosted``: the MCP sandbox leases its servers per episode."""
    if not stages:
        raise UserError(
            f"env.stage=true: env={backend} cannot set up a second desktop while one runs "
            "(one VM per desktop slot); use env.stage=false"
        )
    if hosted:
        raise UserError(
            f"env.stage=true with env.mcp_sandbox={mcp_sandbox}: each episode's sandboxes are leased at its "
            "start and its preprocess needs their credentials; use env.stage=false"
        )


def stageable(task: Task) -> bool:
    """Whether ``task``'s reset may run ahead (see the module's docstring)."""
    if not task.stage:
        return False
    if task.handler:
        from mcpworld.probes.live import probe_for

        return probe_for(task.app, task.handler_setup) is None
    return True


class EpisodeStaging:
    """The job's ``Staging`` (run/pool.py): a run of (task, attempt) reset ahead in its episode's folder."""

    def __init__(self, out: Path):
        self.out = out

    def stage(self, env: Environment, run: tuple[Task, int]) -> None:
        task, attempt = run
        if not stageable(task):
            return
        try:
            env.stage(task, episode_folder(self.out, task.id, attempt))
        except Exception as exc:  # nothing staged: the episode resets at its start, and reports its own failure
            logger.warning("%s (attempt %d): staging its desktop failed; its reset runs at its start: %s", task.id, attempt, exc)

    def withdraw(self, env: Environment, run: tuple[Task, int]) -> None:
        try:
            folder = env.unstage()
        except Exception as exc:  # (its desktop goes with the environment's close)
            logger.info("ending a staged desktop: %s", exc)
            return
        # a folder that holds only what the staged reset wrote (its logs): the episode never began
        if folder is not None and folder.is_dir() and {p.name for p in folder.iterdir()} <= {"logs"}:
            shutil.rmtree(folder, ignore_errors=True)
