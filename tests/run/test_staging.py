"""env.stage without a desktop: a worker stages its next episode on its second desktop while one
runs (run/pool.py), a staged reset serves its own episode only (Environment.begin), and what a run
that stops never began is ended and leaves no folder (run/staging.py)."""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from mcpworld.core.errors import UserError
from mcpworld.core.task import Task
from mcpworld.mcp.servers import hosted
from mcpworld.run.interrupt import StopSignal
from mcpworld.run.pool import EpisodePool
from mcpworld.run.staging import EpisodeStaging, check_stage, episode_folder, stageable
from tests.helpers.environments import DirEnvironment


class Desk(DirEnvironment):
    """Resets and screens recorded; ``screen`` is what a screenshot shows now."""

    def __init__(self, root: Path, name: str, reset_s: float = 0.0, fail: bool = False):
        super().__init__(root / name)
        self.name, self.reset_s, self.fail = name, reset_s, fail
        self.resets: list[tuple[str, Path]] = []
        self.ended = 0
        self.settles = 0
        self.screen = Image.new("RGB", (4, 4), "white")

    def reset(self, task: Task, episode_dir: Path) -> None:
        time.sleep(self.reset_s)
        if self.fail:
            raise RuntimeError("no display")
        self.resets.append((task.id, Path(episode_dir)))
        (Path(episode_dir) / "logs").mkdir(parents=True, exist_ok=True)

    def end_episode(self) -> None:
        self.ended += 1

    def screenshot(self) -> Image.Image:
        return self.screen.copy()

    def settle(self, before: Image.Image | None = None) -> Image.Image:
        self.settles += 1
        return self.screen.copy()

    def close(self) -> None:
        pass


def task(name: str, **kw: Any) -> Task:
    return Task(id=name, app="xterm", instruction="-", dir=Path("/nonexistent"), source=Path("/nonexistent"), **kw)


def test_a_staged_reset_is_handed_over_to_its_own_episode_only(tmp_path):
    desk = Desk(tmp_path, "a")
    a, b = task("a"), task("b")
    desk.stage(a, tmp_path / "e/a/0")
    desk.begin(a, tmp_path / "e/a/0")
    assert desk.resets == [("a", tmp_path / "e/a/0")]  # handed over: not reset again
    assert desk.handover and desk.handover["stage_s"] >= 0 and desk.handover["ready_ahead_s"] >= 0

    for other_task, folder, extra in (
        (b, tmp_path / "e/a/0", {}),
        (a, tmp_path / "e/a/1", {}),
        (a, tmp_path / "e/a/0", {"SINK": "x"}),
    ):
        desk.stage(a, tmp_path / "e/a/0")
        desk.resets.clear()
        desk.begin(other_task, folder, extra)
        assert desk.resets == [(other_task.id, folder)], (other_task.id, folder, extra)  # reset anew
        assert desk.extra_env == extra  # the episode's variables, handed in (its reset gave them to the apps)
        assert desk.handover is None
        desk.begin(a, tmp_path / "e/a/0")  # … and what was staged is gone: it is never handed over later
        assert desk.handover is None


def test_the_first_observation_of_a_staged_desktop_is_the_screen_now_as_it_settled_when_staged(tmp_path):
    desk = Desk(tmp_path, "a")
    desk.stage(task("a"), tmp_path / "e")
    settled = desk.settles
    assert settled == 1  # staging ends once the screen settled
    desk.begin(task("a"), tmp_path / "e")
    desk.screen = Image.new("RGB", (4, 4), "black")  # (a caret blinked since)
    assert desk.first_observation().getpixel((0, 0)) == (0, 0, 0)  # the screen as it is now …
    assert desk.settles == settled  # … without settling again
    desk.first_observation()  # an episode's later first observation (an unstaged desktop) settles
    assert desk.settles == settled + 1
    desk.begin(task("a"), tmp_path / "e")  # nothing staged: reset now, and the first observation settles
    desk.first_observation()
    assert desk.settles == settled + 2


def test_each_worker_stages_its_next_episode_on_its_other_desktop_while_one_runs(tmp_path):
    desks = [Desk(tmp_path, n, reset_s=0.05) for n in ("a0", "a1", "b0", "b1")]
    runs = [(task(f"t{i}"), 0) for i in range(6)]
    staging = EpisodeStaging(tmp_path)
    overlap: list[bool] = []

    def run_one(env: Desk, run: tuple[Task, int]) -> str:
        env.begin(run[0], episode_folder(tmp_path, run[0].id, run[1]))
        other = desks[desks.index(env) ^ 1]
        time.sleep(0.1)  # the episode; its lane's other desktop resets meanwhile
        overlap.append(bool(other.resets) and other.resets[-1][0] != run[0].id)
        return f"{env.name}:{run[0].id}:{'handed' if env.handover else 'reset'}"

    results: list[str] = []
    EpisodePool(desks, run_one, StopSignal(), staging=staging).run(runs, results.append)
    assert sorted(r.split(":")[1] for r in results) == [f"t{i}" for i in range(6)]
    by_lane = {lane: [r for r in results if r.startswith(lane)] for lane in ("a", "b")}
    for done in by_lane.values():
        assert done[0].endswith(":reset"), done  # the lane's first episode: nothing was staged
        assert all(r.endswith(":handed") for r in done[1:]), done
        desks_used = [r.split(":")[0] for r in done]
        assert all(x != y for x, y in itertools.pairwise(desks_used)), desks_used  # alternating
    assert sum(overlap) >= 2  # the next reset ran while an episode ran
    assert all(len(d.resets) == len(set(d.resets)) for d in desks)  # each episode reset once


def test_a_failed_staging_leaves_the_reset_to_the_episode(tmp_path):
    desks = [Desk(tmp_path, "a"), Desk(tmp_path, "b", fail=True)]
    seen: list[str] = []

    def run_one(env: Desk, run: tuple[Task, int]) -> str:
        try:
            env.begin(run[0], episode_folder(tmp_path, run[0].id, 0))
        except RuntimeError:
            return "infra_error"
        return "handed" if env.handover else "reset"

    EpisodePool(desks, run_one, StopSignal(), staging=EpisodeStaging(tmp_path)).run(
        [(task("t0"), 0), (task("t1"), 0), (task("t2"), 0)], seen.append
    )
    assert seen == ["reset", "infra_error", "handed"]  # its own reset fails it again: its failure, reported


def test_a_stopped_run_ends_the_staged_desktop_and_leaves_no_folder_of_an_episode_that_never_began(tmp_path):
    desks = [Desk(tmp_path, "a"), Desk(tmp_path, "b")]
    stop = StopSignal()
    began: list[str] = []
    staged_first = threading.Event()

    def run_one(env: Desk, run: tuple[Task, int]) -> str:
        began.append(run[0].id)
        env.begin(run[0], episode_folder(tmp_path, run[0].id, 0))
        deadline = time.monotonic() + 5
        while not desks[1].resets and time.monotonic() < deadline:
            time.sleep(0.01)
        staged_first.set()
        stop.set("test")
        return run[0].id

    EpisodePool(desks, run_one, stop, staging=EpisodeStaging(tmp_path)).run(
        [(task("t0"), 0), (task("t1"), 0), (task("t2"), 0)], lambda r: None
    )
    assert staged_first.is_set() and began == ["t0"]
    assert desks[1].resets == [("t1", episode_folder(tmp_path, "t1", 0))]
    assert desks[1].ended >= 1  # withdrawn: its apps ended
    assert not episode_folder(tmp_path, "t1", 0).exists()  # it holds no episode: nothing left to resume from


def test_what_is_never_staged():
    assert stageable(task("a"))
    assert not stageable(task("a", stage=False))
    with pytest.raises(UserError, match=r"env\.stage=false"):
        check_stage("vm", False, "local", hosted=False)
    with pytest.raises(UserError, match=r"env\.mcp_sandbox=klavis"):
        check_stage("local", True, "klavis", hosted=True)
    check_stage("docker", True, "local", hosted=False)
    assert hosted("klavis") and not hosted("local")  # what the sandboxes declare
