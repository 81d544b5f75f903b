"""The Toolathlon census over task folders shaped like the finalpool's (task_config.json as upstream
writes it, preprocess/grader code importing upstream's app helpers): servers placed as the seed's
runner places them, and accounts read from the code that actually runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcpworld.cli import toolathlon_census as tc
from mcpworld.core.interpreters import find_python
from mcpworld.mcp.klavis_catalog import RUNNER, TO_LOCAL_SANDBOX
from mcpworld.tasks.toolathlon_accounts import accounts_of, task_accounts

INSTALLED = {
    "filesystem": None,
    "terminal": None,
    "excel": None,
    "pdf-tools": None,
    "git": None,
    "memory": None,
    "word": None,
    "pptx": None,
    "playwright": None,
}
TOOLS = ["claim_done", "handle_overlong_tool_outputs", "manage_context", "history"]

# the seed's runner (toolathlon_task_run_example.py): these 13 run in the local sandbox, "everything
# else → individual sandbox"; task names map onto them by TASK_TO_LOCAL_SANDBOX_NAME
SEED_LOCAL_SANDBOX_SERVERS = {
    "filesystem",
    "git",
    "terminal",
    "desktop-commander",
    "arxiv",
    "excel",
    "word",
    "powerpoint",
    "code-executor",
    "code-runner",
    "pdf-tools",
    "google_cloud",
    "poste_email_toolathlon",
}
# every server the 108 finalpool tasks name (Klavis-AI/Toolathlon @ 45d20b06, task_config.json)
FINALPOOL_SERVERS = [
    "arxiv-latex",
    "arxiv_local",
    "canvas",
    "emails",
    "excel",
    "fetch",
    "filesystem",
    "git",
    "github",
    "google-cloud",
    "google_calendar",
    "google_forms",
    "google_map",
    "google_sheet",
    "howtocook",
    "huggingface",
    "k8s",
    "memory",
    "notion",
    "pdf-tools",
    "playwright_with_chunk",
    "pptx",
    "rail_12306",
    "scholarly",
    "snowflake",
    "terminal",
    "wandb",
    "woocommerce",
    "word",
    "yahoo-finance",
    "youtube",
    "youtube-transcript",
]


def task(
    root: Path, name: str, servers: list[str], tools: list[str] = TOOLS, code: str = "", files: dict[str, str] | None = None
) -> Path:
    folder = root / "tasks" / "finalpool" / name
    (folder / "evaluation").mkdir(parents=True)
    (folder / "task_config.json").write_text(
        json.dumps({"needed_mcp_servers": servers, "needed_local_tools": tools, "meta": {}}, indent=2)
    )
    (folder / "evaluation" / "main.py").write_text(code or "import sys\nsys.exit(0)\n")
    for rel, text in (files or {}).items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


# what the finalpool's code does: each unused account the old census named, and one of each kind it must keep
SYNC_TODO = """\
from configs.token_key_session import all_token_key_session
from utils.app_specific.github.api import github_get_login
from utils.app_specific.huggingface.datasets import (
    hf_get_namespace, hf_create_dataset
)

async def main():
    token = all_token_key_session.github_token
    github_get_login(token)

if __name__ == "__main__":
    import asyncio
    asyncio.run(main())
"""
OIL_PRICE_PRE = """\
# from utils.app_specific.notion_page_duplicator import NotionPageDuplicator
from utils.general.helper import run_command

def main():
    command = f"uv run -m utils.app_specific.notion.notion_remove_and_duplicate "
    run_command(command)

if __name__ == "__main__":
    main()
"""
SHADOWED = """\
from utils.app_specific.poste.ops import clear_folder
from utils.app_specific.googlesheet.drive_helper import (
    get_google_service, clear_folder
)

def main():
    clear_folder(get_google_service(), "x")

main()
"""
CANVAS_PRE = """\
from utils.app_specific.poste.domain_utils import rewrite_domain
from setup_courses import run

rewrite_domain({"a": "b@mcp.com"})
run()
"""
CANVAS_SETUP = """\
from token_key_session import all_token_key_session

def run():
    return all_token_key_session.canvas_api_token

def never_called():
    from utils.app_specific.snowflake.client import connect
    connect()
"""
RELATIVE_GRADER = """\
from .check_remote import check_remote

if __name__ == "__main__":
    check_remote()
"""
CHECK_REMOTE = """\
import imaplib
from utils.app_specific.woocommerce.client import WooCommerceClient
from utils.app_specific.snowflake.client import connect

def check_remote():
    WooCommerceClient().orders()
    imaplib.IMAP4("localhost")

def unused():
    connect()
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    task(tmp_path, "arrange-workspace", ["filesystem", "terminal", "pdf-tools", "excel"])
    task(tmp_path, "sync-todo-to-readme", ["git", "github"], tools=["python_execute", *TOOLS], code=SYNC_TODO)
    task(
        tmp_path, "oil-price", ["yahoo-finance", "notion", "filesystem", "terminal"], files={"preprocess/main.py": OIL_PRICE_PRE}
    )
    task(tmp_path, "quantitative-financial-analysis", ["google_sheet", "notion"], files={"preprocess/main.py": SHADOWED})
    task(
        tmp_path,
        "canvas-list-test",
        ["canvas", "memory"],
        files={
            "preprocess/main.py": CANVAS_PRE,
            "preprocess/setup_courses.py": CANVAS_SETUP,
            "token_key_session.py": "all_token_key_session = None\n",
        },
    )
    task(tmp_path, "k8s-safety-audit", ["k8s", "google_sheet", "filesystem"])
    task(
        tmp_path,
        "git-milestone",
        ["filesystem", "terminal", "fetch"],
        tools=["web_search", *TOOLS],
        code="from configs.token_key_session import all_token_key_session\nx = all_token_key_session.github_token\n",
    )
    task(
        tmp_path,
        "woocommerce-new-product",
        ["woocommerce", "emails", "filesystem", "playwright_with_chunk"],
        code=RELATIVE_GRADER,
        files={"evaluation/check_remote.py": CHECK_REMOTE, "evaluation/__init__.py": ""},
    )
    return tmp_path


def by_name(rows: list[tc.Census]) -> dict[str, tc.Census]:
    return {r.name: r for r in rows}


@pytest.fixture
def rows(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, tc.Census]:
    monkeypatch.setattr(tc, "catalog_status", lambda: INSTALLED)
    monkeypatch.setenv("KLAVIS_API_KEY", "k")
    return by_name(tc.run(checkout))


@pytest.mark.parametrize("server", FINALPOOL_SERVERS)
def test_every_finalpool_server_is_placed_as_the_seeds_runner_places_it(server):
    runner = "local" if TO_LOCAL_SANDBOX.get(server, server) in SEED_LOCAL_SANDBOX_SERVERS else "individual"
    assert RUNNER.placement(server).kind == runner


def test_each_task_is_accounted_for_with_its_needs_and_verdicts(rows):
    assert len(rows) == 8 and all(r.as_runner for r in rows.values())

    local = rows["arrange-workspace"]
    assert (local.needs, local.local, local.klavis, local.accounts) == ("local servers only", "yes", "yes", [])

    k8s = rows["k8s-safety-audit"]  # the runner asks for a k8s sandbox: the account, not the placement, says no
    assert k8s.unhosted == [] and k8s.individual == ["k8s", "google_sheets"] and k8s.klavis_local == ["filesystem"]
    assert "credential files" in k8s.klavis and "accounts Klavis does not hand over: kind cluster" in k8s.klavis
    assert "no Klavis sandbox" not in k8s.klavis

    web = rows["git-milestone"]  # GitHub only in its scripts, and web_search
    assert "local tool web_search" in web.local and "local tool web_search" in web.klavis
    assert "its scripts use github without that server" in web.klavis
    assert web.needed_by["GitHub"] == ["evaluation/main.py:2 (token_key_session.github_token)"]

    woo = rows["woocommerce-new-product"]  # playwright_with_chunk: an individual sandbox, as the runner has it
    assert woo.individual == ["woocommerce", "playwright_with_chunk"] and woo.klavis_local == ["emails", "filesystem"]
    assert woo.klavis == "emails: the runner's per-run mail domain is not done"

    canvas = rows["canvas-list-test"]
    assert canvas.individual == ["canvas", "localmemory"] and canvas.klavis == "accounts Klavis does not hand over: Canvas"


def test_accounts_come_from_the_code_that_runs(rows):
    gh = rows["sync-todo-to-readme"]  # Hugging Face imported, never called
    assert gh.accounts == ["GitHub"] and gh.klavis == "yes"
    assert gh.needed_by["GitHub"] == [
        "server github",
        "evaluation/main.py:8 (token_key_session.github_token)",
        "+1 more place",
    ]  # (github_get_login, line 9)

    oil = rows["oil-price"]  # notion_page_duplicator only in a comment; notion's helper run as a command
    assert oil.accounts == ["Notion"] and oil.klavis == "yes"
    assert oil.needed_by["Notion"][1].startswith("preprocess/main.py:5 (runs uv run -m utils.app_specific.notion")

    qfa = rows["quantitative-financial-analysis"]  # the Poste.io helper's import is rebound before it is called
    assert qfa.accounts == ["Google", "Notion"]
    assert "preprocess/main.py:7 (utils.app_specific.googlesheet.drive_helper.clear_folder)" in qfa.needed_by["Google"]

    canvas = rows["canvas-list-test"]  # the mail domain helper needs no mailbox; snowflake only in an uncalled function
    assert canvas.accounts == ["Canvas"]
    assert canvas.needed_by["Canvas"] == ["server canvas", "preprocess/setup_courses.py:4 (token_key_session.canvas_api_token)"]

    woo = rows["woocommerce-new-product"]  # a relative import's called function counts, its uncalled one does not
    assert woo.accounts == ["Poste.io mail", "WooCommerce"]
    assert (
        woo.needed_by["WooCommerce"][1]
        == "evaluation/check_remote.py:6 (utils.app_specific.woocommerce.client.WooCommerceClient)"
    )
    assert woo.needed_by["Poste.io mail"][1] == "evaluation/check_remote.py:7 (imaplib)"


def test_the_table_names_each_account_and_where_it_is_needed(checkout, monkeypatch, tmp_path):
    monkeypatch.setattr(tc, "catalog_status", lambda: INSTALLED)
    monkeypatch.setenv("KLAVIS_API_KEY", "k")
    out = tmp_path / "census.md"
    assert tc.main([str(checkout), "--markdown", str(out)]) == 0
    text = out.read_text()
    assert "| servers placed as the seed runner places them | 8 of 8 |" in text
    assert "| runnable with env=klavis (KLAVIS_API_KEY set) | 3 |" in text  # arrange-workspace, oil-price, sync-todo
    assert (
        "| sync-todo-to-readme | GitHub | server github; evaluation/main.py:8 (token_key_session.github_token); "
        "+1 more place |" in text
    )
    assert "notion_page_duplicator" not in text and "Hugging Face" not in text
    assert "does not list them as individual sandboxes: canvas, k8s, playwright_with_chunk." in text


def test_an_account_that_differs_recomputes_the_census(checkout, monkeypatch, tmp_path):
    monkeypatch.setattr(tc, "catalog_status", lambda: INSTALLED)
    monkeypatch.setenv("KLAVIS_API_KEY", "k")
    out = tmp_path / "census.md"
    local = ",".join(sorted(SEED_LOCAL_SANDBOX_SERVERS | {"localmemory"}))
    assert tc.main([str(checkout), "--markdown", str(out), "--local-sandbox", local, "--no-sandbox", "k8s"]) == 0
    text = out.read_text()
    assert "| servers placed as the seed runner places them | 6 of 8 |" in text  # memory local, k8s nowhere
    row = next(line for line in text.splitlines() if line.startswith("| k8s-safety-audit |"))
    assert "no Klavis sandbox for k8s on this account" in row


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


NEW_SYNTAX = """\
from utils.app_specific.github.api import github_get_login
from utils.app_specific.huggingface.datasets import hf_get_namespace
data = {"a": 1}
print(f"{data["a"]}")  # Python 3.12's f-strings
github_get_login(None)
"""


def test_graders_in_newer_syntax_are_read_by_a_newer_python(tmp_path):
    folder = task(tmp_path, "vlm-history-completer", ["github"], code=NEW_SYNTAX)
    if sys.version_info >= (3, 12):
        assert set(task_accounts(folder).by_account()) == {"GitHub"}
        return
    assert task_accounts(folder).unparsed == ["evaluation/main.py"]
    as_text = accounts_of([folder], python=None)[folder]  # no 3.12 here: the lines that are not comments
    assert as_text.unparsed and set(as_text.by_account()) == {"GitHub", "Hugging Face"}
    python = find_python("3.12")
    if python is None:
        pytest.skip("no Python 3.12 on this machine")
    exact = accounts_of([folder], python=python)[folder]
    assert not exact.unparsed and [u.where for u in exact.by_account()["GitHub"]] == ["evaluation/main.py:5"]


def test_a_folder_without_tasks_is_named(tmp_path):
    with pytest.raises(SystemExit, match=r"no \*/task_config\.json"):
        tc.run(tmp_path)
