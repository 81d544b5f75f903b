"""Real MCP servers through ServerPool: the npm filesystem server and mcp-server-git over stdio,
excel-mcp-server and our proxy over streamable HTTP; start failures and deadlines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcpworld.core.errors import InfraError
from mcpworld.mcp.client import ServerPool, ToolCallFailed
from mcpworld.mcp.install import load_settings, servers_dir
from mcpworld.mcp.spec import ServerSpec, parse_servers
from tests.fakes.scripted_server import free_port

pytestmark = pytest.mark.slow
CATALOG = load_settings()["catalog"]


def catalog_spec(name: str, workspace: Path) -> ServerSpec:
    spec = parse_servers([name], CATALOG, "test")[0].filled(
        {"workspace": str(workspace), "home": str(workspace), "servers": str(servers_dir())}
    )
    if spec.unavailable():
        pytest.fail(f"{name} is not installed: run `make servers` ({spec.unavailable()})")
    return spec


@pytest.fixture
def events() -> list[tuple[str, dict]]:
    return []


def pool(specs: list[ServerSpec], tmp_path: Path, events: list, **kw) -> ServerPool:
    return ServerPool(specs, tmp_path / "logs", home=tmp_path, on_event=lambda k, **f: events.append((k, f)), **kw)


async def test_filesystem_and_git_over_stdio(tmp_path: Path, events: list) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "a.txt").write_text("hello\n")
    async with pool([catalog_spec("filesystem", ws), catalog_spec("git", ws)], tmp_path, events) as p:
        names = {(t.server, t.name) for t in p.tools}
        assert {("filesystem", "write_file"), ("filesystem", "list_directory"), ("git", "git_status")} <= names
        listing = await p.call("filesystem", "list_directory", {"path": str(ws)})
        assert "[FILE] a.txt" in listing.content[0].text
        await p.call("filesystem", "write_file", {"path": str(ws / "b.txt"), "content": "made by MCP"})
        status = await p.call("git", "git_status", {"repo_path": str(ws)})
        assert "b.txt" in status.content[0].text
        outside = await p.call("filesystem", "read_text_file", {"path": "/etc/hostname"})
        assert outside.is_error  # the filesystem server keeps to its workspace
    assert (ws / "b.txt").read_text() == "made by MCP"
    starts = [f for k, f in events if k == "mcp_start"]
    assert [s["server"] for s in starts] == ["filesystem", "git"] and all(s["ok"] and s["tools"] for s in starts)
    calls = [f for k, f in events if k == "mcp_call"]
    assert [c["tool"] for c in calls] == ["list_directory", "write_file", "git_status", "read_text_file"]
    assert all(c["latency_s"] >= 0 and "args" in c for c in calls) and calls[-1]["ok"] is False


async def test_a_third_party_server_over_streamable_http(tmp_path: Path, events: list) -> None:
    port = free_port()
    spec = ServerSpec(
        name="excel",
        transport="http",
        url=f"http://127.0.0.1:{port}/mcp",
        command=str(servers_dir() / "excel/bin/excel-mcp-server"),
        args=["streamable-http", "--port", str(port), "--allow-dir", str(tmp_path)],
    )
    async with pool([spec], tmp_path, events) as p:
        assert any(t.name == "create_workbook" for t in p.tools)
        made = await p.call("excel", "create_workbook", {"path": str(tmp_path / "book.xlsx")})
        assert not made.is_error
    assert (tmp_path / "book.xlsx").is_file()
    assert [f["transport"] for k, f in events if k == "mcp_start"] == ["http"]


async def test_the_proxy_serves_streamable_http_in_front_of_a_stdio_server(tmp_path: Path, events: list) -> None:
    port = free_port()
    git = catalog_spec("git", tmp_path)
    spec = ServerSpec(
        name="git",
        transport="http",
        url=f"http://127.0.0.1:{port}/mcp?token=proxy-token-for-the-test",
        command=sys.executable,
        env={"MCPWORLD_PROXY_TOKEN": "proxy-token-for-the-test"},
        args=[
            "-m",
            "mcpworld.mcp.proxy",
            "--mode",
            "record",
            "--cassette",
            str(tmp_path / "git.jsonl"),
            "--serve",
            "http",
            "--port",
            str(port),
            "--name",
            "git",
            "--",
            git.command,
        ],
    )
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    async with pool([spec], tmp_path, events) as p:
        status = await p.call("git", "git_status", {"repo_path": str(tmp_path / "repo")})
        assert "branch" in status.content[0].text.lower()
    recorded = (tmp_path / "git.jsonl").read_text()
    assert '"type": "header"' in recorded and '"tool": "git_status"' in recorded


async def test_a_server_that_cannot_start_is_an_infra_error_with_its_stderr(tmp_path: Path, events: list) -> None:
    script = tmp_path / "broken.py"
    script.write_text("import sys\nprint('config file missing: /etc/thing.toml', file=sys.stderr)\nsys.exit(3)\n")
    with pytest.raises(InfraError, match=r"'broken' failed to start.*config file missing"):
        async with pool([ServerSpec(name="broken", command=sys.executable, args=[str(script)])], tmp_path, events):
            pass
    assert events == [("mcp_start", {"server": "broken", "ok": False, "error": "MCPError: Connection closed"})]


async def test_a_call_past_its_deadline_is_a_failed_call_not_a_hang(tmp_path: Path, events: list) -> None:
    script = tmp_path / "slow.py"
    script.write_text(
        "import time\nfrom mcp.server.mcpserver import MCPServer\nserver = MCPServer('slow')\n"
        "@server.tool()\ndef wait(seconds: float) -> str:\n    time.sleep(seconds)\n    return 'done'\n"
        "server.run('stdio')\n"
    )
    async with pool(
        [ServerSpec(name="slow", command=sys.executable, args=[str(script)])], tmp_path, events, call_timeout_s=0.5
    ) as p:
        assert (await p.call("slow", "wait", {"seconds": 0})).content[0].text == "done"
        with pytest.raises(ToolCallFailed, match="no answer within"):
            await p.call("slow", "wait", {"seconds": 3})
    assert [f["ok"] for k, f in events if k == "mcp_call"] == [True, False]


@pytest.mark.parametrize("name", sorted(CATALOG))
async def test_every_catalog_server_starts_and_lists_its_tools(tmp_path: Path, events: list, name: str) -> None:
    spec = parse_servers([name], CATALOG, "test")[0].filled(
        {"workspace": str(tmp_path), "home": str(tmp_path), "servers": str(servers_dir())}
    )
    if name == "pdf-tools" and spec.unavailable():  # needs Python 3.12, which a machine may lack
        from mcpworld.core.interpreters import find_python

        assert find_python("3.12") is None, f"Python 3.12 is here but pdf-tools is not installed: {spec.unavailable()}"
        return
    assert spec.unavailable() is None, f"run `make servers`: {spec.unavailable()}"
    async with pool([spec], tmp_path, events) as p:
        assert len(p.tools) >= 2 and all(t.server == name and t.input_schema for t in p.tools)


async def test_one_proxy_in_front_of_several_servers_prefixes_their_tools(tmp_path: Path, events: list) -> None:
    fs, git = catalog_spec("filesystem", tmp_path), catalog_spec("git", tmp_path)
    spec = ServerSpec(
        name="many",
        command=sys.executable,
        args=[
            "-m",
            "mcpworld.mcp.proxy",
            "--mode",
            "record",
            "--cassette",
            str(tmp_path / "many.jsonl"),
            "--upstream",
            f"fs={fs.command} {tmp_path}",
            "--upstream",
            f"git={git.command}",
        ],
    )
    async with pool([spec], tmp_path, events) as p:
        names = {t.name for t in p.tools}
        assert {"fs-list_directory", "git-git_status"} <= names
        listing = await p.call("many", "fs-list_directory", {"path": str(tmp_path)})
        assert "many.jsonl" in listing.content[0].text


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_servers_never_see_the_harness_secrets(
    tmp_path: Path, events: list, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-harness-secret")
    port = free_port()
    script = tmp_path / "env_server.py"
    script.write_text(
        "import os, sys\nfrom mcp.server.mcpserver import MCPServer\nserver = MCPServer('env')\n"
        "@server.tool()\ndef environment() -> str:\n    return repr(sorted(os.environ.items()))\n"
        f"server.run('stdio') if sys.argv[1:] == [] else server.run('streamable-http', port={port})\n"
    )
    spec = (
        ServerSpec(name="env", command=sys.executable, args=[str(script)], env={"GIVEN": "yes"})
        if transport == "stdio"
        else ServerSpec(
            name="env",
            command=sys.executable,
            args=[str(script), "http"],
            env={"GIVEN": "yes"},
            transport="http",
            url=f"http://127.0.0.1:{port}/mcp",
        )
    )
    async with pool([spec], tmp_path, events) as p:
        seen = (await p.call("env", "environment", {})).content[0].text
    assert "sk-ant-harness-secret" not in seen and "ANTHROPIC_API_KEY" not in seen
    assert "('GIVEN', 'yes')" in seen and f"('HOME', '{tmp_path}')" in seen
