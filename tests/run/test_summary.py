"""The tables printed at the end of a job and of a sweep: readable on a terminal and in a log file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from mcpworld.core.result import EpisodeResult
from mcpworld.run.summary import job_rows, print_job_table, print_sweep_table

OVERRIDES = [
    "model=qwen2.5vl:72b,provider=ollama,modality=hybrid,resolution=fhd,agent.max_steps=50,"
    "task=libreoffice_calc/*,env=docker,tracking.uri=sqlite:///shared/mlflow.db",
    "model=gpt-4.1-mini,provider=openai_compat,modality=gui,resolution=wxga,agent.max_steps=50,"
    "task=libreoffice_calc/*,env=docker,tracking.uri=sqlite:///shared/mlflow.db",
]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def sweep(tmp_path: Path) -> Path:
    for num, job in enumerate(OVERRIDES):
        (tmp_path / str(num)).mkdir()
        (tmp_path / str(num) / "summary.json").write_text(
            json.dumps(
                {
                    "job": job,
                    "status": "FINISHED",
                    "episodes": 12.0,
                    "success_rate": 0.25 * (num + 1),
                    "mean_score": 0.5,
                    "infra_errors": 0.0,
                    "eval_errors": 1.0,
                }
            )
        )
    (tmp_path / "10").mkdir()  # a job whose process died: no summary
    return tmp_path


def test_the_sweep_summary_in_a_log_is_one_line_per_job_with_its_overrides_whole(tmp_path, capsys):
    print_sweep_table(tmp_path, job_rows(sweep(tmp_path)))  # stdout is captured: not a terminal
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"mcpworld sweep: {tmp_path}"
    for num, job in enumerate(OVERRIDES):
        (line,) = [line for line in lines if line.startswith(f"  job  {num}  ")]
        assert line.endswith(f"overrides: {job}") and "FINISHED" in line and "episodes 12" in line
        assert f"success {25 * (num + 1)}%" in line
    (died,) = [line for line in lines if line.startswith("  job 10  FAILED ")]
    assert "episodes 0" in died and "overrides" not in died  # (no summary names its overrides)
    assert "  job 10 FAILED: the job ended without a summary (its process died)" in lines


def test_the_sweep_summary_on_a_terminal_is_a_table(tmp_path):
    out = Terminal()
    print_sweep_table(tmp_path, job_rows(sweep(tmp_path)), out)
    text = out.getvalue()
    assert text.count("┏") == 1 and "job" in text and "overrid" in text and text.count("FINISHED") == 2


def test_the_job_table_in_a_log_keeps_task_ids_whole(capsys):
    task_id = "vs_code/982d12a5-beab-424f-8d38-d2a48429e511-2-WOS"
    print_job_table(OVERRIDES[0], [EpisodeResult(task_id=task_id, app="vs_code", status="success", score=1.0)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"mcpworld job: {OVERRIDES[0]}"
    assert any(task_id in line and "success" in line for line in lines)


# ---------------------------------------------------------------- the job metrics' vocabulary


def episode(status: str, tools: dict[str, tuple[int, int]], **kw) -> EpisodeResult:
    from mcpworld.core.result import ToolCounts

    return EpisodeResult(
        task_id="t",
        app="a",
        status=status,
        score=float(status == "success"),
        tool_calls={n: ToolCounts(ok, err) for n, (ok, err) in tools.items()},
        **kw,
    )


def test_job_metrics_take_the_episodes_names_means_and_totals():
    from mcpworld.run.job import summarize

    results = [
        episode(
            "success",
            {"computer": (4, 1), "filesystem-write_file": (2, 0), "done": (1, 0)},
            steps=6,
            llm_calls=7,
            tokens_in=1000,
            tokens_out=100,
            duration_s=10.0,
            hallucinations=1,
            key_steps={"total": 2, "ratio": 1.0},
        ),
        episode(
            "failure",
            {"computer_use": (2, 2), "bash": (1, 1), "local-claim_done": (0, 1)},
            steps=4,
            llm_calls=5,
            tokens_in=3000,
            tokens_out=300,
            duration_s=30.0,
            hallucinations=2,
            loops=1,
            tokens_estimated=True,
            truncations=1,
            key_steps={"total": 2, "ratio": 0.5},
        ),
        # not judged: its calls are in no rate; what it spent is in the totals
        episode(
            "infra_error",
            {"computer": (0, 9)},
            steps=40,
            llm_calls=1,
            tokens_in=500,
            tokens_out=0,
            duration_s=2.0,
            hallucinations=9,
            loops=3,
            truncations=1,
        ),
    ]
    out = summarize(results, 4, skipped=6)
    assert (out["episodes"], out["episodes_planned"], out["infra_errors"], out["tasks_skipped"]) == (3, 4, 1, 6)
    assert out["success"] == 0.5 and out["score"] == 0.5 and out["steps"] == 5.0 and out["keysteps.ratio"] == 0.75
    assert out["duration_s"] == 14.0 and out["llm_calls"] == pytest.approx(13 / 3)
    assert (out["llm_calls_total"], out["tokens_in_total"], out["tokens_out_total"]) == (13, 4500, 400)
    assert out["tokens_in"] == 1500.0 and out["tokens_estimated"] == pytest.approx(1 / 3)
    # pooled over the 2 judged episodes' 9 computer calls (computer_use is the computer family); calls per episode
    assert out["tool_success.computer"] == pytest.approx(6 / 9) and out["tool_calls.computer"] == 4.5
    assert out["tool_success.mcp"] == pytest.approx(2 / 3)  # filesystem-write_file 2/2, local-claim_done 0/1
    assert (out["tool_success.bash"], out["tool_success.done"]) == (0.5, 1.0)
    assert out["hallucination_rate"] == pytest.approx(3 / 15) and out["loop_rate"] == 0.5
    assert out["truncation_rate"] == 0.5 and out["truncations_total"] == 2  # the infra error's cut is no rate's
    assert not [k for k in out if "cost" in k]  # no model.price: absent, not 0
    for old in ("success_rate", "mean_score", "mean_steps", "mean_duration_s", "keystep_ratio"):
        assert old not in out
    first, second = (EpisodeResult(task_id="t", app="a", tool_calls=r.tool_calls).numbers() for r in results[:2])
    assert {k for k in out if k.startswith("tool_")} == {k for k in {**first, **second} if k.startswith("tool_")}
    assert (first["tool_success.mcp"], second["tool_calls.mcp"], second["tool_success.computer"]) == (1.0, 1, 0.5)
    assert not [k for k in {**first, **second} if k.startswith("tool.")]  # no column per tool


def test_a_sweep_of_new_and_old_summaries_reads_both_and_shows_skipped_tasks(tmp_path, capsys):
    sweep(tmp_path)  # jobs 0 and 1 wrote the old names (success_rate, mean_score)
    (tmp_path / "2").mkdir()
    (tmp_path / "2" / "summary.json").write_text(
        json.dumps(
            {
                "job": "model=qwen3vl_32b,resolution=square",
                "status": "FINISHED",
                "episodes": 33.0,
                "success": 0.75,
                "score": 0.8,
                "infra_errors": 0.0,
                "eval_errors": 0.0,
                "tasks_skipped": 6.0,
                "skipped": [
                    {"kind": "not_applicable", "reason": "not applicable to modality=gui", "count": 6, "tasks": ["toolathlon/a"]}
                ],
            }
        )
    )
    print_sweep_table(tmp_path, job_rows(tmp_path))
    lines = capsys.readouterr().out.splitlines()
    (new,) = [line for line in lines if line.startswith("  job  2  ")]
    assert "success 75%" in new and "mean score 0.80" in new and "tasks skipped 6" in new
    (old,) = [line for line in lines if line.startswith("  job  1  ")]
    assert "success 50%" in old and "mean score 0.50" in old and "tasks skipped" not in old
