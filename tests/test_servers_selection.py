"""Choosing tasks when MCP servers are involved: a task whose server this machine cannot run is
skipped with the reason, never run into an infra error; a gui run never needs the servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpworld.core.errors import UserError
from mcpworld.mcp.servers import McpSettings, task_servers, withheld
from mcpworld.run.job import choose_tasks
from tests.helpers.config import make


def toolathlon_task(root: Path, name: str, servers: list[str], local: list[str] | None = None) -> None:
    folder = root / "toolathlon" / name
    (folder / "docs").mkdir(parents=True)
    (folder / "evaluation").mkdir()
    (folder / "task_config.json").write_text(
        json.dumps({"needed_mcp_servers": servers, "needed_local_tools": local or ["claim_done"]})
    )
    (folder / "docs" / "task.md").write_text(f"do {name}")
    (folder / "evaluation" / "main.py").write_text("raise SystemExit(0)\n")
    (folder / "solution.json").write_text(json.dumps({"mcp": [{"tool": "local-claim_done", "args": {}}]}))


def test_unrunnable_servers_skip_their_tasks_with_the_reason(tmp_path, capsys, servers_installed):
    toolathlon_task(tmp_path, "fine", ["filesystem"])
    toolathlon_task(tmp_path, "saas", ["notion"])
    toolathlon_task(tmp_path, "search", ["filesystem"], ["claim_done", "web_search"])
    cfg = make("modality=mcp", f"tasks.root={tmp_path}", servers_installed)
    assert [t.id for t in choose_tasks(cfg)] == ["toolathlon/fine"]
    err = capsys.readouterr().err
    assert "skipping toolathlon/saas" in err and "'notion' is not in the catalog" in err
    assert "skipping toolathlon/search" in err and "web_search" in err


def test_a_server_that_is_not_installed_skips_with_the_install_command(tmp_path, capsys):
    toolathlon_task(tmp_path, "fine", ["filesystem"])
    cfg = make("modality=mcp", f"tasks.root={tmp_path}", f"mcp.servers_dir={tmp_path}/none")
    with pytest.raises(UserError, match="every selected task was skipped"):
        choose_tasks(cfg)
    assert "python -m mcpworld.mcp.install" in capsys.readouterr().err
    # replaying cassettes needs no server at all
    cfg = make("modality=mcp", f"tasks.root={tmp_path}", f"mcp.servers_dir={tmp_path}/none", "mcp.proxy.mode=replay")
    assert [t.id for t in choose_tasks(cfg)] == ["toolathlon/fine"]


def test_tasks_without_servers_are_skipped_by_mcp_only(capsys, servers_installed, every_program_installed):
    cfg = make("modality=mcp", "provider=openai_compat", "task=mousepad/append_line", "app=mousepad", servers_installed)
    assert [t.id for t in choose_tasks(cfg)] == ["mousepad/append_line"]  # its app config gives it filesystem
    # app=all runs it too: the servers come from mcpworld/conf/app/mousepad.yaml whichever selection runs it
    (task,) = choose_tasks(make("modality=mcp", "provider=openai_compat", "task=mousepad/append_line", servers_installed))
    assert [s.name for s in task_servers(McpSettings.of(make("modality=mcp")), task)] == ["filesystem"]
    cfg = make("modality=mcp", "provider=openai_compat", "task=xterm/count_errors")
    with pytest.raises(UserError, match="every selected task was skipped"):
        choose_tasks(cfg)
    assert "has no MCP servers, and modality=mcp offers no other tools" in capsys.readouterr().err
    assert [t.id for t in choose_tasks(make("modality=hybrid", "provider=openai_compat", "task=xterm/count_errors"))] == [
        "xterm/count_errors"
    ]


def test_a_native_task_with_a_bad_server_entry_is_a_user_error(tmp_path):
    folder = tmp_path / "notes" / "t"
    folder.mkdir(parents=True)
    (folder / "task.yaml").write_text(
        "app: notes\ninstruction: x\nevaluator: {func: infeasible}\nmcp_servers: [{name: 'bad name', command: x}]\n"
        "solution: {mcp: [{done: {status: DONE}}]}\n"
    )
    with pytest.raises(UserError, match=r"task\.yaml.*'bad name'"):
        choose_tasks(make("modality=mcp", f"tasks.root={tmp_path}"))


def test_withheld_names_what_the_modality_does_not_offer(tmp_path, servers_installed):
    toolathlon_task(tmp_path, "fine", ["filesystem", "git"])
    (task,) = choose_tasks(make("modality=mcp", f"tasks.root={tmp_path}", servers_installed))
    assert withheld(McpSettings.of(make("modality=mcp")), task) == {"computer", "bash"}
    assert withheld(McpSettings.of(make("modality=gui")), task) == {"bash", "filesystem-", "git-", "local-claim_done"}
    assert withheld(McpSettings.of(make("modality=hybrid")), task) == {"bash"}
