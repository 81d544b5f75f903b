"""What an MCP server is, as a task, an app or the catalog writes it, and how one is checked.

A task (or its app config) lists servers as ``{name, command, args, env, cwd, transport, url}`` or
just by name (``filesystem``), which takes the catalog's entry (``mcpworld/conf/mcp/default.yaml``); keys
given next to a catalog name override it (``env`` is merged into the catalog's). Placeholders
``{workspace}``, ``{home}``, ``{servers}`` and ``{episode}`` are filled per episode.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mcpworld.core.errors import UserError

TRANSPORTS = ("stdio", "http")
KEYS = {"name", "command", "args", "env", "cwd", "transport", "url"}
PLACEHOLDER = re.compile(r"\{(workspace|home|servers|episode|port_\w+)\}")
NAME = re.compile(r"^[A-Za-z0-9_]+(?:[-][A-Za-z0-9_]+)*$")


@dataclass(frozen=True)
class ServerSpec:
    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    transport: str = "stdio"  # stdio: a child process on pipes | http: streamable HTTP at url
    url: str | None = None  # http: where it listens (its command, if any, is started first)

    def filled(self, values: dict[str, str]) -> ServerSpec:
        """The spec with ``{workspace}``-style placeholders replaced by this episode's paths."""

        def fill(text: str) -> str:
            return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)

        def fill_some(text: str | None) -> str | None:
            return None if text is None else fill(text)

        return replace(
            self,
            command=fill_some(self.command),
            args=[fill(a) for a in self.args],
            env={k: fill(v) for k, v in self.env.items()},
            cwd=fill_some(self.cwd),
            url=fill_some(self.url),
        )

    def unavailable(self) -> str | None:
        """Why this server cannot start on this machine (its program is missing), or None."""
        if self.command is None:
            return None
        if "/" in self.command:
            return None if Path(self.command).is_file() else f"{self.command} is not installed"
        return None if shutil.which(self.command) else f"{self.command!r} is not on PATH"


def replace_in(value: Any, old: str | None, new: str | None) -> Any:
    """``value`` (strings, lists, dicts, nested) with every ``old`` in its strings replaced by ``new``:
    the episode's workspace path ⇄ ``{workspace}`` in oracle calls and proxy cassettes."""
    if not old or new is None:
        return value
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [replace_in(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: replace_in(v, old, new) for k, v in value.items()}
    return value


def _entry(raw: Any, where: str) -> dict[str, Any]:
    if isinstance(raw, str):
        return {"name": raw}
    if not isinstance(raw, dict) or not raw.get("name"):
        raise UserError(
            f"{where}: an MCP server must be a catalog name or a mapping with 'name' (and 'command' or 'url'), got {raw!r}"
        )
    unknown = sorted(set(raw) - KEYS - {"install"})
    if unknown:
        raise UserError(
            f"{where}: MCP server {raw['name']!r} has unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(KEYS))}"
        )
    return dict(raw)


def parse_servers(entries: list[Any] | None, catalog: dict[str, Any], where: str) -> list[ServerSpec]:
    """Task/app server entries → specs, catalog names expanded. Errors name the file and the server."""
    specs: list[ServerSpec] = []
    for raw in entries or []:
        entry = _entry(raw, where)
        name = str(entry["name"])
        if not NAME.fullmatch(name):
            raise UserError(
                f"{where}: MCP server name {name!r} may use only letters, digits, '_' and '-' "
                "(it prefixes tool names as <server>-<tool>)"
            )
        if "command" not in entry and "url" not in entry:
            if name not in catalog:
                raise UserError(
                    f"{where}: MCP server {name!r} is not in the catalog (mcpworld/conf/mcp/default.yaml: "
                    f"{', '.join(sorted(catalog))}); give it a 'command' or a 'url'"
                )
            base = dict(catalog[name])  # keys given here win; env is merged (add a variable, keep the rest)
            entry = {**base, **entry, "env": {**(base.get("env") or {}), **(entry.get("env") or {})}}
        transport = str(entry.get("transport") or ("http" if entry.get("url") else "stdio"))
        if transport not in TRANSPORTS:
            raise UserError(f"{where}: MCP server {name!r}: transport {transport!r} is unknown; use stdio or http")
        if transport == "stdio" and not entry.get("command"):
            raise UserError(f"{where}: MCP server {name!r} (stdio) needs a 'command'")
        if transport == "http" and not entry.get("url"):
            raise UserError(f"{where}: MCP server {name!r} (http) needs a 'url'")
        args = entry.get("args") or []
        env = entry.get("env") or {}
        if not isinstance(args, list) or not isinstance(env, dict):
            raise UserError(f"{where}: MCP server {name!r}: 'args' must be a list and 'env' a mapping")
        specs.append(
            ServerSpec(
                name=name,
                command=entry.get("command"),
                args=[str(a) for a in args],
                env={str(k): str(v) for k, v in env.items()},
                cwd=entry.get("cwd"),
                transport=transport,
                url=entry.get("url"),
            )
        )
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UserError(f"{where}: MCP server {dupes[0]!r} is listed twice")
    return specs
