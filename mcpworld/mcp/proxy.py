"""An MCP proxy between an agent and real servers, serving them over stdio or streamable HTTP.

    python -m mcpworld.mcp.proxy --mode record --cassette git.jsonl -- mcp-server-git
    python -m mcpworld.mcp.proxy --mode replay --cassette git.jsonl --serve http --port 8931
    python -m mcpworld.mcp.proxy --mode fault --fault-rate 0.3 --fault-kinds error,drop --upstream-url http://…/mcp

Modes: ``record`` forwards and appends every exchange to a JSONL cassette; ``replay`` answers from
a cassette with no upstream at all (deterministic development and CI); ``fault`` forwards but
injects latency, error results or dropped responses at a rate (seeded), recording what happened.
With several upstreams (``--upstream NAME=COMMAND``, repeated) tools are served as
``<name>-<tool>``; with one, under their own names.

``--serve http`` takes ``mcpworld.core.listener``'s rule: every request carries the token, as
``Authorization: Bearer …`` or, for a client that is given only a URL, ``?token=…`` in it
(``MCPWORLD_PROXY_TOKEN`` when set, else a fresh one written 0600 to ``--token-file``), JSON bodies
only, no foreign Host or Origin; 127.0.0.1 unless ``--host`` says otherwise, and then only with
``MCPWORLD_PROXY_TOKEN`` set.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpworld.mcp.spec import replace_in

MODES = ("record", "replay", "fault")
TOKEN_VARIABLE = "MCPWORLD_PROXY_TOKEN"  # --serve http: the token, when the researcher chooses it
FAULT_KINDS = ("error", "latency", "drop")


def _key(tool: str, arguments: dict[str, Any] | None) -> str:
    return tool + "\x00" + json.dumps(arguments or {}, sort_keys=True, ensure_ascii=False, default=str)


@dataclass
class Cassette:
    """The exchanges of one proxied server: its identity, its tool list and every call."""

    path: Path
    server: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] = field(default_factory=list)
    calls: dict[str, deque] = field(default_factory=lambda: defaultdict(deque))
    last: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Cassette:
        path = Path(path)
        if not path.is_file():
            raise SystemExit(f"mcpworld.mcp.proxy: cassette {path} does not exist (record one with --mode record)")
        cassette = cls(path)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                if not isinstance(entry, dict) or (entry.get("type") == "call" and "tool" not in entry):
                    raise ValueError("not a cassette entry (an object with 'type', and 'tool' for a call)")
            except ValueError as exc:
                raise SystemExit(f"mcpworld.mcp.proxy: {path} line {n} is not a cassette entry: {exc}") from None
            if entry.get("type") == "header":
                cassette.server = entry.get("server") or {}
            elif entry.get("type") == "list_tools" and not cassette.tools:
                cassette.tools = entry["tools"]
            elif entry.get("type") == "call":
                cassette.calls[_key(entry["tool"], entry.get("arguments"))].append(entry)
        return cassette

    def answer(self, tool: str, arguments: dict[str, Any] | None) -> dict[str, Any] | None:
        """The next recorded exchange for this exact call; once used up, the last one again."""
        key = _key(tool, arguments)
        queue = self.calls.get(key)
        if queue:
            self.last[key] = queue.popleft()
        return self.last.get(key)


class Recorder:
    def __init__(self, path: Path | None):
        self.file = None
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open beyond this block

    def write(self, entry: dict[str, Any]) -> None:
        if self.file:
            self.file.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")
            self.file.flush()


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def _text_result(text: str, error: bool = True) -> Any:
    from mcp import types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


class Proxy:
    """The handlers the served MCP server answers with (upstream pool or cassette behind them)."""

    def __init__(self, args: argparse.Namespace):
        self.mode = args.mode
        self.cassette = Cassette.load(Path(args.cassette)) if args.mode == "replay" else None
        self.recorder = Recorder(Path(args.cassette) if args.cassette and args.mode != "replay" else None)
        self.rate, self.kinds = args.fault_rate, [k for k in args.fault_kinds.split(",") if k]
        self.latency_s = args.fault_latency_s
        self.random = random.Random(args.seed)
        self.pool: Any = None
        self.prefixed = False
        self.workspace = args.workspace

    def _portable(self, value: Any) -> Any:
        return replace_in(value, self.workspace, "{workspace}")

    def _local(self, value: Any) -> Any:
        return replace_in(value, "{workspace}", self.workspace)

    # --- upstream ---------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        if self.cassette is not None:
            return self.cassette.server
        sessions = list(self.pool.sessions)
        return {"name": sessions[0] if len(sessions) == 1 else "mcpworld-proxy", "upstreams": sessions}

    async def list_tools(self, ctx: Any, params: Any) -> Any:
        from mcp import types

        if self.cassette is not None:
            return types.ListToolsResult(tools=[types.Tool.model_validate(self._local(t)) for t in self.cassette.tools])
        tools = []
        for remote in self.pool.tools:
            name = f"{remote.server}-{remote.name}" if self.prefixed else remote.name
            tools.append(types.Tool(name=name, description=remote.description, input_schema=remote.input_schema))
        self.recorder.write({"type": "list_tools", "tools": self._portable([_dump(t) for t in tools])})
        return types.ListToolsResult(tools=tools)

    def _route(self, name: str) -> tuple[str, str]:
        if not self.prefixed:
            return next(iter(self.pool.sessions)), name
        for server in self.pool.sessions:
            if name.startswith(server + "-"):
                return server, name[len(server) + 1 :]
        return next(iter(self.pool.sessions)), name

    async def call_tool(self, ctx: Any, params: Any) -> Any:
        import anyio
        from mcp import types

        from mcpworld.mcp.client import ToolCallFailed

        tool, arguments = params.name, dict(params.arguments or {})
        if self.cassette is not None:
            answer = self.cassette.answer(tool, self._portable(arguments))
            if answer is None:
                return _text_result(
                    f"replay: the cassette {self.cassette.path.name} has no answer for {tool} with these arguments"
                )
            if answer.get("error") or answer.get("result") is None:
                return _text_result(self._local(answer.get("error") or "no result was recorded"))
            return types.CallToolResult.model_validate(self._local(answer["result"]))
        fault = None
        if self.mode == "fault" and self.kinds and self.random.random() < self.rate:
            fault = self.random.choice(self.kinds)
        entry: dict[str, Any] = {"type": "call", "tool": tool, "arguments": self._portable(arguments), "fault": fault}
        started = time.perf_counter()
        if fault == "error":
            result = _text_result(f"injected fault: {tool} failed (mcpworld proxy, fault mode)")
            self.recorder.write({**entry, "result": _dump(result), "latency_s": 0.0})
            return result
        if fault == "drop":  # the request is swallowed: the client's deadline turns it into a tool error
            self.recorder.write({**entry, "result": None, "error": "dropped (fault mode)"})
            await anyio.sleep_forever()
        if fault == "latency":
            await anyio.sleep(self.latency_s)
        server, name = self._route(tool)
        try:
            result = await self.pool.call(server, name, arguments)
        except ToolCallFailed as exc:
            self.recorder.write(
                {**entry, "result": None, "error": self._portable(str(exc)), "latency_s": round(time.perf_counter() - started, 4)}
            )
            return _text_result(str(exc))
        self.recorder.write(
            {**entry, "result": self._portable(_dump(result)), "latency_s": round(time.perf_counter() - started, 4)}
        )
        return result


def _upstreams(args: argparse.Namespace) -> list[Any]:
    from mcpworld.mcp.spec import ServerSpec

    env = dict(item.split("=", 1) for item in args.env)
    specs = []
    for item in args.upstream:
        name, _, command = item.partition("=")
        argv = shlex.split(command)
        specs.append(ServerSpec(name=name, command=argv[0], args=argv[1:], env=env, cwd=args.cwd))
    for item in args.upstream_url:
        name, _, url = item.partition("=")
        specs.append(ServerSpec(name=name, transport="http", url=url))
    if args.command:
        specs.append(ServerSpec(name=args.name, command=args.command[0], args=args.command[1:], env=env, cwd=args.cwd))
    return specs


async def serve(args: argparse.Namespace) -> None:
    from contextlib import AsyncExitStack

    from mcp.server.lowlevel import Server

    from mcpworld.mcp.client import ServerPool

    proxy = Proxy(args)
    async with AsyncExitStack() as stack:
        if proxy.mode != "replay":
            specs = _upstreams(args)
            if not specs:
                raise SystemExit(
                    "mcpworld.mcp.proxy: record and fault modes need an upstream "
                    "(-- COMMAND ARGS, --upstream NAME=COMMAND or --upstream-url NAME=URL)"
                )
            proxy.prefixed = len(specs) > 1
            log_dir = Path(args.log_dir) if args.log_dir else Path(args.cassette or ".").parent
            proxy.pool = await stack.enter_async_context(
                ServerPool(specs, log_dir, start_timeout_s=args.start_timeout_s, call_timeout_s=args.call_timeout_s)
            )
        info = proxy.describe()
        if proxy.mode != "replay":
            proxy.recorder.write(
                {"type": "header", "server": info, "mode": proxy.mode, "recorded": time.strftime("%Y-%m-%dT%H:%M:%S")}
            )
        server = Server(
            str(info.get("name") or args.name),
            version=str(info.get("version") or ""),
            on_list_tools=proxy.list_tools,
            on_call_tool=proxy.call_tool,
        )
        if args.serve == "stdio":
            from mcp.server.stdio import stdio_server

            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        else:
            import uvicorn

            from mcpworld.core.listener import Guard, GuardedApp

            app = GuardedApp(server.streamable_http_app(host=args.host), Guard(args.token, query_token=True))
            config = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning")
            await uvicorn.Server(config).serve()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mcpworld.mcp.proxy", description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=MODES, default="record")
    p.add_argument("--cassette", help="the JSONL cassette to write (record, fault) or read (replay)")
    p.add_argument("--serve", choices=("stdio", "http"), default="stdio", help="how the agent reaches the proxy")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help=f"--serve http: listen address; another than 127.0.0.1 only with ${TOKEN_VARIABLE} set",
    )
    p.add_argument("--port", type=int, default=8931)
    p.add_argument(
        "--token-file",
        default=None,
        help="--serve http: where the token is written, 0600 (default: token in a new temporary folder)",
    )
    p.add_argument("--name", default="upstream", help="the upstream's name (for a command after --)")
    p.add_argument("--upstream", action="append", default=[], metavar="NAME=COMMAND")
    p.add_argument("--upstream-url", action="append", default=[], metavar="NAME=URL")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="for stdio upstreams")
    p.add_argument("--cwd", default=None, help="working directory of stdio upstreams")
    p.add_argument("--log-dir", default=None, help="where upstream stderr logs go (default: the cassette's folder)")
    p.add_argument(
        "--workspace", default=None, help="the episode's workspace path: stored as {workspace} in the cassette, so replays match"
    )
    p.add_argument("--fault-rate", type=float, default=0.0)
    p.add_argument("--fault-kinds", default="error", help=f"comma-separated: {', '.join(FAULT_KINDS)}")
    p.add_argument("--fault-latency-s", type=float, default=2.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start-timeout-s", type=float, default=60.0)
    p.add_argument("--call-timeout-s", type=float, default=60.0)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS: one stdio upstream")
    return p


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    bad = [k for k in args.fault_kinds.split(",") if k and k not in FAULT_KINDS]
    if bad:
        raise SystemExit(f"mcpworld.mcp.proxy: unknown fault kind {bad[0]!r}; use {', '.join(FAULT_KINDS)}")
    if args.mode == "replay" and not args.cassette:
        raise SystemExit("mcpworld.mcp.proxy: replay needs --cassette FILE")
    if args.serve == "http":
        import tempfile

        from mcpworld.core.errors import UserError
        from mcpworld.core.listener import TOKEN_FILE, listen_token, write_token

        try:
            args.token = listen_token(args.host, TOKEN_VARIABLE, args.port)
        except UserError as exc:
            raise SystemExit(f"mcpworld.mcp.proxy: error: {exc}") from None
        where = Path(args.token_file) if args.token_file else Path(tempfile.mkdtemp(prefix="mcpworld-proxy-")) / TOKEN_FILE
        print(
            f"mcpworld.mcp.proxy: serving http://{args.host}:{args.port}/mcp; its token (Authorization: Bearer, or "
            f"?token= in the URL) is in {write_token(where, args.token)}",
            file=sys.stderr,
            flush=True,
        )
    import anyio

    anyio.run(serve, args)


def proxied(
    spec: Any,
    mode: str,
    cassette: Path,
    *,
    fault_rate: float = 0.0,
    fault_kinds: list[str] | None = None,
    fault_latency_s: float = 2.0,
    seed: int = 0,
    call_timeout_s: float = 60.0,
    workspace: str | None = None,
) -> Any:
    """``spec`` routed through the proxy (a stdio child of the episode): same name, same tools."""
    from dataclasses import replace

    argv = [
        sys.executable,
        "-m",
        "mcpworld.mcp.proxy",
        "--mode",
        mode,
        "--cassette",
        str(cassette),
        "--name",
        spec.name,
        "--call-timeout-s",
        str(call_timeout_s),
    ]
    if workspace:
        argv += ["--workspace", workspace]
    if mode == "fault":
        argv += [
            "--fault-rate",
            str(fault_rate),
            "--fault-kinds",
            ",".join(fault_kinds or ["error"]),
            "--fault-latency-s",
            str(fault_latency_s),
            "--seed",
            str(seed),
        ]
    if mode != "replay":
        if spec.transport == "http":
            argv += ["--upstream-url", f"{spec.name}={spec.url}"]
        else:
            argv += [
                *(f"--env={k}={v}" for k, v in spec.env.items()),
                *([f"--cwd={spec.cwd}"] if spec.cwd else []),
                "--",
                spec.command,
                *spec.args,
            ]
    return replace(spec, command=argv[0], args=argv[1:], env={}, transport="stdio", url=None)


if __name__ == "__main__":
    main()
