"""An episode of a task that needs an individual Klavis sandbox (a GitHub-shaped Toolathlon task),
end to end through ``python -m mcpworld env=klavis`` against the fake Klavis API: the local sandbox
serves the workspace (a real filesystem MCP server over streamable HTTP), the github sandbox a real
MCP server of its own, the task's preprocess and grader both see the GitHub account as
``KLAVIS_GITHUB_TOKEN``, the oracle passes, and nothing stays acquired afterwards."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mcpworld.mcp.install import servers_dir
from tests.fakes.klavis_server import ACCOUNTS, FakeKlavisServer
from tests.fakes.scripted_server import free_port
from tests.helpers.cli import results, run_cli

pytestmark = [pytest.mark.desktop, pytest.mark.slow]
KEY = "sk-klavis-E2E-24680"
CHECKOUT = Path(__file__).resolve().parents[1] / "data" / "toolathlon_klavis_fixture"
PROXY_TOKEN = "proxy-token-for-the-test"  # the proxy standing in for Klavis's server takes the token in its URL


def serve_filesystem(root: Path, name: str, cassette: Path) -> tuple[subprocess.Popen, str]:
    """A real filesystem MCP server rooted at ``root``, over streamable HTTP (our proxy in front)."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpworld.mcp.proxy",
            "--mode",
            "record",
            "--cassette",
            str(cassette),
            "--serve",
            "http",
            "--port",
            str(port),
            "--name",
            name,
            "--",
            str(servers_dir() / "npm/node_modules/.bin/mcp-server-filesystem"),
            str(root),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, MCPWORLD_PROXY_TOKEN=PROXY_TOKEN),
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    return proc, f"http://127.0.0.1:{port}/mcp?token={PROXY_TOKEN}"  # a URL alone, as Klavis gives it


@pytest.fixture
def sandbox_root():
    """The fake's sandbox workspace: a folder the episode's servers and the oracle both name."""
    path = Path(tempfile.mkdtemp(prefix="mcpworld-klavis-data-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_github_task_runs_end_to_end_on_individual_sandboxes(tmp_path: Path, sandbox_root: Path) -> None:
    repo = tmp_path / "github-repo"
    repo.mkdir()
    servers = []
    try:
        with FakeKlavisServer(token=KEY) as fake:
            fake.fixed_workspace = sandbox_root
            fs, fs_url = serve_filesystem(sandbox_root, "filesystem", tmp_path / "fs.jsonl")
            gh, gh_url = serve_filesystem(repo, "github", tmp_path / "gh.jsonl")
            servers += [fs, gh]
            fake.urls = {"filesystem": fs_url, "github": gh_url}
            proc = run_cli(
                tmp_path,
                "env=klavis",
                "modality=mcp",
                "provider=oracle",
                "tracking=none",
                f"tasks.root={CHECKOUT / 'tasks' / 'finalpool'}",
                f"toolathlon.python={sys.executable}",
                f"env.klavis.base_url={fake.base_url}",
                f"env.klavis.leases_dir={tmp_path / 'leases'}",
                f"env.klavis.workspace={sandbox_root}",
                env={"KLAVIS_API_KEY": KEY},
            )
            assert proc.returncode == 0, proc.stderr[-3000:]
            (r,) = results(tmp_path / "run")
            assert r["status"] == "success", r["reason"]
            assert r["metrics"][0]["name"] == "grader" and r["metrics"][0]["reason"] == "pass"
            assert fake.held() == [] and not list((tmp_path / "leases").glob("*.json"))
            (github,) = fake.individual.values()
            assert github["server"] == "github" and github["status"] == "idle"
            (trace,) = (tmp_path / "run").rglob("trace.jsonl")
            events = [json.loads(line) for line in trace.read_text().splitlines()]
            starts = {e["server"]: e["transport"] for e in events if e["type"] == "mcp_start"}
            assert starts == {"filesystem": "http", "github": "http"}
            assert any(e["type"] == "klavis_individual" and e["server"] == "github" for e in events)
            token = ACCOUNTS["github"]["auth_data"]["access_token"]
            for path in (tmp_path / "run").rglob("*"):  # the account's token is in no artifact
                if path.is_file():
                    assert token not in path.read_text(errors="replace"), path
    finally:
        for p in servers:
            p.terminate()
            p.wait(timeout=10)
    # the preprocess's output went up to the sandbox, and the agent wrote its answer there
    assert (sandbox_root / "repo.txt").read_text() == "klavis-test-1/release-notes\n"
    assert "login loop" in (sandbox_root / "answer.txt").read_text()
