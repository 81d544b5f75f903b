"""OSWorld's own figure beside ours (``python -m mcpworld.report --osworld``, report/osworld.py): per domain,
per category and overall, as OSWorld's show_result.py computes it, from fixture episodes whose numbers are
worked out by hand below."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import pytest
import yaml

from mcpworld.core.errors import UserError
from mcpworld.core.result import EpisodeResult, Status
from mcpworld.report.tables import main

# the suite's task list, as OSWorld's evaluation_examples/test_all.json lays it out: {domain: [ids]}
TEST_ALL = {
    "chrome": ["c1", "c2"],
    "gimp": ["g1"],
    "libreoffice_calc": ["lc1"],
    "libreoffice_impress": ["li1"],
    "libreoffice_writer": ["lw1"],
    "multi_apps": ["m1"],
    "os": ["o1", "o2"],
}

# job -> (max_steps, [(task, attempt, status, score, final_action)])
JOBS = {
    "0": (
        15,
        [
            ("c1", 0, "success", 1.0, "DONE"),
            ("c2", 0, "failure", 0.0, "DONE"),
            ("o1", 0, "success", 1.0, "FAIL"),  # an infeasible task answered FAIL: scores 1, counted as any task
            ("o2", 0, "failure", 0.5, "DONE"),  # partial credit: OSWorld counts 0.5, we count no success
            ("m1", 0, "infra_error", 0.0, None),  # never judged: no result.txt in OSWorld, in neither rate
            ("lc1", 0, "success", 1.0, "DONE"),
            ("li1", 0, "failure", 0.25, "DONE"),
            ("lw1", 0, "timeout", 0.0, None),
            ("x9", 0, "success", 1.0, "DONE"),  # not in test_all.json: left out of OSWorld's table
            # g1 never ran (e.g. skipped as unavailable here)
        ],
    ),
    "1": (
        50,
        [
            ("c1", 0, "success", 1.0, "DONE"),
            ("c1", 1, "interrupted", 0.0, None),
            ("c2", 0, "eval_error", 0.0, "DONE"),
        ],
    ),
}


def _write_suite(root: Path) -> Path:
    examples = root / "OSWorld" / "evaluation_examples" / "examples"
    for domain, ids in TEST_ALL.items():
        (examples / domain).mkdir(parents=True)
        for task in ids:
            (examples / domain / f"{task}.json").write_text(json.dumps({"id": task}))
    (examples.parent / "test_all.json").write_text(json.dumps(TEST_ALL))
    (examples.parent / "test_nogdrive.json").write_text(json.dumps({"chrome": ["c1", "c2"]}))
    return examples


def _config(max_steps: int, root: str) -> dict:
    return {
        "model": {"name": "qwen3vl_8b", "id": "Qwen/Qwen3-VL-8B-Instruct"},
        "resolution": {"name": "fhd", "width": 1920, "height": 1080},
        "modality": {"name": "gui", "tools": ["computer", "done"]},
        "agent": {"max_steps": max_steps},
        "tasks": {"root": root},
        "tracking": {"experiment": "osworld_verified"},
    }


def _result(task, attempt, status, score, final_action):
    return EpisodeResult(
        task_id=task,
        app="chrome" if task.startswith("c") else "os",
        attempt=attempt,
        status=Status(status),
        score=score,
        final_action=final_action,
        steps=5,
        termination="infra_error" if status == "infra_error" else "done",
        labels={"model": "qwen3vl_8b", "provider": "vllm", "resolution": "fhd", "modality": "gui", "env": "local"},
    )


@pytest.fixture
def sweep(tmp_path):
    """A sweep folder as `python -m mcpworld experiment=osworld_verified … -m` writes it, run from tmp_path with
    tasks.root=OSWorld/evaluation_examples/examples (relative: read from each job's hydra.runtime.cwd)."""
    _write_suite(tmp_path)
    root = tmp_path / "outputs" / "sweep"
    for job, (max_steps, episodes) in JOBS.items():
        job_dir = root / job
        (job_dir / ".hydra").mkdir(parents=True)
        (job_dir / ".hydra" / "hydra.yaml").write_text(yaml.safe_dump({"hydra": {"runtime": {"cwd": str(tmp_path)}}}))
        (job_dir / "resolved_config.yaml").write_text(yaml.safe_dump(_config(max_steps, "OSWorld/evaluation_examples/examples")))
        for task, attempt, status, score, final in episodes:
            folder = job_dir / "episodes" / task / str(attempt)
            folder.mkdir(parents=True)
            _result(task, attempt, status, score, final).write(folder / "result.json")
    return root


def _rows(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    with path.open(newline="") as f:
        return {(r["max_steps"], r["domain"]): r for r in csv.DictReader(f)}


def _num(value: str) -> float | None:
    return None if value == "" else float(value)


EXPECTED_15 = {  # domain: tasks, run, score, osworld_rate, successes, our_rate, not_judged, not_run, all_tasks_rate
    "chrome": (2, 2, 1.0, 0.5, 1, 0.5, 0, 0, 0.5),
    "gimp": (1, 0, 0.0, None, 0, None, 0, 1, 0.0),
    "libreoffice_calc": (1, 1, 1.0, 1.0, 1, 1.0, 0, 0, 1.0),
    "libreoffice_impress": (1, 1, 0.25, 0.25, 0, 0.0, 0, 0, 0.25),
    "libreoffice_writer": (1, 1, 0.0, 0.0, 0, 0.0, 0, 0, 0.0),
    "multi_apps": (1, 0, 0.0, None, 0, None, 1, 0, 0.0),
    "os": (2, 2, 1.5, 0.75, 1, 0.5, 0, 0, 0.75),
    # show_result.py's Office pools calc, impress and writer; Daily and Professional lack results for a domain
    "Office": (3, 3, 1.25, 1.25 / 3, 1, 1 / 3, 0, 0, 1.25 / 3),
    "overall": (9, 7, 3.75, 3.75 / 7, 3, 3 / 7, 1, 1, 3.75 / 9),
}
FIELDS = ("tasks", "run", "score", "osworld_rate", "successes", "our_rate", "not_judged", "not_run", "all_tasks_rate")


def test_osworld_figure_per_domain_category_and_overall(sweep, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["--dir", str(sweep), "--out", str(out)]) == 0  # on by itself: the configs name osworld_verified
    rows = _rows(out / "osworld.csv")
    assert [d for s, d in rows if s == "15"] == list(EXPECTED_15)  # the list's order, then categories, overall
    for domain, expected in EXPECTED_15.items():
        got = tuple(_num(rows["15", domain][f]) for f in FIELDS)
        assert got == pytest.approx(expected, nan_ok=False), domain
    assert {r["model"] for r in rows.values()} == {"qwen3vl_8b"}
    md = (out / "osworld.md").read_text()
    assert "| os | 2 | 2 | 1.50 | 75.00 % | 50.00 % | 0 | 0 | 75.00 % |" in md
    assert "| gimp | 1 | 0 | 0.00 | — | — | 0 | 1 | 0.00 % |" in md
    assert "| **overall** | 9 | 7 | 3.75 | 53.57 % | 42.86 % | 1 | 1 | 41.67 % |" in md
    assert "model=qwen3vl_8b · max_steps=15" in md and "model=qwen3vl_8b · max_steps=50" in md
    assert "Left out: 1 episode(s) of 1 task(s) not in" in md and "(x9)" in md
    assert md.strip() in capsys.readouterr().out


def test_not_judged_episodes_are_in_neither_rate(sweep, tmp_path):
    out = tmp_path / "report"
    assert main(["--dir", str(sweep), "--out", str(out)]) == 0
    chrome, overall = _rows(out / "osworld.csv")["50", "chrome"], _rows(out / "osworld.csv")["50", "overall"]
    # c1: a success and an interrupted try; c2: its grader gave no verdict
    assert tuple(_num(chrome[f]) for f in FIELDS) == (2, 1, 1.0, 1.0, 1, 1.0, 2, 0, 0.5)
    assert tuple(_num(overall[f]) for f in FIELDS) == pytest.approx((9, 1, 1.0, 1.0, 1, 1.0, 2, 7, 1 / 9))
    with (out / "summary.csv").open(newline="") as f:  # our own table: grouped by model and step budget
        summary = {r["max_steps"]: r for r in csv.DictReader(f)}
    assert (summary["50"]["episodes"], summary["50"]["success_rate"], summary["50"]["eval_errors"]) == ("1", "1.0", "1")
    assert summary["50"]["interrupted"] == "1" and summary["15"]["interrupted"] == ""
    # x9 is ours (not OSWorld's list): 4 successes of 8 judged; the infra error is only counted
    assert (summary["15"]["episodes"], summary["15"]["successes"], summary["15"]["infra_errors"]) == ("8", "4", "1")


def test_a_task_list_given_and_a_list_not_found(sweep, tmp_path, capsys):
    out = tmp_path / "report"
    nogdrive = tmp_path / "OSWorld" / "evaluation_examples" / "test_nogdrive.json"
    assert main(["--dir", str(sweep), "--out", str(out), "--osworld-tasks", str(nogdrive)]) == 0
    rows = _rows(out / "osworld.csv")
    assert [d for s, d in rows if s == "15"] == ["chrome", "overall"]
    assert tuple(_num(rows["15", "overall"][f]) for f in ("tasks", "run", "score", "not_judged")) == (2, 2, 1.0, 0)
    assert "Left out: 7 episode(s) of 7 task(s)" in (out / "osworld.md").read_text()
    # the runs' tasks.root no longer holds a list: the overall figure only, and how to give the list
    (tmp_path / "OSWorld" / "evaluation_examples" / "test_all.json").unlink()
    capsys.readouterr()
    assert main(["--dir", str(sweep), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "no test_all.json found by the runs' tasks.root" in text and "--osworld-tasks" in text
    rows = _rows(out / "osworld.csv")
    assert list(rows) == [("15", "overall"), ("50", "overall")]
    assert tuple(_num(rows["15", "overall"][f]) for f in FIELDS) == pytest.approx(
        (None, 8, 4.75, 4.75 / 8, 4, 0.5, 1, None, None)
    )  # x9 counts: without a list every task is the suite's


def test_the_table_is_asked_for_or_turned_off(sweep, tmp_path):
    out = tmp_path / "off"
    assert main(["--dir", str(sweep), "--out", str(out), "--no-osworld", "--group-by", "model"]) == 0
    assert not (out / "osworld.csv").exists() and (out / "summary.csv").exists()
    with pytest.raises(SystemExit):
        main(["--dir", str(sweep), "--osworld-tasks"])
    from mcpworld.report.tables import parse_args, report

    with pytest.raises(UserError, match=r"no test_all\.json in it or the two folders above it"):
        report(parse_args(["--dir", str(sweep), "--out", str(out), "--osworld-tasks", str(tmp_path)]))
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(UserError, match=r"expected OSWorld's task list"):
        report(parse_args(["--dir", str(sweep), "--out", str(out), "--osworld-tasks", str(bad)]))


def test_mlflow_runs_of_the_preset_get_the_table_by_the_job_config(tmp_path):
    """From MLflow: experiment=osworld_verified turns the table on, and the job run's config.yaml artifact
    (tasks.root) finds the task list."""
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    examples = _write_suite(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("osworld_verified", artifact_location=(tmp_path / "artifacts").as_uri())
    now = int(time.time() * 1000)
    for job, (max_steps, episodes) in JOBS.items():
        run = client.create_run(exp, run_name=f"job {job}", tags={"mcpworld.level": "job"})
        config = tmp_path / f"job{job}" / "config.yaml"
        config.parent.mkdir()
        config.write_text(yaml.safe_dump(_config(max_steps, str(examples))))
        client.log_artifact(run.info.run_id, str(config))
        client.set_terminated(run.info.run_id)
        for task, attempt, status, score, final in episodes:
            result = _result(task, attempt, status, score, final)
            ep = client.create_run(
                exp,
                run_name=f"{task}#{attempt}",
                tags={"mlflow.parentRunId": run.info.run_id, "mcpworld.level": "episode", "task_id": task, "status": status},
            )
            params = {
                "model": "qwen3vl_8b",
                "max_steps": str(max_steps),
                "task": task,
                "attempt": str(attempt),
                "app": result.app,
                "resolution": "fhd",
                "modality": "gui",
            }
            client.log_batch(
                ep.info.run_id,
                metrics=[Metric(k, float(v), now, 0) for k, v in result.numbers().items()],
                params=[Param(k, v) for k, v in params.items()],
            )
            client.set_terminated(ep.info.run_id)
    out = tmp_path / "report"
    assert main(["experiment=osworld_verified", "--tracking-uri", uri, "--out", str(out)]) == 0
    rows = _rows(out / "osworld.csv")
    for domain, expected in EXPECTED_15.items():
        assert tuple(_num(rows["15", domain][f]) for f in FIELDS) == pytest.approx(expected), domain
    assert tuple(_num(rows["50", "chrome"][f]) for f in FIELDS) == (2, 1, 1.0, 1.0, 1, 1.0, 2, 0, 0.5)
