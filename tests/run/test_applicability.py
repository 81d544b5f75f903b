"""A task the chosen modality cannot do is skipped before any episode, said once per job, recorded in
summary.json and counted in no rate: the design card's `python -m mcpworld model=qwen3vl_32b
resolution=square -m` (modality=gui, app=all) must not score Toolathlon's MCP-only tasks as failures."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from mcpworld.core.errors import UserError
from mcpworld.core.paths import CONF_DIR
from mcpworld.core.task import Task
from mcpworld.run import job
from mcpworld.run.sweep_preview import expand
from mcpworld.tasks.select import not_applicable, task_paths
from tests.helpers.config import make

TOOLATHLON = sorted(
    f"toolathlon/{p.parent.name}" for p in (CONF_DIR.parent / "data" / "tasks" / "toolathlon").glob("*/task_config.json")
)
DESIGN_CARD = ("model=qwen3vl_32b", "resolution=square")


@pytest.fixture
def any_machine(every_program_installed):
    """Whether this machine has the desktop apps installed must not change what is applicable: every
    test here sees the machine `make setup` leaves (tests/conftest.py), whatever this one has."""


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_design_cards_command_skips_the_mcp_only_tasks_with_the_reason(tmp_path, capsys, monkeypatch, any_machine):
    assert len(TOOLATHLON) == 6  # the built-in Toolathlon tasks: what gui cannot do
    monkeypatch.setattr(job, "job_dir", lambda: tmp_path)
    # no model server: the job stops at the endpoint check, after choosing its tasks (env.network=host: the
    # desktop's fence, which needs root and iptables, is not what this test is about)
    cfg = make(*DESIGN_CARD, "env.network=host", f"provider.base_url=http://127.0.0.1:{closed_port()}/v1")
    assert cfg.modality.name == "gui" and cfg.app.name == "all"
    with pytest.raises(UserError):
        job.run_job(cfg)
    err = capsys.readouterr().err
    (line,) = [line for line in err.splitlines() if "not applicable" in line]  # once per job, not per task
    assert line.startswith(
        f"mcpworld: skipping 6 tasks ({', '.join(TOOLATHLON[:3])}, … 3 more): "
        "not applicable to modality=gui (it offers computer, done): the task needs MCP tools"
    )
    assert "run it with modality=mcp, hybrid or all" in line
    summary = json.loads((tmp_path / "summary.json").read_text())
    (group,) = [g for g in summary["skipped"] if g["kind"] == "not_applicable"]
    assert sorted(group["tasks"]) == TOOLATHLON and group["count"] == 6
    assert summary["tasks_skipped"] == 6.0 and summary["episodes_planned"] == 0.0


def test_the_gui_selection_keeps_every_desktop_task_and_only_those(any_machine):
    chosen = job.select_tasks(make(*DESIGN_CARD))
    assert sorted(i for i, kind, _ in chosen.skipped if kind == "not_applicable") == TOOLATHLON
    assert not [t for t in chosen.tasks if t.app == "toolathlon"]
    assert {t.app for t in chosen.tasks} >= {"xterm", "mousepad", "libreoffice_calc", "chromium"}
    # the skipped never reach an episode: the job's plan is the applicable tasks only
    assert len(chosen.tasks) + len(chosen.skipped) == 33 + 6


@pytest.mark.parametrize("preset", ["resolution_study", "size_scaling"])
def test_the_gui_presets_skip_the_mcp_only_tasks(preset, any_machine):
    first = expand([f"experiment={preset}"])[0]
    chosen = job.select_tasks(make(*first))
    assert sorted(i for i, kind, _ in chosen.skipped if kind == "not_applicable") == TOOLATHLON


def test_modality_all_offers_every_family_and_every_task_applies(any_machine, servers_installed):
    cfg = make("modality=all", "provider=openai_compat", servers_installed)
    assert list(cfg.modality.tools) == ["computer", "bash", "mcp", "done"]
    chosen = job.select_tasks(cfg)
    assert not [s for s in chosen.skipped if s[1] == "not_applicable"]
    assert set(TOOLATHLON) <= {t.id for t in chosen.tasks}


def test_cli_cannot_do_toolathlon_tasks_and_mcp_cannot_do_tasks_without_servers(any_machine, servers_installed):
    chosen = job.select_tasks(make("modality=cli", "provider=openai_compat", servers_installed))
    assert sorted(i for i, kind, _ in chosen.skipped if kind == "not_applicable") == TOOLATHLON
    with pytest.raises(UserError, match="every selected task was skipped"):
        job.select_tasks(make("modality=mcp", "provider=openai_compat", "app=xterm", servers_installed))


def task(**kw) -> Task:
    return Task(id="t", app="notes", instruction="x", dir=Path("."), source=Path("task.yaml"), **kw)


def test_the_rule_a_task_is_applicable_when_some_offered_family_is_a_path_to_it():
    # a desktop task with MCP servers (MCPWorld/PC-Canary, mousepad + filesystem): GUI, shell and MCP paths
    assert task_paths(task(), starts_app=True, has_mcp=True) == {"computer", "bash", "mcp"}
    assert not_applicable(task(mcp_servers=["filesystem"]), "gui", ["computer", "done"], True, True) is None
    # declared tools and no app on the desktop: MCP only
    mcp_only = task(mcp_servers=["filesystem"], local_tools=["claim_done"])
    assert task_paths(mcp_only, starts_app=False, has_mcp=True) == {"mcp"}
    assert "needs MCP tools" in not_applicable(mcp_only, "gui", ["computer", "done"], False, True)
    assert not_applicable(mcp_only, "hybrid", ["computer", "mcp", "done"], False, True) is None
    # a desktop task without servers has no MCP path; an app-less task that declares nothing (OSWorld's
    # "os" domain) still has the screen and the shell
    assert "has no MCP servers" in not_applicable(task(), "mcp", ["mcp", "done"], True, False)
    assert not_applicable(task(), "gui", ["computer", "done"], False, False) is None


def test_the_oracle_under_all_replays_the_richest_solution_whose_tools_it_offers(any_machine, servers_installed):
    chosen = job.select_tasks(make("modality=all", servers_installed))  # provider=oracle: the default
    assert not [s for s in chosen.skipped if s[1] == "no_solution"]
    by_id = {t.id: t for t in chosen.tasks}
    assert set(TOOLATHLON) <= set(by_id)
    arrange = by_id["toolathlon/arrange-files"]
    assert arrange.solution.get("all") == arrange.solution.get("hybrid") and arrange.solution.get("all")
    gui_only = next(t for t in chosen.tasks if set(t.solution) == {"gui", "all"})
    assert gui_only.solution.get("all") == gui_only.solution.get("gui")
    # gui offers no mcp: a Toolathlon solution is never borrowed there (and the task is not applicable anyway)
    assert not job.borrow_solution(arrange, "gui", ["computer", "done"])
