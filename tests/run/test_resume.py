"""Resume: which episodes of a job folder are kept, which are set aside and run again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpworld.core.errors import UserError
from mcpworld.core.result import EpisodeResult
from mcpworld.run import resume


def episode(job: Path, task: str, attempt: int, status: str | None) -> Path:
    folder = job / "episodes" / task / str(attempt)
    folder.mkdir(parents=True)
    (folder / "trace.jsonl").write_text('{"type": "episode_start"}\n')
    if status is not None:
        EpisodeResult(task_id=task, app="a", attempt=attempt, status=status).write(folder / "result.json")
    return folder


KEYS = [("a/x", 0), ("a/y", 0), ("a/z", 0), ("a/w", 0), ("a/x", 1)]


def test_a_new_folder_runs_everything_and_records_the_hash(tmp_path):
    plan = resume.plan(tmp_path, "h1", True, KEYS)
    assert plan.done == {} and plan.set_aside == []
    assert json.loads((tmp_path / resume.JOB_FILE).read_text()) == {"config_hash": "h1"}


def test_finished_episodes_are_kept_unfinished_ones_set_aside(tmp_path):
    resume.plan(tmp_path, "h1", True, KEYS)
    episode(tmp_path, "a/x", 0, "success")
    episode(tmp_path, "a/y", 0, "failure")
    episode(tmp_path, "a/z", 0, "infra_error")
    episode(tmp_path, "a/w", 0, "interrupted")
    episode(tmp_path, "a/v", 0, "eval_error")  # the grader gave no verdict: run again once it is fixed
    episode(tmp_path, "a/x", 1, None)  # a killed process left no result

    plan = resume.plan(tmp_path, "h1", True, [*KEYS, ("a/v", 0)])

    assert sorted(plan.done) == [("a/x", 0), ("a/y", 0)]
    assert plan.done[("a/y", 0)].status == "failure"
    names = sorted(p.name for p in plan.set_aside)
    assert names == ["0.eval_error1", "0.infra_error1", "0.interrupted1", "1.incomplete1"]
    for p in plan.set_aside:  # kept for inspection, out of the way of the new try
        assert (p / "trace.jsonl").is_file() and not p.with_name(p.name.split(".")[0]).exists()
    assert "2 episode(s) already finished" in plan.describe(3)


def test_a_second_interrupted_try_gets_the_next_name(tmp_path):
    resume.plan(tmp_path, "h1", True, KEYS)
    episode(tmp_path, "a/z", 0, "interrupted")
    resume.plan(tmp_path, "h1", True, KEYS)
    episode(tmp_path, "a/z", 0, "interrupted")
    plan = resume.plan(tmp_path, "h1", True, KEYS)
    assert [p.name for p in plan.set_aside] == ["0.interrupted2"]
    assert (tmp_path / "episodes" / "a/z" / "0.interrupted1").is_dir()


def test_another_config_in_the_same_folder_is_refused(tmp_path):
    resume.plan(tmp_path, "h1", True, KEYS)
    episode(tmp_path, "a/x", 0, "success")
    with pytest.raises(UserError, match=r"different config.*resume=false"):
        resume.plan(tmp_path, "h2", True, KEYS)


def test_resume_false_starts_over_and_keeps_the_old_episodes(tmp_path):
    resume.plan(tmp_path, "h1", True, KEYS)
    episode(tmp_path, "a/x", 0, "success")
    plan = resume.plan(tmp_path, "h2", False, KEYS)
    assert plan.done == {}
    (old,) = plan.set_aside
    assert old.name.startswith("episodes.before-") and (old / "a/x/0/result.json").is_file()
    assert not (tmp_path / "episodes").exists()
    assert json.loads((tmp_path / resume.JOB_FILE).read_text())["config_hash"] == "h2"


def test_episodes_from_before_resume_existed_are_set_aside_not_appended_to(tmp_path):
    episode(tmp_path, "a/x", 0, "success")  # no job.json: which config made it is unknown
    plan = resume.plan(tmp_path, "h1", True, KEYS)
    assert plan.done == {} and len(plan.set_aside) == 1


def test_the_hash_ignores_run_mechanics_and_secrets_but_not_the_experiment():
    base = {"model": {"name": "m"}, "provider": {"api_key": "k1"}, "concurrency": 1, "attempts": 1, "resume": True}
    same = {**base, "provider": {"api_key": "k2"}, "concurrency": 4, "attempts": 3, "resume": False}
    other = {**base, "model": {"name": "n"}}
    assert resume.job_hash(base) == resume.job_hash(same) != resume.job_hash(other)
