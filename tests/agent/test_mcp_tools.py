"""MCP tools as the agent sees them (names, results, overlong outputs), Toolathlon's local tools,
and the loop's modality enforcement and image hand-off for MCP observations."""

from __future__ import annotations

import base64
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp import types
from PIL import Image

from mcpworld.agent.loop import AgentLoop, Limits
from mcpworld.agent.providers.base import Provider, Reply, ToolCall
from mcpworld.agent.tools.base import Observation, Tool, ToolError
from mcpworld.agent.tools.done import DoneTool
from mcpworld.agent.tools.local import PAGE, local_tools
from mcpworld.agent.tools.mcp import McpTool, Overlong, mcp_tools, render_result, tool_name
from mcpworld.core.result import EpisodeResult
from mcpworld.env.local.home import HomeEnvironment
from mcpworld.mcp.client import RemoteTool, ToolCallFailed
from mcpworld.telemetry.trace import Trace, read_trace


def png_bytes(color: str = "red") -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (4, 3), color).save(buf, "PNG")
    return buf.getvalue()


def text(t: str) -> types.TextContent:
    return types.TextContent(type="text", text=t)


def image(data: bytes, mime: str = "image/png") -> types.ImageContent:
    return types.ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type=mime)


class FakePool:
    """What McpTool needs of a ServerPool: ``tools`` and ``call``; records every call."""

    def __init__(self, answer: Any = None, tools: list[RemoteTool] | None = None) -> None:
        self.answer, self.tools = answer, tools or []
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    async def call(self, server: str, tool: str, args: dict[str, Any]) -> Any:
        self.calls.append((server, tool, args))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


def remote(server: str = "filesystem", name: str = "read_file") -> RemoteTool:
    return RemoteTool(server, name, "Read a file.", {"properties": {"path": {"type": "string"}}})


@pytest.fixture
def overlong(tmp_path: Path) -> Overlong:
    return Overlong(tmp_path / "overlong", max_chars=50)


# --------------------------------------------------------------------------- tool_name


@pytest.mark.parametrize(
    "server, tool, expected",
    [
        ("filesystem", "read_file", "filesystem-read_file"),
        ("github", "repos.list", "github-repos_list"),
        ("k8s", "pods/get:logs", "k8s-pods_get_logs"),
        ("my.server", "a b", "my_server-a_b"),
    ],
)
def test_tool_name_is_server_dash_tool_made_safe(server: str, tool: str, expected: str) -> None:
    assert tool_name(server, tool) == expected


def test_long_tool_names_are_cut_with_a_hash_and_stay_distinct() -> None:
    a = tool_name("server", "x" * 80 + "_alpha")
    b = tool_name("server", "x" * 80 + "_beta")
    assert len(a) <= 64 and len(b) <= 64 and a != b
    assert a.startswith("server-xxxx") and all(c.isalnum() or c in "_-" for c in a)
    assert tool_name("s", "t" * 62) == "s-" + "t" * 62  # exactly 64: untouched
    assert tool_name("s", "t" * 63) != "s-" + "t" * 62 and len(tool_name("s", "t" * 63)) == 64


# --------------------------------------------------------------------------- render_result


def test_every_block_of_a_result_is_passed_on() -> None:
    png = png_bytes()
    result = types.CallToolResult(
        content=[
            text("first"),
            image(png),
            text("second"),
            types.EmbeddedResource(type="resource", resource=types.TextResourceContents(uri="file:///x", text="inside")),
        ],
        is_error=False,
    )
    rendered, images = render_result(result)
    assert rendered == "first\nsecond\ninside"
    assert images == [(png, "png")]
    assert Image.open(io.BytesIO(images[0][0])).size == (4, 3)


def test_unknown_image_types_and_binary_resources_are_noted_not_sent() -> None:
    result = types.CallToolResult(
        content=[
            image(b"GIF-ish", "image/x-weird"),
            types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(uri="file:///b.bin", blob="AAAA")),
        ]
    )
    rendered, images = render_result(result)
    assert images == []
    assert "image/x-weird omitted" in rendered and "file:///b.bin omitted" in rendered


def test_structured_content_is_used_only_without_content() -> None:
    bare = types.CallToolResult(content=[], structured_content={"rows": [1, 2], "name": "é"})
    assert json.loads(render_result(bare)[0]) == {"rows": [1, 2], "name": "é"}
    both = types.CallToolResult(content=[text("summary")], structured_content={"rows": [1]})
    assert render_result(both) == ("summary", [])


# --------------------------------------------------------------------------- Overlong


def test_overlong_output_is_cut_and_kept_in_full(overlong: Overlong) -> None:
    assert overlong.cut("short", "filesystem-read_file") == "short"
    full = "".join(f"line {i}\n" for i in range(100))
    shown = overlong.cut(full, "filesystem-read_file")
    assert shown.startswith(full[:50]) and full[50:60] not in shown
    (output_id,) = [p.stem for p in (overlong.folder).glob("*.txt")]
    assert repr(output_id) in shown and "local-view_overlong_tooloutput" in shown
    assert overlong.read(output_id) == full


@pytest.mark.parametrize("bad", ["../secret", "/etc/passwd", "a/b", "001-x.txt", ""])
def test_overlong_ids_with_path_characters_are_refused(overlong: Overlong, bad: str) -> None:
    overlong.cut("y" * 100, "t")
    (overlong.folder.parent / "secret.txt").write_text("do not read")
    with pytest.raises(KeyError, match="saved: 001-t"):
        overlong.read(bad)


# --------------------------------------------------------------------------- McpTool / mcp_tools


async def test_mcp_tool_calls_the_server_and_returns_every_block(overlong: Overlong) -> None:
    png = png_bytes()
    pool = FakePool(types.CallToolResult(content=[text("a"), image(png), text("b")], is_error=False))
    tool = McpTool(pool, remote(), overlong)  # type: ignore[arg-type]
    assert tool.name == "filesystem-read_file" and tool.family == "mcp"
    assert tool.parameters["type"] == "object" and "path" in tool.parameters["properties"]
    obs = await tool.call({"path": "/tmp/x"})
    assert pool.calls == [("filesystem", "read_file", {"path": "/tmp/x"})]
    assert (obs.text, obs.ok, obs.images) == ("a\nb", True, [(png, "png")])


async def test_mcp_tool_error_result_is_not_ok(overlong: Overlong) -> None:
    pool = FakePool(types.CallToolResult(content=[text("ENOENT: no such file")], is_error=True))
    obs = await McpTool(pool, remote(), overlong).call({"path": "nope"})  # type: ignore[arg-type]
    assert obs.ok is False and "ENOENT" in obs.text


async def test_mcp_tool_failed_call_is_an_observation_not_an_exception(overlong: Overlong) -> None:
    pool = FakePool(ToolCallFailed("server filesystem died: broken pipe"))
    obs = await McpTool(pool, remote(), overlong).call({})  # type: ignore[arg-type]
    assert obs.ok is False and obs.text.startswith("Error:") and "broken pipe" in obs.text


async def test_mcp_tool_long_output_goes_through_overlong(overlong: Overlong) -> None:
    pool = FakePool(types.CallToolResult(content=[text("z" * 500)]))
    obs = await McpTool(pool, remote(), overlong).call({})  # type: ignore[arg-type]
    assert len(obs.text) < 500 and "001-filesystem-read_file" in obs.text
    assert overlong.read("001-filesystem-read_file") == "z" * 500


def test_mcp_tools_names_every_tool_and_refuses_duplicates(overlong: Overlong) -> None:
    pool = FakePool(tools=[remote("fs", "read"), remote("fs", "write")])
    assert list(mcp_tools(pool, overlong)) == ["fs-read", "fs-write"]  # type: ignore[arg-type]
    clash = FakePool(tools=[remote("fs", "a.b"), remote("fs", "a/b")])
    with pytest.raises(ValueError, match="fs-a_b"):
        mcp_tools(clash, overlong)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- local tools

ALL_LOCAL = ["claim_done", "python_execute", "sleep", "handle_overlong_tool_outputs"]


@pytest.fixture
def env(tmp_path: Path):
    (tmp_path / "home").mkdir()
    environment = HomeEnvironment(tmp_path / "home")  # real shell: run_bounded with scrubbed_env
    yield environment
    environment.close()


def locals_for(env: HomeEnvironment, overlong: Overlong, names: list[str] = ALL_LOCAL) -> dict[str, Tool]:
    return local_tools(names, env, "~/ws", overlong, max_output=2000)


def test_local_tools_have_toolathlons_names(env: HomeEnvironment, overlong: Overlong) -> None:
    assert set(locals_for(env, overlong)) == {
        "local-claim_done",
        "local-python-execute",
        "local-sleep",
        "local-view_overlong_tooloutput",
        "local-search_overlong_tooloutput",
    }
    assert list(locals_for(env, overlong, ["sleep"])) == ["local-sleep"]
    assert locals_for(env, overlong, ["history", "manage_context"]) == {}
    assert all(t.family == "mcp" for t in locals_for(env, overlong).values())


async def test_claim_done_ends_with_done(env: HomeEnvironment, overlong: Overlong) -> None:
    obs = await locals_for(env, overlong)["local-claim_done"].call({})
    assert obs.final == "DONE" and obs.ok


async def test_python_execute_runs_in_the_workspace(env: HomeEnvironment, overlong: Overlong) -> None:
    tool = locals_for(env, overlong)["local-python-execute"]
    code = "import os, sys\nopen('made.txt', 'w').write('hi')\nprint(os.getcwd())\nprint('oops', file=sys.stderr)"
    obs = await tool.call({"code": code})
    workspace = env.home / "ws"
    assert (workspace / "made.txt").read_text() == "hi"
    assert obs.ok
    assert str(workspace) in obs.text.split("=== STDERR ===")[0]
    assert "oops" in obs.text.split("=== STDERR ===")[1]
    assert "return code 0" in obs.text


async def test_python_execute_reports_a_failing_script(env: HomeEnvironment, overlong: Overlong) -> None:
    tool = locals_for(env, overlong)["local-python-execute"]
    obs = await tool.call({"code": "raise SystemExit(3)"})
    assert obs.ok is False and "return code 3" in obs.text
    obs = await tool.call({"code": "1/0"})
    assert obs.ok is False and "ZeroDivisionError" in obs.text
    with pytest.raises(ToolError):
        await tool.call({"code": "   "})


async def test_python_execute_timeout_is_reported(env: HomeEnvironment, overlong: Overlong) -> None:
    obs = await locals_for(env, overlong)["local-python-execute"].call(
        {"code": "import time; print('start', flush=True); time.sleep(30)", "timeout": 1}
    )
    assert obs.ok is False and "timed out" in obs.text


async def test_python_execute_does_not_see_the_harness_secrets(
    env: HomeEnvironment, overlong: Overlong, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    assert os.environ["ANTHROPIC_API_KEY"] == "sk-secret"
    obs = await locals_for(env, overlong)["local-python-execute"].call(
        {"code": "import os; print(repr(os.environ.get('ANTHROPIC_API_KEY'))); print(dict(os.environ))"}
    )
    assert obs.ok and "None" in obs.text and "sk-secret" not in obs.text


@pytest.mark.parametrize("filename", ["..", ".", "../../evil", "run"])
async def test_python_execute_any_filename_stays_a_script_in_its_folder(
    env: HomeEnvironment, overlong: Overlong, filename: str
) -> None:
    # '..' once named the folder itself: IsADirectoryError ended the episode as agent_error
    tool = locals_for(env, overlong)["local-python-execute"]
    obs = await tool.call({"code": "print('ran')", "filename": filename})
    assert obs.ok and "ran" in obs.text
    scripts = list((env.resolve("~/ws") / ".python_tmp").iterdir())
    assert len(scripts) == 1 and scripts[0].suffix == ".py" and scripts[0].is_file()


async def test_sleep_refuses_more_than_a_minute(env: HomeEnvironment, overlong: Overlong) -> None:
    tool = locals_for(env, overlong)["local-sleep"]
    assert (await tool.call({"seconds": 0.01})).ok
    for bad in (61, -1, float("nan")):
        with pytest.raises(ToolError, match="between 0 and 60"):
            await tool.call({"seconds": bad})


async def test_view_pages_a_saved_output(env: HomeEnvironment, overlong: Overlong) -> None:
    full = "a" * PAGE + "b" * PAGE + "c" * 5
    overlong.cut(full, "srv-tool")
    view = locals_for(env, overlong)["local-view_overlong_tooloutput"]
    first = await view.call({"id": "001-srv-tool"})
    assert first.text == "[page 1 of 3]\n" + "a" * PAGE
    third = await view.call({"id": "001-srv-tool", "page": 3})
    assert third.text == "[page 3 of 3]\nccccc"
    for page in (4, -1):
        with pytest.raises(ToolError, match="between 1 and 3"):
            await view.call({"id": "001-srv-tool", "page": page})
    with pytest.raises(ToolError, match="no saved output"):
        await view.call({"id": "../etc/passwd"})


async def test_search_finds_lines_by_regex(env: HomeEnvironment, overlong: Overlong) -> None:
    overlong.cut("\n".join(["alpha 1", "beta 2", "alpha 33", "gamma"] * 10), "srv-tool")
    search = locals_for(env, overlong)["local-search_overlong_tooloutput"]
    hits = (await search.call({"id": "001-srv-tool", "pattern": r"alpha \d{2}"})).text.splitlines()
    assert hits[:2] == ["3: alpha 33", "7: alpha 33"] and len(hits) == 10
    assert (await search.call({"id": "001-srv-tool", "pattern": "delta"})).text == "no line matches"
    with pytest.raises(ToolError, match="regular expression"):
        await search.call({"id": "001-srv-tool", "pattern": "(unclosed"})


# --------------------------------------------------------------------------- the loop: modality and images


class Scripted(Provider):
    def __init__(self, replies: list[Reply]) -> None:
        self.replies, self.sent = list(replies), []

    async def complete(self, messages, tools):
        self.sent.append(json.loads(json.dumps(messages)))
        return self.replies.pop(0) if self.replies else Reply(tool_calls=[ToolCall("end", "local-claim_done", {})])


class Fixed(Tool):
    """An MCP-style tool returning a fixed observation; counts its calls."""

    family, description, parameters = "mcp", "fixed", {"type": "object", "properties": {}}

    def __init__(self, name: str, obs: Observation) -> None:
        self.name, self.obs, self.calls = name, obs, 0

    async def call(self, args: dict[str, Any]) -> Observation:
        self.calls += 1
        return self.obs


def one(name: str, n: int = 0, **args: Any) -> Reply:
    return Reply(tool_calls=[ToolCall(f"c{n}", name, args)])


async def run_loop(tmp_path: Path, replies: list[Reply], tools: dict[str, Tool], **kw: Any):
    provider = Scripted(replies)
    trace = Trace(tmp_path / "trace.jsonl")
    result = EpisodeResult(task_id="app/task", app="app")
    loop = AgentLoop(provider, tools, Limits(10, 10, 10.0), trace, result, **kw)
    try:
        await loop.run("system", "task", None)
    finally:
        trace.close()
    hallucinations = [(e["tool"], e["kind"]) for e in read_trace(tmp_path / "trace.jsonl") if e["type"] == "hallucination"]
    return provider, result, hallucinations


def mcp_modality() -> dict[str, Tool]:
    from mcpworld.agent.tools.local import ClaimDone

    return {
        "github-get_issue": Fixed("github-get_issue", Observation("issue #1")),
        "local-claim_done": ClaimDone(),
        "done": DoneTool(),
    }


async def test_calls_outside_the_modality_and_invented_tools_are_told_apart(tmp_path: Path) -> None:
    tools = mcp_modality()
    replies = [
        one("computer", 0, action="left_click", coordinate=[1, 1]),
        one("filesystem-write_file", 1, path="x", content="y"),
        one("github-get_issue", 2),
        one("teleport", 3),
    ]
    _, result, hallucinations = await run_loop(tmp_path, replies, tools, withheld=frozenset({"computer", "bash", "filesystem-"}))
    assert hallucinations == [
        ("computer", "outside_modality"),
        ("filesystem-write_file", "outside_modality"),
        ("teleport", "unknown_tool"),
    ]
    assert tools["github-get_issue"].calls == 1  # type: ignore[attr-defined]
    assert result.termination == "done" and result.final_action == "DONE" and result.hallucinations == 3


async def test_without_withheld_a_foreign_tool_is_just_unknown(tmp_path: Path) -> None:
    _, _, hallucinations = await run_loop(
        tmp_path, [one("filesystem-write_file")], mcp_modality(), withheld=frozenset({"filesystem"})
    )  # a name, not a "<server>-" prefix
    assert hallucinations == [("filesystem-write_file", "unknown_tool")]


async def test_mcp_images_reach_the_model_and_the_disk(tmp_path: Path) -> None:
    png = png_bytes("blue")
    tools = mcp_modality()
    tools["shot-take"] = Fixed("shot-take", Observation("a screenshot", images=[(png, "png")]))
    saved: list[tuple[bytes, str]] = []

    def save(data: bytes, fmt: str) -> str:
        saved.append((data, fmt))
        return f"screens/{len(saved)}.{fmt}"

    provider, result, _ = await run_loop(tmp_path, [one("shot-take")], tools, save_image=save)
    assert saved == [(png, "png")]
    after = provider.sent[1]
    # ``images``: how many of the images that follow are this call's (for providers that nest them in the result)
    assert after[-2] == {"role": "tool", "tool_call_id": "c0", "content": "a screenshot", "images": 1}
    (part,) = after[-1]["content"]
    assert after[-1]["role"] == "user" and part["type"] == "image_url"
    url = part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == png
    observed = [e for e in read_trace(tmp_path / "trace.jsonl") if e["type"] == "observation"]
    assert [(e["screenshot"], e["step"]) for e in observed] == [("screens/1.png", 1)]
    assert result.termination == "done"
