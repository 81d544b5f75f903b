"""``python -m mcpworld.report`` against a real sqlite MLflow store laid out the way our tracker writes it."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from mcpworld.core.errors import UserError
from mcpworld.report.tables import bootstrap_ci, main, pass_at_k, pass_hat_k

ROOT = Path(__file__).resolve().parents[1]
EXP = "paper"

# (resolution, task, app, attempt, status, energy J, ttft s)
EPISODES = [
    # square / calc: 4 of 4 succeed → rate 1, CI [1, 1]
    ("square", "t1", "calc", 0, "success", 100.0, 0.1),
    ("square", "t1", "calc", 1, "success", 100.0, 0.2),
    ("square", "t2", "calc", 0, "success", 100.0, 0.3),
    ("square", "t2", "calc", 1, "success", 100.0, 0.4),
    # square / writer: n=2, c=1 → pass@1 0.5, pass@2 1.0, pass^2 0.0
    ("square", "t3", "writer", 0, "success", 200.0, None),
    ("square", "t3", "writer", 1, "failure", 200.0, None),
    # rect / calc: 1 of 4 judged; the infra error is excluded from the rate and counted
    ("rect", "t1", "calc", 0, "success", None, None),
    ("rect", "t1", "calc", 1, "failure", None, None),
    ("rect", "t1", "calc", 2, "infra_error", None, None),
    ("rect", "t2", "calc", 0, "failure", None, None),
    ("rect", "t2", "calc", 1, "timeout", None, None),
    # rect / writer: 0 of 2; the grader that gave no verdict is excluded from the rate and counted apart
    ("rect", "t3", "writer", 0, "failure", None, None),
    ("rect", "t3", "writer", 1, "failure", None, None),
    ("rect", "t3", "writer", 2, "eval_error", None, None),
]


def _log(client, run_id, params=None, metrics=None):
    from mlflow.entities import Metric, Param

    now = int(time.time() * 1000)
    client.log_batch(
        run_id,
        metrics=[Metric(k, float(v), now, 0) for k, v in (metrics or {}).items()],
        params=[Param(k, str(v)) for k, v in (params or {}).items()],
    )


def _episode(client, exp_id, parent, model, resolution, task, app, attempt, status, energy=None, ttft=None, seed=True):
    labels = {"model": model, "provider": "vllm", "resolution": resolution, "modality": "gui", "env": "desktop"}
    if seed:
        labels["seed"] = "0"
    run = client.create_run(
        exp_id,
        run_name=f"{task}#{attempt}",
        tags={
            "mlflow.parentRunId": parent,
            "mcpworld.level": "episode",
            "task_id": task,
            "app": app,
            "modality": "gui",
            "status": status,
        },
    )
    success = status == "success"
    metrics = {
        "success": float(success),
        "score": float(success),
        "steps": 4 + attempt,
        "actions": 6 + attempt,
        "llm_calls": 4,
        "tokens_in": 1000,
        "tokens_out": 100,
        "duration_s": 12.5,
    }
    if status in ("infra_error", "eval_error"):  # huge numbers: they must not leak into the statistics
        metrics.update(steps=1000, actions=2000, tokens_in=10**7)
    else:
        metrics["keysteps.ratio"] = 1.0 if success else 0.5
    if energy is not None:
        metrics["gpu.energy_j"] = energy
    if ttft is not None:
        metrics["ttft_s_mean"] = ttft
    _log(
        client,
        run.info.run_id,
        {"task_id": task, "app": app, "attempt": attempt, "termination": "done" if success else "max_steps", **labels},
        metrics,
    )
    client.set_terminated(run.info.run_id, "FAILED" if status in ("infra_error", "eval_error") else "FINISHED")


def _summary_run(client, exp_id, level, name, parent=None, params=None):
    """Sweep and job runs carry success-like metrics: counting them as episodes would change every number."""
    tags = {"mcpworld.level": level, **({"mlflow.parentRunId": parent} if parent else {})}
    run = client.create_run(exp_id, run_name=name, tags=tags)
    _log(client, run.info.run_id, params, {"success": 1.0, "success_rate": 1.0, "episodes": 99})
    return run.info.run_id


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from mlflow.tracking import MlflowClient

    root = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp_id = client.create_experiment(EXP, artifact_location=(root / "artifacts").as_uri())
    sweep = _summary_run(client, exp_id, "sweep", "sweep")
    jobs = {
        res: _summary_run(
            client,
            exp_id,
            "job",
            f"job-{res}",
            sweep,
            {"model": "qwen3vl_8b", "resolution": res, "modality": "gui", "app": "calc"},
        )
        for res in ("square", "rect")
    }
    for res, task, app, attempt, status, energy, ttft in EPISODES:
        _episode(client, exp_id, jobs[res], "qwen3vl_8b", res, task, app, attempt, status, energy, ttft)
    other = client.create_experiment("other", artifact_location=(root / "artifacts").as_uri())
    job = _summary_run(client, other, "job", "job-claude")
    for task, status in (("t1", "success"), ("t2", "failure")):  # an older run: no seed param
        _episode(client, other, job, "claude", "rect", task, "calc", 0, status, seed=False)
    empty = client.create_experiment("empty", artifact_location=(root / "artifacts").as_uri())
    _summary_run(client, empty, "job", "job-only")
    return uri


def run_report(store, out, *args):
    assert main([*args, "--tracking-uri", store, "--out", str(out)]) == 0
    return read_csv(out / "summary.csv")


def read_csv(path):
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return {(r["resolution"], r["app"]) if "resolution" in r and "app" in r else r["model"]: r for r in rows}


def test_rates_counts_and_costs_per_group(store, tmp_path):
    rows = run_report(store, tmp_path, f"experiment={EXP}")
    assert set(rows) == {("square", "calc"), ("square", "writer"), ("rect", "calc"), ("rect", "writer")}
    sq, sw, rc, rw = rows["square", "calc"], rows["square", "writer"], rows["rect", "calc"], rows["rect", "writer"]
    assert [float(r["success_rate"]) for r in (sq, sw, rc, rw)] == [1.0, 0.5, 0.25, 0.0]
    assert (sq["episodes"], sq["successes"], sq["tasks"], sq["infra_errors"]) == ("4", "4", "2", "0")
    assert (rc["episodes"], rc["successes"], rc["tasks"], rc["infra_errors"]) == ("4", "1", "2", "1")
    assert (rc["eval_errors"], rw["eval_errors"], rw["infra_errors"], rw["episodes"]) == ("0", "1", "0", "2")
    assert float(rw["tokens_mean"]) == 1100.0 and float(rw["steps_mean"]) == 4.5  # attempts 0, 1 only
    assert {r["model"] for r in rows.values()} == {"qwen3vl_8b"} and {r["modality"] for r in rows.values()} == {"gui"}
    # the infra error's 10^7 tokens and 1000 steps are not in the means
    assert float(rc["tokens_mean"]) == 1100.0 and float(rc["steps_mean"]) == 4.5
    assert float(rc["actions_mean"]) == 6.5  # turns and the actions they held, apart
    assert float(sq["keystep_ratio"]) == 1.0 and float(rw["keystep_ratio"]) == 0.5
    assert (sq["ttft_p50_s"], sq["ttft_p90_s"]) == ("0.25", "0.37")  # linear percentiles of 0.1 … 0.4
    assert rc["ttft_p50_s"] == "" and rc["ttft_p90_s"] == ""
    assert float(sq["energy_j_mean"]) == 100.0 and float(sq["energy_per_success_j"]) == 100.0
    assert float(sw["energy_j_mean"]) == 200.0 and float(sw["energy_per_success_j"]) == 400.0
    assert rc["energy_j_mean"] == "" and rc["energy_per_success_j"] == ""


def test_bootstrap_ci_brackets_the_rate(store, tmp_path):
    rows = run_report(store, tmp_path, f"experiment={EXP}")
    for row in rows.values():
        low, rate, high = float(row["success_ci_low"]), float(row["success_rate"]), float(row["success_ci_high"])
        assert 0.0 <= low <= rate <= high <= 1.0
    assert (rows["square", "calc"]["success_ci_low"], rows["square", "calc"]["success_ci_high"]) == ("1.0", "1.0")
    assert (rows["rect", "writer"]["success_ci_low"], rows["rect", "writer"]["success_ci_high"]) == ("0.0", "0.0")
    low, high = float(rows["rect", "calc"]["success_ci_low"]), float(rows["rect", "calc"]["success_ci_high"])
    assert low < 0.25 < high  # 1 of 4: a real interval, not a point


def test_bootstrap_is_a_seeded_percentile_bootstrap_over_episodes():
    import numpy as np

    wins = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1]
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        means = np.asarray(wins, float)[rng.integers(0, len(wins), size=(300, len(wins)))].mean(axis=1)
        assert bootstrap_ci(wins, seed, 300) == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))
    assert len({bootstrap_ci(wins, seed, 20) for seed in range(5)}) > 1  # the seed is used
    low, high = bootstrap_ci(wins, 0, 5000)
    assert 0.2 < low < 0.6 < high < 0.95


def test_pass_at_k_estimators_by_hand():
    assert (pass_at_k(2, 1, 1), pass_at_k(2, 1, 2), pass_hat_k(2, 1, 2)) == (0.5, 1.0, 0.0)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10) and pass_hat_k(5, 2, 2) == pytest.approx(1 / 10)
    assert pass_at_k(3, 0, 2) == 0.0 and pass_hat_k(3, 3, 3) == 1.0


def test_pass_columns_from_repeated_tasks(store, tmp_path):
    rows = run_report(store, tmp_path, f"experiment={EXP}")
    sw, rc, sq = rows["square", "writer"], rows["rect", "calc"], rows["square", "calc"]
    assert (float(sw["pass@1"]), float(sw["pass@2"]), float(sw["pass^2"])) == (0.5, 1.0, 0.0)
    # t1: n=2 judged (the infra error is not an attempt), c=1; t2: n=2, c=0
    assert (float(rc["pass@1"]), float(rc["pass@2"]), float(rc["pass^2"])) == (0.25, 0.5, 0.0)
    assert (float(sq["pass@2"]), float(sq["pass^2"])) == (1.0, 1.0)
    assert "pass@3" not in sw and "pass^1" not in sw


def test_no_pass_columns_without_repeats(store, tmp_path):
    rows = run_report(store, tmp_path, f"experiment={EXP}", "--runs", "params.attempt = '0'")
    assert rows and not any(c.startswith("pass") for r in rows.values() for c in r)


def test_markdown_has_one_line_per_group_and_is_printed(store, tmp_path, capsys):
    run_report(store, tmp_path, f"experiment={EXP}")
    md = (tmp_path / "summary.md").read_text()
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len(table) == 2 + 4  # header, alignment, four groups
    assert "| qwen3vl_8b | square | gui | calc | 4 | 2 | 100.0 % [100.0, 100.0] |" in md
    assert "25.0 % [" in md and "| 0.0 % [0.0, 0.0] |" in md
    out = capsys.readouterr().out
    assert md.strip() in out
    for name in ("summary.csv", "summary.md", "success.png", "energy_vs_success.png"):
        assert f"wrote {tmp_path / name}" in out


def test_plots_are_valid_pngs(store, tmp_path):
    run_report(store, tmp_path, f"experiment={EXP}")
    for name in ("success.png", "energy_vs_success.png"):
        path = tmp_path / name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        with Image.open(path) as image:
            image.verify()
        with Image.open(path) as image:
            assert image.format == "PNG" and image.width >= 600 and image.height >= 300
            assert len(image.convert("L").getcolors(1 << 16)) > 10  # something was drawn


def test_energy_plot_skipped_without_energy(store, tmp_path, capsys):
    (tmp_path / "energy_vs_success.png").write_bytes(b"stale")
    rows = run_report(store, tmp_path, f"experiment={EXP}", "--runs", "params.resolution = 'rect'")
    assert set(rows) == {("rect", "calc"), ("rect", "writer")}
    assert not (tmp_path / "energy_vs_success.png").exists()
    assert (tmp_path / "success.png").exists()
    assert "energy_vs_success.png not written: no episode reports gpu.energy_j" in capsys.readouterr().out


def test_group_by_model_merges_groups(store, tmp_path):
    rows = run_report(store, tmp_path, f"experiment={EXP}", "--group-by", "model")
    assert list(rows) == ["qwen3vl_8b"]
    row = rows["qwen3vl_8b"]
    assert (row["episodes"], row["successes"], row["tasks"], row["infra_errors"]) == ("12", "6", "3", "1")
    assert row["eval_errors"] == "1"
    assert float(row["success_rate"]) == 0.5
    # per task over both resolutions: t1 n=4 c=3, t2 n=4 c=2, t3 n=4 c=1
    assert float(row["pass@1"]) == 0.5 and float(row["pass@4"]) == 1.0 and float(row["pass^4"]) == 0.0
    assert float(row["pass^2"]) == pytest.approx((3 / 6 + 1 / 6 + 0) / 3)
    assert "pass@5" not in row


def test_runs_filter_narrows_within_and_across_experiments(store, tmp_path, monkeypatch):
    rows = run_report(
        store, tmp_path / "a", f"experiment={EXP}", "--runs", "params.resolution = 'square' AND params.app = 'writer'"
    )
    assert list(rows) == [("square", "writer")]
    monkeypatch.chdir(tmp_path)  # no experiment: all experiments, default out outputs/reports/runs
    assert (
        main(["--runs", "params.app = 'calc' AND params.attempt = '0'", "--tracking-uri", store, "--group-by", "model,seed"]) == 0
    )
    with (tmp_path / "outputs/reports/runs/summary.csv").open() as f:
        across = [(r["model"], r["seed"], r["episodes"], r["success_rate"]) for r in csv.DictReader(f)]
    assert across == [("claude", "(none)", "2", "0.5"), ("qwen3vl_8b", "0", "4", "0.75")]  # claude's runs lack seed
    assert main(["--runs", "params.model = 'claude'", "--tracking-uri", store, "--group-by", "model"]) == 0
    with (tmp_path / "outputs/reports/runs/summary.csv").open() as f:
        assert [(r["model"], r["episodes"]) for r in csv.DictReader(f)] == [("claude", "2")]


def test_unknown_experiment_is_one_clear_error(store, tmp_path, capsys):
    assert main(["experiment=nope", "--tracking-uri", store, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'nope' does not exist" in err and store in err and "paper" in err
    assert main(["experiment=empty", "--tracking-uri", store, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "'empty' has no episode runs" in err and store in err
    assert not (tmp_path / "summary.csv").exists()


def test_unknown_group_key_lists_the_params(store, tmp_path, capsys):
    assert main([f"experiment={EXP}", "--group-by", "model,gpu", "--tracking-uri", store, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcpworld.report: error: --group-by gpu:") and err.count("\n") == 1
    assert "resolution" in err and "task_id" in err and "termination" in err


def test_bad_inputs_are_user_errors(store, tmp_path):
    from mcpworld.report.tables import parse_args, report

    missing = tmp_path / "none.db"
    with pytest.raises(UserError, match="no MLflow store"):
        report(parse_args([f"experiment={EXP}", "--tracking-uri", f"sqlite:///{missing}"]))
    assert not missing.exists()  # reporting never creates an empty store
    with pytest.raises(UserError, match="not a valid MLflow filter"):
        report(
            parse_args([f"experiment={EXP}", "--tracking-uri", store, "--out", str(tmp_path), "--runs", "params.model === 'x'"])
        )
    with pytest.raises(UserError, match="experiment=NAME"):
        parse_args(["model=x"])
    with pytest.raises(UserError, match="experiment=NAME and/or --runs"):
        parse_args([])


@pytest.mark.slow  # two fresh interpreters, each importing MLflow and reading the store (main() in-process is the fast tier's)
def test_cli_entry_point(store, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpworld.report",
            f"experiment={EXP}",
            "--tracking-uri",
            store,
            "--out",
            str(tmp_path),
            "--resamples",
            "200",
            "--seed",
            "3",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "| model | resolution | modality | app |" in done.stdout
    assert f"wrote {tmp_path / 'summary.csv'}" in done.stdout
    assert len(read_csv(tmp_path / "summary.csv")) == 4
    bad = subprocess.run(
        [sys.executable, "-m", "mcpworld.report", "experiment=nope", "--tracking-uri", store],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert bad.returncode == 2 and "experiment 'nope' does not exist" in bad.stderr


# ---------------------------------------------------------------- a sweep folder (no MLflow)


def _result(res, task, status, tools, hallucinations=0, loops=0, cost=None, energy=None, attempt=0):
    from mcpworld.core.result import EpisodeResult, ToolCounts

    labels = {"model": "qwen3vl_32b", "provider": "ollama", "resolution": res, "modality": "hybrid", "env": "local", "seed": "0"}
    return EpisodeResult(
        task_id=task,
        app="calc",
        attempt=attempt,
        status=status,
        score=float(status == "success"),
        steps=5,
        tokens_in=1000,
        tokens_out=100,
        llm_calls=5,
        tool_calls={n: ToolCounts(ok, err) for n, (ok, err) in tools.items()},
        hallucinations=hallucinations,
        loops=loops,
        cost_usd=cost,
        gpu={"gpu.energy_j": energy} if energy is not None else {},
        labels=labels,
    )


SWEEP = {  # job folder -> episodes, as `python -m mcpworld -m resolution=square,rect` writes them
    "0": [
        _result(
            "square",
            "t1",
            "success",
            {"computer": (3, 1), "filesystem-read_text_file": (2, 0), "done": (1, 0)},
            hallucinations=1,
            cost=0.05,
            energy=900.0,
        ),
        _result("square", "t2", "success", {"computer": (4, 0), "done": (1, 0)}, loops=1, cost=0.03, energy=600.0),
        _result(
            "square",
            "suite/t3",
            "failure",
            {"computer": (5, 5), "local-claim_done": (1, 0), "bash": (2, 2)},
            hallucinations=3,
            loops=2,
            cost=0.02,
            energy=500.0,
        ),
        # not the agent's: its calls, cost and energy must not reach any number
        _result("square", "t4", "infra_error", {"computer": (100, 100)}, hallucinations=50, loops=9, cost=9.0, energy=99999.0),
    ],
    "1": [
        _result("rect", "t1", "success", {"computer": (2, 0), "done": (1, 0)}),
        _result("rect", "t2", "failure", {"computer": (1, 1)}, hallucinations=1),
        _result("rect", "suite/t3", "failure", {"computer": (0, 0)}),
    ],
}


@pytest.fixture
def sweep_dir(tmp_path):
    root = tmp_path / "sweep"
    for job, results in SWEEP.items():
        for result in results:
            folder = root / job / "episodes" / result.task_id / str(result.attempt)
            folder.mkdir(parents=True)
            result.write(folder / "result.json")
    aside = root / "0" / "episodes" / "t1" / "0.infra_error1"  # a set-aside try: not an episode
    aside.mkdir()
    _result("square", "t1", "infra_error", {"computer": (0, 50)}).write(aside / "result.json")
    return root


def test_a_sweep_folder_reports_tool_success_by_family_cost_and_joules_per_success(sweep_dir, tmp_path):
    out = tmp_path / "report"
    assert main(["--dir", str(sweep_dir), "--group-by", "resolution", "--out", str(out)]) == 0
    with (out / "summary.csv").open(newline="") as f:
        rows = {r["resolution"]: r for r in csv.DictReader(f)}
    sq, rc = rows["square"], rows["rect"]
    assert (sq["episodes"], sq["successes"], sq["infra_errors"]) == ("3", "2", "1")
    assert float(sq["tool_success.computer"]) == pytest.approx(12 / 18)
    assert float(sq["tool_success.mcp"]) == 1.0  # filesystem-read_text_file and local-claim_done: the mcp family
    assert (float(sq["tool_success.bash"]), float(sq["tool_success.done"])) == (0.5, 1.0)
    assert float(sq["hallucination_rate"]) == pytest.approx(4 / 27) and float(sq["loop_rate"]) == pytest.approx(2 / 3)
    assert float(sq["cost_usd_mean"]) == pytest.approx(0.10 / 3) and float(sq["cost_per_success_usd"]) == 0.05
    assert float(sq["energy_per_success_j"]) == 1000.0 and float(sq["energy_j_mean"]) == pytest.approx(2000 / 3)
    assert float(rc["tool_success.computer"]) == pytest.approx(3 / 4) and rc["tool_success.bash"] == ""
    assert rc["cost_usd_mean"] == "" and rc["cost_per_success_usd"] == ""  # an unpriced model: no cost, never 0
    md = (out / "summary.md").read_text()
    assert "tool_success.computer" in md.splitlines()[0] and "cost_per_success_usd" in md.splitlines()[0]
    (square,) = [line for line in md.splitlines() if line.startswith("| square |")]
    assert "| 66.7 % |" in square and "| $0.0500 |" in square and "| 1,000 |" in square  # J per success


def test_paired_comparison_over_the_same_tasks(sweep_dir, tmp_path):
    out = tmp_path / "report"
    assert main(["--dir", str(sweep_dir), "--group-by", "model", "--compare", "resolution", "--out", str(out)]) == 0
    with (out / "compare.csv").open(newline="") as f:
        (row,) = list(csv.DictReader(f))
    # per task square − rect: t1 0, t2 +1, suite/t3 0 (t4 was an infra error on square, and rect never ran it)
    assert (row["model"], row["a"], row["b"], row["tasks"]) == ("qwen3vl_32b", "rect", "square", "3")
    assert float(row["success_a"]) == pytest.approx(1 / 3) and float(row["success_b"]) == pytest.approx(2 / 3)
    assert float(row["diff"]) == pytest.approx(1 / 3) and (row["b_better"], row["a_better"]) == ("1", "0")
    low, high = float(row["diff_ci_low"]), float(row["diff_ci_high"])
    assert (low, high) == pytest.approx(bootstrap_ci([0.0, 1.0, 0.0], 0, 2000))  # the report's own bootstrap, over tasks
    assert 0.0 <= low < 1 / 3 < high <= 1.0
    assert "+33.3 pp [" in (out / "compare.md").read_text()
    with Image.open(out / "compare.png") as image:
        assert image.format == "PNG" and image.width >= 600


def test_an_older_store_has_no_new_columns(store, tmp_path):
    rows = run_report(store, tmp_path, f"experiment={EXP}")
    row = next(iter(rows.values()))
    assert not [c for c in row if c.startswith(("tool_success.", "cost_")) or (c.endswith("_rate") and c != "success_rate")]


def test_a_folder_without_episodes_is_one_clear_error(tmp_path, capsys):
    assert main(["--dir", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert "no episodes/<task>/<attempt>/result.json under it" in capsys.readouterr().err
