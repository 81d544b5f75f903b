"""The Toolathlon census over task folders shaped like the finalpool's (task_config.json as upstream
writes it, preprocess/grader code importing upstream's app helpers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpworld.cli import toolathlon_census as tc

INSTALLED = {"filesystem": None, "terminal": None, "excel": None, "pdf-tools": None, "git": None,
             "memory": None, "word": None, "pptx": None, "playwright": None}
TOOLS = ["claim_done", "handle_overlong_tool_outputs", "manage_context", "history"]


def task(root: Path, name: str, servers: list[str], tools: list[str] = TOOLS, code: str = "") -> Path:
    folder = root / "tasks" / "finalpool" / name
    (folder / "evaluation").mkdir(parents=True)
    (folder / "task_config.json").write_text(json.dumps(
        {"needed_mcp_servers": servers, "needed_local_tools": tools, "meta": {}}, indent=2))
    (folder / "evaluation" / "main.py").write_text(code or "import sys\nsys.exit(0)\n")
    return folder


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    task(tmp_path, "arrange-workspace", ["filesystem", "terminal", "pdf-tools", "excel"])
    task(tmp_path, "sync-todo-to-readme", ["git", "github"], tools=["python_execute", *TOOLS],
         code="from configs.token_key_session import all_token_key_session\n"
              "from utils.app_specific.github.api import get_user_name\n"
              "TOKEN = all_token_key_session.github_token\n")
    task(tmp_path, "k8s-safety-audit", ["k8s", "google_sheet"])
    task(tmp_path, "git-milestone", ["filesystem", "terminal", "fetch"], tools=["web_search", *TOOLS],
         code="from configs.token_key_session import all_token_key_session\n"
              "x = all_token_key_session.github_token\n")
    task(tmp_path, "woocommerce-new-product", ["woocommerce", "emails", "filesystem"])
    return tmp_path


def by_name(rows: list[tc.Census]) -> dict[str, tc.Census]:
    return {r.name: r for r in rows}


def test_each_task_is_accounted_for_with_its_needs_and_verdicts(checkout, monkeypatch):
    monkeypatch.setattr(tc, "catalog_status", lambda: INSTALLED)
    monkeypatch.setenv("KLAVIS_API_KEY", "k")
    rows = by_name(tc.run(checkout))
    assert len(rows) == 5

    local = rows["arrange-workspace"]
    assert (local.needs, local.local, local.klavis, local.accounts) == ("local servers only", "yes", "yes", [])

    gh = rows["sync-todo-to-readme"]
    assert gh.needs == "individual sandboxes" and gh.individual == ["github"] and gh.accounts == ["GitHub"]
    assert gh.local.startswith("no local server github") and "accounts: GitHub" in gh.local
    assert gh.klavis == "yes"

    k8s = rows["k8s-safety-audit"]
    assert k8s.unhosted == ["k8s"] and k8s.individual == ["google_sheets"]
    assert "no Klavis sandbox for k8s" in k8s.klavis and "credential files" in k8s.klavis

    web = rows["git-milestone"]  # GitHub only in its scripts, and web_search
    assert "local tool web_search" in web.local and "local tool web_search" in web.klavis
    assert "its scripts use github without that server" in web.klavis

    woo = rows["woocommerce-new-product"]
    assert woo.individual == ["woocommerce"] and woo.klavis_local == ["emails", "filesystem"]
    assert woo.klavis == "emails: the runner's per-run mail domain is not done"


def test_without_a_klavis_key_nothing_runs_on_klavis_and_the_table_says_why(checkout, monkeypatch, tmp_path):
    monkeypatch.setattr(tc, "catalog_status", lambda: {**INSTALLED, "excel": "'uvx' is not on PATH"})
    monkeypatch.delenv("KLAVIS_API_KEY", raising=False)
    out = tmp_path / "census.md"
    assert tc.main([str(checkout), "--markdown", str(out)]) == 0
    text = out.read_text()
    assert "| runnable with env=klavis (KLAVIS_API_KEY unset) | 0 |" in text
    assert "| runnable here with env=local | 0 |" in text  # excel is not installed here
    row = next(line for line in text.splitlines() if line.startswith("| arrange-workspace ✓ |"))
    assert "not installed: excel (make servers)" in row and "KLAVIS_API_KEY unset" in row


def test_a_folder_without_tasks_is_named(tmp_path):
    with pytest.raises(SystemExit, match="no \\*/task_config.json"):
        tc.run(tmp_path)
