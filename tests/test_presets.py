"""The experiment presets are whole studies: ``python -m mcpworld experiment=NAME -m`` expands to
the study's jobs (previewed here with ``--cfg job``, which runs nothing)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def preview(*args: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "mcpworld", *args, "-m", "--cfg", "job"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return re.findall(r"^# job \d+: (.*)$", proc.stdout, re.M)


@pytest.mark.parametrize("preset, jobs, swept", [
    ("resolution_study", 6, {"model=qwen3vl_8b", "model=claude_sonnet_4_5", "resolution=square", "resolution=rect"}),
    ("modality_study", 3, {"modality=gui", "modality=mcp", "modality=hybrid"}),
    ("size_scaling", 4, {"model=qwen3vl_2b", "model=qwen3vl_4b", "model=qwen3vl_8b", "model=qwen3vl_32b"}),
])
def test_each_preset_is_a_whole_study(preset: str, jobs: int, swept: set[str]) -> None:
    lines = preview(f"experiment={preset}")
    assert len(lines) == jobs
    assert swept <= {part for line in lines for part in line.split()}


def test_a_preset_names_its_mlflow_experiment_and_keeps_its_fixed_choices() -> None:
    proc = subprocess.run([sys.executable, "-m", "mcpworld", "experiment=modality_study", "-m", "--cfg", "job"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.stdout.count("experiment: modality_study") == 3
    assert proc.stdout.count("name: qwen3vl_32b") == 3 and proc.stdout.count("- mousepad") == 3


def test_a_command_line_sweep_previews_every_combination() -> None:
    lines = preview("model=qwen3vl_32b,claude_3_7_sonnet", "resolution=square,rect")
    assert sorted(lines) == sorted(f"model={m} resolution={r}" for m in ("qwen3vl_32b", "claude_3_7_sonnet")
                                   for r in ("square", "rect"))
