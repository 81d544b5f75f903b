"""The tables printed at the end of a job and of a sweep: readable on a terminal and in a log file."""

from __future__ import annotations

import io
import json
from pathlib import Path

from mcpworld.core.result import EpisodeResult
from mcpworld.run.summary import job_rows, print_job_table, print_sweep_table

OVERRIDES = ["model=qwen2.5vl:72b,provider=ollama,modality=hybrid,resolution=fhd,agent.max_steps=50,"
             "task=libreoffice_calc/*,env=docker,tracking.uri=sqlite:///shared/mlflow.db",
             "model=gpt-4.1-mini,provider=openai_compat,modality=gui,resolution=wxga,agent.max_steps=50,"
             "task=libreoffice_calc/*,env=docker,tracking.uri=sqlite:///shared/mlflow.db"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def sweep(tmp_path: Path) -> Path:
    for num, job in enumerate(OVERRIDES):
        (tmp_path / str(num)).mkdir()
        (tmp_path / str(num) / "summary.json").write_text(json.dumps(
            {"job": job, "status": "FINISHED", "episodes": 12.0, "success_rate": 0.25 * (num + 1),
             "mean_score": 0.5, "infra_errors": 0.0, "eval_errors": 1.0}))
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
