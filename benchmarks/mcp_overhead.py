"""What an MCP tool call costs the harness, per route: the npm filesystem server directly over
stdio, through the recording proxy (stdio), answered by the proxy from its cassette (replay), and
through the proxy over streamable HTTP. Also each route's start (spawn + initialize + list tools).

Why this exists: MCP modalities put one tool call per agent step on this path, and routing through
the proxy (record, replay, fault) must stay small against a model's seconds per step. The routes
are measured in one run, calls interleaved round-robin so machine noise hits them equally.

    python benchmarks/mcp_overhead.py [--n 200]

Exits 0 whatever the figures; exits 2 if the filesystem server is not installed (make servers).
"""

from __future__ import annotations

import argparse
import secrets
import socket
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from rich.console import Console
from rich.table import Table

from mcpworld.mcp.client import ServerPool
from mcpworld.mcp.install import servers_dir
from mcpworld.mcp.proxy import proxied
from mcpworld.mcp.spec import ServerSpec


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def routes(work: Path) -> dict[str, ServerSpec]:
    fs = ServerSpec(name="fs", command=str(servers_dir() / "npm/node_modules/.bin/mcp-server-filesystem"), args=[str(work)])
    port, token = free_port(), secrets.token_urlsafe(32)  # the proxy's token (docs/security.md)
    http = ServerSpec(
        name="fs",
        transport="http",
        url=f"http://127.0.0.1:{port}/mcp?token={token}",
        command=sys.executable,
        env={"MCPWORLD_PROXY_TOKEN": token},
        args=[
            "-m",
            "mcpworld.mcp.proxy",
            "--mode",
            "record",
            "--cassette",
            str(work / "http.jsonl"),
            "--serve",
            "http",
            "--port",
            str(port),
            "--name",
            "fs",
            "--",
            fs.command,
            *fs.args,
        ],
    )
    return {
        "direct stdio": fs,
        "proxy record (stdio)": proxied(fs, "record", work / "rec" / "fs.jsonl"),
        "proxy replay (stdio)": proxied(fs, "replay", work / "rec" / "fs.jsonl"),
        "proxy record (HTTP)": http,
    }


async def measure(n: int) -> list[tuple[str, float, float, float]]:
    work = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    (work / "note.txt").write_text("hello\n")
    args = {"path": str(work / "note.txt")}
    specs = routes(work)
    # the replay route needs a cassette: record one call first
    async with ServerPool([specs["proxy record (stdio)"]], work / "logs") as warm:
        await warm.call("fs", "get_file_info", args)
    starts, pools, samples = {}, {}, {name: [] for name in specs}
    async with AsyncExitStack() as stack:
        for name, spec in specs.items():
            t0 = time.perf_counter()
            pools[name] = await stack.enter_async_context(ServerPool([spec], work / "logs" / name.split()[1]))
            starts[name] = time.perf_counter() - t0
        for i in range(n + 5):
            for name, pool in pools.items():
                t0 = time.perf_counter()
                await pool.call("fs", "get_file_info", args)
                if i >= 5:  # warm-up
                    samples[name].append((time.perf_counter() - t0) * 1000)
    out = []
    for name, values in samples.items():
        values.sort()
        out.append((name, starts[name], statistics.median(values), values[int(len(values) * 0.9)]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200)
    args = parser.parse_args()
    if not (servers_dir() / "npm/node_modules/.bin/mcp-server-filesystem").exists():
        print("the filesystem MCP server is not installed: make servers", file=sys.stderr)
        raise SystemExit(2)
    rows = anyio.run(measure, args.n)
    table = Table(title=f"MCP tool call (filesystem get_file_info), {args.n} calls per route")
    for column in ("route", "start s", "call median ms", "call p90 ms"):
        table.add_column(column, justify="right" if column != "route" else "left")
    for name, start, median, p90 in rows:
        table.add_row(name, f"{start:.2f}", f"{median:.2f}", f"{p90:.2f}")
    Console().print(table)


if __name__ == "__main__":
    main()
