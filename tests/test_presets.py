"""The experiment presets are whole studies: ``python -m mcpworld experiment=NAME -m`` expands to
the study's jobs (previewed here with ``--cfg job``, which runs nothing)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

from mcpworld.config.schema import register
from mcpworld.run.sweep_preview import expand

ROOT = Path(__file__).resolve().parents[1]

register()


def preview(*args: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "mcpworld", *args, "-m", "--cfg", "job"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return re.findall(r"^# job \d+: (.*)$", proc.stdout, re.M)


@pytest.mark.parametrize(
    "preset, jobs, swept",
    [
        ("resolution_study", 6, {"model=qwen3vl_8b", "model=claude_sonnet_4_5", "resolution=square", "resolution=rect"}),
        ("modality_study", 3, {"modality=gui", "modality=mcp", "modality=hybrid"}),
        ("size_scaling", 4, {"model=qwen3vl_2b", "model=qwen3vl_4b", "model=qwen3vl_8b", "model=qwen3vl_32b"}),
        ("osworld_verified", 3, {"agent.max_steps=15", "agent.max_steps=50", "agent.max_steps=100"}),
    ],
)
def test_each_preset_is_a_whole_study(preset: str, jobs: int, swept: set[str]) -> None:
    lines = preview(f"experiment={preset}")
    assert len(lines) == jobs
    assert swept <= {part for line in lines for part in line.split()}


def test_a_preset_names_its_mlflow_experiment_and_keeps_its_fixed_choices() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcpworld", "experiment=modality_study", "-m", "--cfg", "job"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout.count("experiment: modality_study") == 3
    assert proc.stdout.count("name: qwen3vl_32b") == 3 and proc.stdout.count("- mousepad") == 3


def test_a_command_line_sweep_previews_every_combination() -> None:
    lines = preview("model=qwen3vl_32b,claude_3_7_sonnet", "resolution=square,rect")
    assert sorted(lines) == sorted(
        f"model={m} resolution={r}" for m in ("qwen3vl_32b", "claude_3_7_sonnet") for r in ("square", "rect")
    )


def test_osworld_verified_composes_the_leaderboards_settings() -> None:
    """OSWorld-Verified's published settings (the preset's header cites each): 1920x1080, screenshots only,
    the evaluator's float score kept (success at 1.0), the first step budget, one attempt, and the sweep
    of the three budgets; a model's own preferred screen does not win over the suite's."""
    with initialize_config_dir(config_dir=str(ROOT / "mcpworld" / "conf"), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                "experiment=osworld_verified",
                "model=qwen3vl_8b",
                "tasks.root=/data/OSWorld/evaluation_examples/examples",
            ],
            return_hydra_config=True,
        )
    assert (cfg.resolution.name, cfg.resolution.width, cfg.resolution.height) == ("fhd", 1920, 1080)
    assert cfg.modality.name == "gui" and list(cfg.modality.tools) == ["computer", "done"]
    assert (cfg.evaluator.partial_credit, cfg.evaluator.success_threshold) == (True, 1.0)
    assert cfg.agent.max_steps == 15 and cfg.attempts == 1
    assert cfg.agent.max_llm_calls >= 100 and cfg.agent.timeout_s >= 3600  # only the step budget ends an episode
    assert cfg.tracking.experiment == "osworld_verified" and cfg.hydra.mode.name == "MULTIRUN"
    assert str(cfg.hydra.sweeper.params["agent.max_steps"]) == "15,50,100"
    assert cfg.tasks.root == "/data/OSWorld/evaluation_examples/examples"
    jobs = expand(["experiment=osworld_verified", "model=qwen3vl_8b"])
    assert [job[-1] for job in jobs] == ["agent.max_steps=15", "agent.max_steps=50", "agent.max_steps=100"]


def test_osworld_verified_cfg_job_shows_the_settings(tmp_path: Path) -> None:
    """`python -m mcpworld experiment=osworld_verified tasks.root=… --cfg job`: what a user checks first."""
    osworld = tmp_path / "OSWorld" / "evaluation_examples" / "examples"
    proc = subprocess.run(
        [sys.executable, "-m", "mcpworld", "experiment=osworld_verified", f"tasks.root={osworld}", "--cfg", "job"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    cfg = yaml.safe_load(proc.stdout)
    assert cfg["resolution"] == {"name": "fhd", "width": 1920, "height": 1080}
    assert cfg["modality"] == {"name": "gui", "tools": ["computer", "done"]}
    assert cfg["agent"]["max_steps"] == 15 and cfg["attempts"] == 1
    assert (cfg["evaluator"]["partial_credit"], cfg["evaluator"]["success_threshold"]) == (True, 1.0)
    assert cfg["tasks"]["root"] == str(osworld) and cfg["tracking"]["experiment"] == "osworld_verified"
