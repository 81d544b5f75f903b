"""run/ names no env backend, provider kind or MCP sandbox: it asks what each declares (Backend.stages,
on_host, programs_for, check, reap; replays_solution; Sandbox.hosted). The names come from the
registries, so a backend, provider or sandbox added later is covered too."""

from __future__ import annotations

import ast
from pathlib import Path

import mcpworld.run
from mcpworld.agent.providers import PROVIDERS
from mcpworld.env import BACKENDS
from mcpworld.mcp.servers import SANDBOXES

RUN = Path(mcpworld.run.__file__).parent


def seam_names() -> set[str]:
    return {*BACKENDS.names(), *PROVIDERS.names(), *SANDBOXES.names()}


def named(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each string literal in ``source`` that is exactly one of ``names``."""
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]


def test_the_check_finds_a_name_tested_by_value():
    source = 'if cfg.provider.kind == "oracle":\n    pass\nx = {"docker": 1}\n"""a docstring naming oracle"""\n'
    assert named(source, {"oracle", "docker"}) == [(1, "oracle"), (3, "docker")]


def test_run_names_no_backend_provider_or_sandbox():
    names = seam_names()
    assert {"local", "docker", "vm", "oracle", "klavis"} <= names  # the registries are read, not a copy
    found = [
        f"{path.relative_to(RUN.parent.parent)}:{line}: {name!r}"
        for path in sorted(RUN.rglob("*.py"))
        for line, name in named(path.read_text(), names)
    ]
    assert not found, "run/ names a seam's implementation; ask a capability it declares instead:\n" + "\n".join(found)
