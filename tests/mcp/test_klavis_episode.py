"""``env=klavis``: an episode's servers come from the (fake) Klavis sandbox API. The workspace is
uploaded, the agent's MCP calls go over streamable HTTP to the sandbox's URL (here our proxy in
front of a real filesystem server rooted at the fake's sandbox folders), the sandbox's workspace
comes back before grading, and the sandbox is released."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcpworld.core.task import Task
from mcpworld.env.local.home import HomeEnvironment
from mcpworld.mcp.install import servers_dir
from mcpworld.mcp.servers import McpSettings, episode_servers
from tests.fakes.klavis_server import FakeKlavisServer
from tests.fakes.scripted_server import free_port
from tests.helpers.config import make

pytestmark = pytest.mark.slow
PROXY_TOKEN = "proxy-token-for-the-test"  # the proxy standing in for Klavis's server takes the token in its URL


@pytest.fixture
def sandbox_filesystem_url(tmp_path: Path):
    """A real filesystem MCP server over HTTP, serving whatever folder the fake gives sandboxes."""

    def start(root: Path) -> str:
        port = free_port()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mcpworld.mcp.proxy",
                "--mode",
                "record",
                "--cassette",
                str(tmp_path / "fs.jsonl"),
                "--serve",
                "http",
                "--port",
                str(port),
                "--name",
                "filesystem",
                "--",
                str(servers_dir() / "npm/node_modules/.bin/mcp-server-filesystem"),
                str(root),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=dict(os.environ, MCPWORLD_PROXY_TOKEN=PROXY_TOKEN),
        )
        started.append(proc)
        return f"http://127.0.0.1:{port}/mcp?token={PROXY_TOKEN}"  # a URL alone, as Klavis gives it

    started: list[subprocess.Popen] = []
    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=10)


async def test_an_episode_on_a_klavis_sandbox(tmp_path: Path, sandbox_filesystem_url) -> None:
    cfg = make("env=klavis", "modality=mcp", "env.klavis.api_key=test-key")
    (tmp_path / "home" / "workspace").mkdir(parents=True)
    env = HomeEnvironment(tmp_path / "home")
    (tmp_path / "home" / "workspace" / "a.txt").write_text("from the harness")
    task = Task(
        id="t/klavis",
        app="t",
        instruction="x",
        dir=tmp_path,
        source=tmp_path / "task.yaml",
        mcp_servers=["filesystem"],
        workspace="~/workspace",
    )
    events: list[tuple[str, dict]] = []
    with FakeKlavisServer(token="test-key") as fake:
        url = sandbox_filesystem_url(fake._root)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until the proxy listens
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", int(url.split(":")[2].split("/")[0]))) == 0:
                    break
            time.sleep(0.1)
        fake.urls = {"filesystem": url}
        cfg.env.klavis.base_url = fake.base_url
        servers = episode_servers(McpSettings.of(cfg), task, env, tmp_path / "episode", lambda k, **f: events.append((k, f)))
        async with servers as pool:
            (sandbox,) = [f["sandbox"] for k, f in events if k == "klavis_sandbox"]
            remote = fake.workspace(sandbox)
            assert (remote / "a.txt").read_text() == "from the harness"  # uploaded and initialised
            read = await pool.call("filesystem", "read_text_file", {"path": str(remote / "a.txt")})
            assert read.content[0].text == "from the harness"
            await pool.call("filesystem", "write_file", {"path": str(remote / "b.txt"), "content": "by the agent"})
        assert fake.releases == 1
    # the sandbox's workspace came back where the grader looks
    assert (tmp_path / "home" / "workspace" / "b.txt").read_text() == "by the agent"
    assert [f["transport"] for k, f in events if k == "mcp_start"] == ["http"]
