"""A config value that names an implementation is checked against its registry, the one list of its
names: a typo stops the job with one line naming the key, the value and every known name (another
installed package's included), and a name another package adds, or a ``module:Name``, is accepted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcpworld.core.errors import UserError
from mcpworld.run.choices import check_choices, registries
from tests.helpers.config import make

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "override, known",
    [
        ("provider.kind=nope", "anthropic, bedrock, ollama, openai_compat, oracle, vertex"),
        ("model.profile=nope", "claude, gemma, generic, qwen3vl, uitars"),
        ("env.backend=nope", "docker, local, vm"),
        ("env.mcp_sandbox=nope", "klavis, local"),
        ("tracking.backend=nope", "mlflow, none"),
    ],
)
def test_an_unknown_name_is_one_error_naming_key_value_and_the_known_names(override: str, known: str) -> None:
    key = override.split("=")[0]
    with pytest.raises(UserError) as caught:
        check_choices(make(override))
    assert str(caught.value).startswith(f"{key}='nope' is unknown; known: {known}; ")


def test_every_shipped_default_and_preset_names_a_registered_implementation() -> None:
    for overrides in [
        (),
        ("provider=ollama", "model=qwen3vl_8b"),
        ("provider=anthropic", "model=claude_sonnet_4_5"),
        ("env=docker",),
    ]:
        check_choices(make(*overrides, "tracking=none"))


def test_a_name_another_package_installs_is_accepted_and_listed(installed, monkeypatch: pytest.MonkeyPatch) -> None:
    installed(
        "outside_kinds",
        "def build(settings, solution):\n    raise AssertionError\n",
        {"mcpworld.providers": {"mine": "outside_kinds:build"}},
    )
    for registry in registries():
        monkeypatch.setattr(registry, "_outside", None)  # read the groups again: installed after the first look
    check_choices(make("provider.kind=mine"))
    with pytest.raises(UserError, match=r"known: anthropic, bedrock, mine, ollama"):
        check_choices(make("provider.kind=nope"))


def test_a_module_reference_is_accepted_without_importing_it() -> None:
    check_choices(make("provider.kind=not_yet_imported.anywhere:build"))
    assert "not_yet_imported" not in sys.modules


def test_the_cli_stops_before_anything_starts_with_that_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcpworld", "env.backend=kvm", "tracking=none", f"hydra.run.dir={tmp_path}/run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "mcpworld: error: env.backend='kvm' is unknown; known: docker, local, vm; " in proc.stderr
    assert "Traceback" not in proc.stderr and not list((tmp_path / "run").rglob("result.json"))
