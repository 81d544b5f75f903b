"""MCP server specs (mcpworld.mcp.spec) and the pure parts of the record/replay/fault proxy."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcpworld.core.errors import UserError
from mcpworld.mcp.install import load_settings
from mcpworld.mcp.proxy import Cassette, _upstreams, parser, proxied
from mcpworld.mcp.spec import ServerSpec, parse_servers

WHERE = "tasks/demo/task.yaml"
CATALOG = {
    "filesystem": {"command": "{servers}/bin/fs", "args": ["{workspace}"], "env": {"A": "1"}, "install": {"npm": "fs@1"}},
    "memory": {"command": "mem", "env": {"FILE": "{workspace}/m.json"}},
}


# --- parse_servers -----------------------------------------------------------------------------------


def test_catalog_name_as_a_string():
    (spec,) = parse_servers(["filesystem"], CATALOG, WHERE)
    assert spec == ServerSpec(name="filesystem", command="{servers}/bin/fs", args=["{workspace}"], env={"A": "1"})


def test_keys_next_to_a_catalog_name_override_it_and_env_is_merged():
    (spec,) = parse_servers([{"name": "filesystem", "env": {"B": "2", "A": "9"}, "args": ["x"]}], CATALOG, WHERE)
    assert spec.command == "{servers}/bin/fs" and spec.args == ["x"]
    assert spec.env == {"A": "9", "B": "2"}


def test_the_real_catalog_names_parse():
    catalog = load_settings()["catalog"]
    specs = parse_servers(sorted(catalog), catalog, WHERE)
    by_name = {s.name: s for s in specs}
    assert set(by_name) == set(catalog) and "filesystem" in by_name
    assert all(s.transport == "stdio" and s.command for s in specs)
    assert "{workspace}" in by_name["filesystem"].args


def test_an_explicit_stdio_server():
    (spec,) = parse_servers([{"name": "my_tool", "command": "python3", "args": ["-m", "srv", 7]}], {}, WHERE)
    assert spec == ServerSpec(name="my_tool", command="python3", args=["-m", "srv", "7"], transport="stdio")


def test_an_http_server_with_a_url():
    (spec,) = parse_servers([{"name": "remote", "url": "http://127.0.0.1:9000/mcp"}], {}, WHERE)
    assert spec.transport == "http" and spec.url == "http://127.0.0.1:9000/mcp" and spec.command is None


@pytest.mark.parametrize(
    "entry, words",
    [
        ("nope", ["'nope'", "not in the catalog", "filesystem, memory"]),
        ("bad name", ["'bad name'", "letters, digits"]),
        ({"name": "a.b", "command": "x"}, ["'a.b'"]),
        ({"name": "srv", "command": "", "args": ["x"]}, ["'srv'", "stdio", "'command'"]),
        ({"name": "web", "transport": "http", "command": "x"}, ["'web'", "http", "'url'"]),
        ({"name": "srv", "command": "x", "bogus": 1}, ["'srv'", "bogus"]),
        ({"name": "srv", "command": "x", "transport": "ws"}, ["'srv'", "'ws'"]),
        ({"command": "x"}, ["'name'"]),
    ],
)
def test_errors_name_the_file_and_the_server(entry, words):
    with pytest.raises(UserError) as err:
        parse_servers([entry], CATALOG, WHERE)
    message = str(err.value)
    assert message.startswith(WHERE + ":")
    for word in words:
        assert word in message


def test_a_duplicate_name_is_an_error():
    with pytest.raises(UserError, match=rf"^{WHERE}: MCP server 'filesystem' is listed twice"):
        parse_servers(["filesystem", {"name": "filesystem", "command": "other"}], CATALOG, WHERE)


def test_no_entries_is_no_servers():
    assert parse_servers(None, CATALOG, WHERE) == [] and parse_servers([], CATALOG, WHERE) == []


# --- ServerSpec.filled / unavailable -----------------------------------------------------------------


def test_filled_replaces_the_placeholders_everywhere():
    spec = ServerSpec(
        name="s",
        command="{servers}/bin/s",
        args=["--root", "{workspace}", "{home}/x"],
        env={"LOG": "{episode}/log", "KEEP": "{other} {}"},
        cwd="{home}",
        transport="http",
        url="http://h/{episode}",
    )
    values = {"workspace": "/h/ws", "home": "/h", "servers": "/srv", "episode": "/ep/1", "other": "NO"}
    out = spec.filled(values)
    assert out.command == "/srv/bin/s"
    assert out.args == ["--root", "/h/ws", "/h/x"]
    assert out.env == {"LOG": "/ep/1/log", "KEEP": "{other} {}"}
    assert out.cwd == "/h" and out.url == "http://h//ep/1"
    assert out.name == "s" and spec.args[1] == "{workspace}"  # the original is unchanged


def test_filled_leaves_unknown_and_unvalued_braces():
    spec = ServerSpec(name="s", command="run", args=['{"json": 1}', "{workspace}", "{Workspace}"])
    assert spec.filled({}).args == ['{"json": 1}', "{workspace}", "{Workspace}"]
    assert spec.filled({}).cwd is None


def test_unavailable(tmp_path: Path):
    missing = tmp_path / "bin" / "server"
    assert str(missing) in ServerSpec(name="s", command=str(missing)).unavailable()
    assert "no-such-mcp-binary-xyz" in ServerSpec(name="s", command="no-such-mcp-binary-xyz").unavailable()
    assert ServerSpec(name="s", command=sys.executable).unavailable() is None
    assert ServerSpec(name="s", command="sh").unavailable() is None
    assert ServerSpec(name="s", transport="http", url="http://x").unavailable() is None


# --- proxy: Cassette ---------------------------------------------------------------------------------


def write_cassette(path: Path, entries: list[dict]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + "\n")
    return path


def call(tool: str, arguments: dict, text: str) -> dict:
    return {"type": "call", "tool": tool, "arguments": arguments, "result": {"content": [{"type": "text", "text": text}]}}


def test_cassette_load(tmp_path: Path):
    cassette = Cassette.load(
        write_cassette(
            tmp_path / "git.jsonl",
            [
                {"type": "header", "server": {"name": "git"}},
                {"type": "list_tools", "tools": [{"name": "status"}]},
                {"type": "list_tools", "tools": [{"name": "later"}]},
                call("status", {}, "clean"),
            ],
        )
    )
    assert cassette.server == {"name": "git"}
    assert cassette.tools == [{"name": "status"}]  # the first listing wins


def test_answer_matches_tool_and_canonical_arguments(tmp_path: Path):
    cassette = Cassette.load(
        write_cassette(
            tmp_path / "c.jsonl",
            [
                call("read", {"path": "a", "opts": {"x": 1, "y": 2}}, "A"),
                call("read", {"path": "b"}, "B"),
                call("stat", {}, "S"),
            ],
        )
    )
    assert cassette.answer("read", {"opts": {"y": 2, "x": 1}, "path": "a"})["result"]["content"][0]["text"] == "A"
    assert cassette.answer("read", {"path": "b"})["arguments"] == {"path": "b"}
    assert cassette.answer("stat", None)["tool"] == "stat"  # None and {} are the same call
    assert cassette.answer("read", {"path": "c"}) is None
    assert cassette.answer("write", {"path": "a"}) is None


def test_repeated_calls_are_answered_in_order_then_the_last_repeats(tmp_path: Path):
    cassette = Cassette.load(
        write_cassette(
            tmp_path / "c.jsonl",
            [
                call("tick", {}, "1"),
                call("other", {}, "x"),
                call("tick", {}, "2"),
            ],
        )
    )
    texts = [cassette.answer("tick", {})["result"]["content"][0]["text"] for _ in range(4)]
    assert texts == ["1", "2", "2", "2"]


@pytest.mark.parametrize("bad", ["{not json", "[1]", '{"type": "call"}'])
def test_a_cassette_line_that_is_not_an_entry(tmp_path: Path, bad: str):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(call("a", {}, "x")) + "\n\n" + bad + "\n")
    with pytest.raises(SystemExit, match=r"c\.jsonl line 3 is not a cassette entry"):
        Cassette.load(path)


def test_a_missing_cassette(tmp_path: Path):
    with pytest.raises(SystemExit, match="does not exist"):
        Cassette.load(tmp_path / "none.jsonl")


# --- proxy: proxied ----------------------------------------------------------------------------------

STDIO = ServerSpec(
    name="git", command="/srv/git/bin/mcp-server-git", args=["--repository", "/h/ws"], env={"TOKEN": "t=1"}, cwd="/h/ws"
)
HTTP = ServerSpec(name="web", transport="http", url="http://127.0.0.1:9000/mcp")


def parsed(spec: ServerSpec):
    """The proxy's own CLI parse of a proxied spec's command line."""
    assert spec.command == sys.executable and spec.args[:2] == ["-m", "mcpworld.mcp.proxy"]
    args = parser().parse_args(spec.args[2:])
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    return args


def test_proxied_record_carries_the_upstream_after_dashes(tmp_path: Path):
    out = proxied(STDIO, "record", tmp_path / "git.jsonl")
    assert out.name == "git" and out.transport == "stdio" and out.env == {} and out.url is None
    assert out.args[2:4] == ["--mode", "record"]
    dashes = out.args.index("--")
    assert out.args[dashes + 1 :] == ["/srv/git/bin/mcp-server-git", "--repository", "/h/ws"]
    args = parsed(out)
    assert (args.mode, args.cassette, args.name) == ("record", str(tmp_path / "git.jsonl"), "git")
    (upstream,) = _upstreams(args)
    assert upstream == STDIO  # command, args, env and cwd survive the trip


def test_proxied_fault_passes_the_fault_settings(tmp_path: Path):
    out = proxied(
        STDIO,
        "fault",
        tmp_path / "git.jsonl",
        fault_rate=0.3,
        fault_kinds=["error", "drop"],
        fault_latency_s=0.5,
        seed=7,
        call_timeout_s=9,
    )
    args = parsed(out)
    assert (args.mode, args.fault_rate, args.fault_kinds, args.fault_latency_s, args.seed, args.call_timeout_s) == (
        "fault",
        0.3,
        "error,drop",
        0.5,
        7,
        9.0,
    )
    assert args.command == [STDIO.command, *STDIO.args]


def test_proxied_http_upstream_uses_upstream_url(tmp_path: Path):
    out = proxied(HTTP, "record", tmp_path / "web.jsonl")
    assert out.transport == "stdio" and out.url is None and out.name == "web"
    assert "--" not in out.args
    args = parsed(out)
    assert args.upstream_url == ["web=http://127.0.0.1:9000/mcp"] and not args.command
    assert _upstreams(args) == [HTTP]


@pytest.mark.parametrize("spec", [STDIO, HTTP])
def test_proxied_replay_has_no_upstream(tmp_path: Path, spec: ServerSpec):
    out = proxied(spec, "replay", tmp_path / "x.jsonl")
    assert out.name == spec.name and out.transport == "stdio"
    assert "--" not in out.args and not any(a.startswith(("--upstream", "--env", "--cwd")) for a in out.args)
    assert spec.command is None or spec.command not in out.args
    args = parsed(out)
    assert args.mode == "replay" and args.cassette == str(tmp_path / "x.jsonl") and _upstreams(args) == []
