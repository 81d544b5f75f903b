"""A run without ``resolution=`` gets the screen its model prefers (the model file's defaults list
picks it); an explicit ``resolution=`` always wins, sweeps over resolution still expand, the chosen
screen is a logged param, and a stated preference that nothing picks is one error."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from mcpworld.config.resolution import check_preference, explicitly_chosen
from mcpworld.config.schema import register
from mcpworld.core.errors import UserError
from mcpworld.telemetry.tracking.vocabulary import job_params

ROOT = Path(__file__).resolve().parents[2]
CONF = str(ROOT / "mcpworld" / "conf")
MODELS = sorted(p.stem for p in (Path(CONF) / "model").glob("*.yaml"))

register()


def make(*overrides: str):
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose("config", overrides=list(overrides))


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcpworld", *args, f"hydra.run.dir={tmp_path}/run", f"hydra.sweep.dir={tmp_path}/sweep"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    "model, screen",
    [
        ("qwen3vl_8b", "square"),
        ("qwen3vl_235b_a22b", "square"),
        ("claude_sonnet_4_5", "rect"),
        ("claude_3_7_sonnet", "rect"),
        ("devstral", "square"),
        ("oracle", "square"),
    ],
)
def test_without_resolution_the_model_gets_the_screen_it_prefers(model: str, screen: str) -> None:
    cfg = make(f"model={model}")
    assert cfg.resolution.name == screen
    assert job_params(OmegaConf.to_container(cfg, resolve=True))["resolution"] == screen  # logged as a param


@pytest.mark.parametrize(
    "overrides, screen",
    [
        (("model=claude_sonnet_4_5", "resolution=square"), "square"),
        (("resolution=square", "model=claude_sonnet_4_5"), "square"),  # the order on the command line does not matter
        (("model=qwen3vl_8b", "resolution=rect"), "rect"),
        (("model=qwen3vl_8b", "resolution=fhd"), "fhd"),
        (("experiment=size_scaling", "model=claude_sonnet_4_5"), "square"),  # a preset that fixes the screen wins too
    ],
)
def test_an_explicit_resolution_always_wins(overrides: tuple[str, ...], screen: str) -> None:
    assert make(*overrides).resolution.name == screen


@pytest.mark.parametrize("model", MODELS)
def test_every_shipped_preference_is_what_its_file_picks(model: str) -> None:
    cfg = make(f"model={model}")
    if cfg.model.preferred_resolution:
        assert cfg.resolution.name == cfg.model.preferred_resolution


def test_a_sweep_over_resolution_still_gives_each_job_its_screen() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcpworld", "model=claude_sonnet_4_5,qwen3vl_8b", "resolution=square,rect", "-m", "--cfg", "job"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    jobs = re.findall(r"^# job \d+: (.*)$\n(?:.*\n)*?^resolution:\n  name: (\w+)$", proc.stdout, re.M)
    assert sorted(jobs) == sorted(
        (f"model={m} resolution={r}", r) for m in ("claude_sonnet_4_5", "qwen3vl_8b") for r in ("square", "rect")
    )


def test_a_preference_nothing_picks_is_one_error_naming_the_line(tmp_path: Path) -> None:
    own = tmp_path / "mine" / "model"
    own.mkdir(parents=True)  # a model file of one's own, written without the defaults line
    (own / "my_vlm.yaml").write_text("# @package _global_\nmodel:\n  name: my_vlm\n  id: my-vlm\n  preferred_resolution: rect\n")
    proc = cli(tmp_path, f"hydra.searchpath=[file://{own.parent}]", "model=my_vlm", "tracking=none")
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mcpworld: error:")]
    assert proc.returncode != 0 and len(errors) == 1, proc.stderr[-2000:]
    assert "model=my_vlm prefers resolution=rect" in errors[0] and "resolution=square" in errors[0]
    assert "`- override /resolution: rect`" in errors[0] and "conf/model/my_vlm.yaml" in errors[0]
    assert not (tmp_path / "run" / "episodes").exists()


def test_the_check_itself() -> None:
    check_preference("m", "rect", "rect", explicit=False)
    check_preference("m", None, "square", explicit=False)
    check_preference("m", "rect", "square", explicit=True)  # resolution=square on purpose
    with pytest.raises(UserError, match="prefers resolution=rect"):
        check_preference("m", "rect", "square", explicit=False)
    assert explicitly_chosen(["model=m", "resolution=square"], None)
    assert explicitly_chosen(["model=m"], "size_scaling")
    assert not explicitly_chosen(["model=m", "resolution.width=1200"], None)
    assert not explicitly_chosen(["model=m", "model.preferred_resolution=rect"], "null")
