"""An app config kept outside the package, in a folder on ``hydra.searchpath``, is an app like a
built-in one: ``app=myapp`` composes it, the catalog reads its program and settings, and its tasks
resolve to the program they start."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hydra.core.hydra_config import HydraConfig

from mcpworld.apps.catalog import app_folders, app_setting, programs
from mcpworld.apps.programs import programs_started_by
from mcpworld.tasks.load import load_task_file
from tests.helpers.config import CONF, make

MYAPP = """\
name: myapp
apps: [myapp]
mcp_servers: [filesystem]
program:
  binary: xterm
  names: [myapp-start]
"""


@pytest.fixture
def own_conf(tmp_path: Path) -> Path:
    (tmp_path / "conf" / "app").mkdir(parents=True)
    (tmp_path / "conf" / "app" / "myapp.yaml").write_text(MYAPP)
    return tmp_path / "conf"


@pytest.fixture
def hydra_run() -> Iterator[None]:
    """What ``@hydra.main`` does for a job: the composed config's hydra section is HydraConfig's."""
    yield
    HydraConfig.instance().cfg = None


def run_config(*overrides: str):
    cfg = make(*overrides, hydra_cfg=True)
    HydraConfig.instance().set_config(cfg)
    return cfg


def test_an_app_on_the_search_path_is_composed_started_and_its_tasks_resolve(own_conf: Path, tmp_path: Path, hydra_run) -> None:
    cfg = run_config(f"hydra.searchpath=[file://{own_conf}]", "app=myapp")
    assert cfg.app.apps == ["myapp"]
    found = {p.app: p for p in programs()}
    assert found["myapp"].names == ("myapp-start",) and "chromium" in found  # the package's apps stay
    task_file = tmp_path / "tasks" / "myapp" / "hello" / "task.yaml"
    task_file.parent.mkdir(parents=True)
    task_file.write_text(
        "app: myapp\ninstruction: say hello\nsetup:\n  - launch: {command: [myapp-start]}\n"
        "evaluator: {func: exact_match, result: {type: vm_command_line, command: echo hi},\n"
        "  expected: {type: rule, rules: {expected: hi}}}\n"
    )
    task = load_task_file(task_file)
    assert [p.app for p in programs_started_by(task, programs())] == ["myapp"]


def test_with_app_all_the_apps_own_settings_come_from_its_file(own_conf: Path, hydra_run) -> None:
    cfg = run_config(f"hydra.searchpath=[file://{own_conf}]", "app=all")
    assert app_setting(cfg.app, "myapp", "mcp_servers") == ["filesystem"]


def test_the_package_comes_first_and_outside_a_run_only_the_package_is_read(own_conf: Path, hydra_run) -> None:
    assert "myapp" not in {p.app for p in programs()}
    run_config(f"hydra.searchpath=[file://{own_conf}]")
    assert app_folders()[0] == (Path(CONF) / "app").resolve() and app_folders()[1] == (own_conf / "app").resolve()
