"""MCP servers for one episode: started (stdio child or streamable HTTP), initialized, their tools
listed, called with a deadline, and stopped at the end — also when the episode fails.

Every request and response becomes an event (``mcp_start``, ``mcp_call``) through ``on_event``, so
the episode trace shows server, tool, arguments, latency and ok/error. A server that fails to
start raises InfraError with the tail of its stderr: the episode is an infra error, never an agent
failure.
"""

from __future__ import annotations

import logging
import socket
import subprocess
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import anyio

from mcpworld.core.errors import InfraError
from mcpworld.mcp.spec import ServerSpec
from mcpworld.telemetry.trace import preview

# Some servers print banners to stdout before speaking JSON-RPC; the SDK skips such lines but logs
# each one as an error with a traceback. The server's own stderr is kept in the episode's logs.
logging.getLogger("mcp.client.stdio").setLevel(logging.CRITICAL)

EventSink = Callable[..., object]  # what it returns is not used


def _tail(path: Path, limit: int = 600) -> str:
    try:
        return path.read_text(errors="replace").strip()[-limit:]
    except OSError:
        return ""


@dataclass
class RemoteTool:
    server: str
    name: str
    description: str
    input_schema: dict[str, Any]


class ServerPool:
    """``async with ServerPool(specs, log_dir, ...) as pool``: every server running and listed."""

    def __init__(
        self,
        specs: list[ServerSpec],
        log_dir: Path,
        *,
        home: Path | None = None,
        start_timeout_s: float = 60.0,
        call_timeout_s: float = 60.0,
        on_event: EventSink | None = None,
    ):
        self.specs = specs
        self.log_dir = Path(log_dir)
        self.home = home
        self.start_timeout_s, self.call_timeout_s = start_timeout_s, call_timeout_s
        self.on_event = on_event or (lambda kind, **fields: None)
        self.sessions: dict[str, Any] = {}
        self.tools: list[RemoteTool] = []
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> ServerPool:
        try:
            for spec in self.specs:
                await self._start(spec)
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._stack.aclose()
        except Exception as error:  # a server that dies while stopping must not mask the episode
            self.on_event("mcp_stop", ok=False, error=_reason(error))

    # --- starting --------------------------------------------------------------------------------
    def _child_env(self, spec: ServerSpec) -> dict[str, str]:
        """What a server gets on top of the SDK's allow-list (PATH, HOME, USER …): never the
        harness's secrets — a terminal server is as good as the agent's shell."""
        env = {"HOME": str(self.home)} if self.home else {}
        return {**env, **spec.env}

    async def _start(self, spec: ServerSpec) -> None:
        from mcp import ClientSession

        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"mcp-{spec.name}.log"
        started = time.perf_counter()
        try:
            # contexts that own task groups are entered outside any cancel scope (anyio's rule)
            streams = await self._connect(spec, log, time.monotonic() + self.start_timeout_s)
            session = await self._stack.enter_async_context(ClientSession(*streams))
            with anyio.fail_after(self.start_timeout_s):
                info = await session.initialize()
                listed = await self._list_tools(session)
        except Exception as exc:
            why = f"did not answer within {self.start_timeout_s:.0f}s" if isinstance(exc, TimeoutError) else _reason(exc)
            tail = _tail(log)
            self.on_event("mcp_start", server=spec.name, ok=False, error=why)
            raise InfraError(
                f"MCP server {spec.name!r} failed to start: {why}" + (f"; its stderr ends: {tail}" if tail else f" (log: {log})")
            ) from None
        self.sessions[spec.name] = session
        self.tools += [
            RemoteTool(spec.name, t.name, t.description or "", dict(t.input_schema or {"type": "object"})) for t in listed
        ]
        server_info = getattr(info, "server_info", None)
        self.on_event(
            "mcp_start",
            server=spec.name,
            ok=True,
            transport=spec.transport,
            seconds=round(time.perf_counter() - started, 4),
            tools=len(listed),
            server_name=getattr(server_info, "name", None),
            server_version=getattr(server_info, "version", None),
        )

    async def _connect(self, spec: ServerSpec, log: Path, deadline: float) -> tuple[Any, Any]:
        if spec.transport == "stdio":
            from mcp import StdioServerParameters, stdio_client

            assert spec.command is not None  # parse_servers requires it for stdio
            errlog = self._stack.enter_context(open(log, "w"))  # noqa: SIM115 - kept open beyond this block
            params = StdioServerParameters(command=spec.command, args=spec.args, env=self._child_env(spec), cwd=spec.cwd)
            read, write = await self._stack.enter_async_context(stdio_client(params, errlog=errlog))
            return read, write
        from mcp.client.streamable_http import streamable_http_client

        assert spec.url is not None  # parse_servers requires it for http
        if spec.command:  # a server we start ourselves, listening on its url
            await self._spawn_http(spec, log, deadline)
        read, write = await self._stack.enter_async_context(streamable_http_client(spec.url))
        return read, write

    async def _spawn_http(self, spec: ServerSpec, log: Path, deadline: float) -> None:
        from mcp.client.stdio import get_default_environment

        assert spec.command is not None and spec.url is not None  # (see _connect)
        out = self._stack.enter_context(open(log, "w"))  # noqa: SIM115 - kept open beyond this block
        proc = subprocess.Popen(
            [spec.command, *spec.args],
            cwd=spec.cwd,
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
            env={**get_default_environment(), **self._child_env(spec)},
            start_new_session=True,
        )
        self._stack.callback(_stop_process, proc)
        where = urlparse(spec.url)
        port = where.port or (443 if where.scheme == "https" else 80)
        while not _listening(where.hostname or "127.0.0.1", port):
            if proc.poll() is not None:
                raise InfraError(f"exited with code {proc.returncode} before listening on {spec.url}")
            if time.monotonic() > deadline:
                raise TimeoutError
            await anyio.sleep(0.05)

    @staticmethod
    async def _list_tools(session: Any) -> list[Any]:
        tools, cursor = [], None
        while True:
            from mcp.types import PaginatedRequestParams

            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                return tools

    # --- calling ---------------------------------------------------------------------------------
    async def call(self, server: str, tool: str, args: dict[str, Any]) -> Any:
        """``tools/call`` with a deadline: the CallToolResult. A protocol error, a dead server or a
        missed deadline raises ToolCallFailed (the model sees it as a tool error)."""
        session = self.sessions[server]
        started = time.perf_counter()
        error = None
        try:
            with anyio.fail_after(self.call_timeout_s):
                result = await session.call_tool(tool, args)
        except TimeoutError:
            error = f"no answer within {self.call_timeout_s:.0f}s"
        except Exception as exc:
            error = _reason(exc)
        latency = round(time.perf_counter() - started, 4)
        if error is not None:
            self.on_event("mcp_call", server=server, tool=tool, args=preview(args), latency_s=latency, ok=False, error=error)
            raise ToolCallFailed(f"{server}-{tool}: {error}")
        is_error = bool(getattr(result, "is_error", False))
        self.on_event(
            "mcp_call",
            server=server,
            tool=tool,
            args=preview(args),
            latency_s=latency,
            ok=not is_error,
            **({"error": _first_text(result)[:300]} if is_error else {}),
        )
        return result


class ToolCallFailed(Exception):
    """A tools/call that got no result (protocol error, server gone, deadline)."""


def _first_text(result: Any) -> str:
    for block in getattr(result, "content", None) or []:
        if getattr(block, "type", None) == "text":
            return block.text
    return ""


def _reason(exc: BaseException) -> str:
    """The innermost useful message of an exception (task groups wrap them in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}".rstrip(": ")


def _listening(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def _stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
