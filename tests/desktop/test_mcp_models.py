"""Models over HTTP driving MCP tools through ``python -m mcpworld``: the tool schemas a provider
sends, the MCP result the model gets back, and names made safe for Anthropic's name rule."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import results, run_cli

pytestmark = [pytest.mark.desktop, pytest.mark.slow]

NOTES_SERVER = """
from pathlib import Path
from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")

@server.tool(name="notes.append")
def append(line: str) -> str:
    \"\"\"Append a line to notes.txt in the workspace.\"\"\"
    with Path("notes.txt").open("a") as f:
        f.write(line + "\\n")
    return f"appended: {line}"

server.run("stdio")
"""


def suite(tmp_path: Path, servers: str) -> Path:
    folder = tmp_path / "suite" / "notes" / "answer"
    folder.mkdir(parents=True)
    (folder / "task.yaml").write_text(
        "app: notes\ninstruction: Put the answer 42 in answer.txt (or notes.txt).\n"
        f"mcp_servers: {servers}\n"
        "evaluator:\n  func: check_include_exclude\n"
        "  result: {type: vm_command_line, command: 'cat ~/answer.txt ~/notes.txt 2>/dev/null', shell: true}\n"
        "  expected: {type: rule, rules: {include: ['42'], exclude: []}}\n"
    )
    return tmp_path / "suite"


def test_an_openai_compatible_model_uses_an_mcp_server(tmp_path):
    from tests.fakes.openai_server import FakeOpenAIServer

    root = suite(tmp_path, "[filesystem]")
    script = [
        {"tool_calls": [{"name": "filesystem-write_file", "arguments": {"path": "answer.txt", "content": "42"}}]},
        {"tool_calls": [{"name": "done", "arguments": {"status": "DONE"}}]},
    ]
    with FakeOpenAIServer(script, model="qwen3-vl:8b") as server:
        proc = run_cli(
            tmp_path,
            "model=qwen3vl_8b",
            "model.profile=generic",
            "model.id=qwen3-vl:8b",  # our tool format
            "provider=openai_compat",
            f"provider.base_url={server.base_url}",
            "modality=mcp",
            f"tasks.root={root}",
            "tracking=none",
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        first, second = server.requests
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert "filesystem-write_file" in tools and "done" in tools and not {"computer", "bash"} & set(tools)
    assert tools["filesystem-write_file"]["parameters"]["type"] == "object"
    assert "path" in tools["filesystem-write_file"]["parameters"]["properties"]
    system = first["messages"][0]["content"]
    assert "desktop" not in system and "filesystem-write_file" in system
    answer = second["messages"][-1]
    assert answer["role"] == "tool" and "Successfully wrote to answer.txt" in answer["content"]
    (result,) = results(tmp_path / "run")
    assert (result["status"], result["tool_calls"]["filesystem-write_file"]["ok"]) == ("success", 1)


def test_anthropic_gets_safe_names_for_dotted_mcp_tools_in_hybrid(tmp_path):
    from tests.fakes.anthropic_server import FakeAnthropicServer

    server_file = tmp_path / "notes_server.py"
    server_file.write_text(NOTES_SERVER)
    root = suite(tmp_path, f"[{{name: notes, command: {sys.executable}, args: [{server_file}], cwd: '{{home}}'}}]")
    script = [
        {"tool_uses": [{"name": "notes-notes_append", "input": {"line": "the answer is 42"}}]},
        {"tool_uses": [{"name": "done", "input": {"status": "DONE"}}]},
    ]
    with FakeAnthropicServer(script, model="claude-sonnet-4-5-20250929") as server:  # preflight looks the model up
        proc = run_cli(
            tmp_path,
            "model=claude_sonnet_4_5",
            f"provider.base_url={server.base_url}",
            "modality=hybrid",
            f"tasks.root={root}",
            "tracking=none",
            env={"ANTHROPIC_API_KEY": "sk-ant-test"},
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        first, second = server.requests  # the fake answers 400 to a name outside ^[a-zA-Z0-9_-]{1,128}$
    names = [t["name"] for t in first["tools"]]
    assert "computer" in names and "notes-notes_append" in names
    (custom,) = [t for t in first["tools"] if t["name"] == "notes-notes_append"]
    assert custom["input_schema"]["properties"]["line"]["type"] == "string"
    assert "[notes] Append a line" in custom["description"]
    returned = json.dumps(second["messages"][-1]["content"])
    assert "appended: the answer is 42" in returned
    (result,) = results(tmp_path / "run")
    assert result["status"] == "success" and result["hallucinations"] == 0
