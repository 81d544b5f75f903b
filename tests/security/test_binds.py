"""Loopback unless told otherwise: each listener's command refuses another address without a token
the researcher chose, in one line that says how to do it safely; in-process, no listener starts
without a token."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mcpworld.core.errors import UserError
from mcpworld.core.listener import Guard

TOKEN_VARIABLES = ("MCPWORLD_EVAL_TOKEN", "MCPWORLD_GPU_AGENT_TOKEN", "MCPWORLD_PROXY_TOKEN")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in TOKEN_VARIABLES}
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, timeout=120, env={**clean, **(env or {})}
    )


def test_the_gpu_agent_on_another_address_needs_a_chosen_token() -> None:
    proc = run("mcpworld.telemetry.gpu_agent", "--host", "0.0.0.0", "--port", "0")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "MCPWORLD_GPU_AGENT_TOKEN" in proc.stderr and "--host 0.0.0.0" in proc.stderr


def test_the_mcp_proxy_on_another_address_needs_a_chosen_token(tmp_path) -> None:
    (tmp_path / "c.jsonl").write_text("")
    proc = run(
        "mcpworld.mcp.proxy",
        "--mode",
        "replay",
        "--cassette",
        str(tmp_path / "c.jsonl"),
        "--serve",
        "http",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
    )
    assert proc.returncode != 0 and proc.stderr.count("\n") == 1, proc.stderr
    assert "MCPWORLD_PROXY_TOKEN" in proc.stderr and "--host 0.0.0.0" in proc.stderr


def test_the_desktop_service_never_serves_without_a_token(tmp_path) -> None:
    spec = {"listen": "0.0.0.0", "port": 0, "workroot": str(tmp_path), "host_paths": {"data": "/x", "home": "/y"}}
    proc = run("mcpworld.env.docker.service", env={"MCPWORLD_SERVICE": json.dumps(spec)})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "no token" in proc.stderr


def test_no_listener_is_made_without_a_token() -> None:
    with pytest.raises(UserError, match="needs a token"):
        Guard("")
    from mcpworld.evaluation.server import make_server

    with pytest.raises(UserError, match="needs a token"):
        make_server(__import__("pathlib").Path("."), "", "0.0.0.0", 0)


def test_the_event_sink_binds_loopback_only() -> None:
    from mcpworld.probes.sink import EventSink

    sink = EventSink(lambda message: None)
    try:
        assert sink._sock.getsockname()[0] == "127.0.0.1"  # no option to bind elsewhere
    finally:
        sink._sock.close()
