"""MCP server tools offered to the agent as ``<server>-<tool>`` (Toolathlon's convention).

Every content block of a result reaches the model: text blocks in order, images as images,
embedded text resources as text. An output longer than ``max_chars`` is cut, and its full text is
saved under the episode's ``overlong/`` folder, where ``local-view_overlong_tooloutput`` pages it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

from mcpworld.agent.messages import JSONObject
from mcpworld.agent.tools.base import Observation, Tool
from mcpworld.core.secrets import redact
from mcpworld.mcp.client import RemoteTool, ServerPool, ToolCallFailed

UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
MAX_NAME = 64  # OpenAI's and Anthropic's limit on function names
IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/webp": "webp", "image/gif": "gif"}


def tool_name(server: str, tool: str) -> str:
    """``<server>-<tool>`` made safe for every provider: characters outside ``[A-Za-z0-9_-]``
    (``.``, ``/``, ``:`` are common in MCP tool names) become ``_``; an overlong name keeps a hash."""
    name = UNSAFE.sub("_", f"{server}-{tool}")
    if len(name) > MAX_NAME:
        name = name[: MAX_NAME - 9] + "_" + hashlib.sha1(name.encode()).hexdigest()[:8]
    return name


class Overlong:
    """Where cut tool outputs are kept in full, by id, for the paging tools."""

    def __init__(self, folder: Path, max_chars: int):
        self.folder, self.max_chars = Path(folder), max_chars
        self.count = 0

    def cut(self, text: str, source: str) -> str:
        if len(text) <= self.max_chars:
            return text
        self.count += 1
        output_id = f"{self.count:03d}-{UNSAFE.sub('_', source)}"
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / f"{output_id}.txt").write_text(redact(text), encoding="utf-8")
        return (
            text[: self.max_chars] + f"\n[output cut: {self.max_chars} of {len(text)} characters shown; the full "
            f"text is saved as id {output_id!r}: read it with local-view_overlong_tooloutput or "
            "local-search_overlong_tooloutput]"
        )

    def read(self, output_id: str) -> str:
        path = self.folder / f"{output_id}.txt"
        if UNSAFE.search(output_id) or not path.is_file():
            known = sorted(p.stem for p in self.folder.glob("*.txt")) if self.folder.is_dir() else []
            raise KeyError(f"no saved output {output_id!r}; saved: {', '.join(known) or 'none'}")
        return path.read_text(encoding="utf-8")


def render_result(result: object) -> tuple[str, list[tuple[bytes, str]]]:
    """A CallToolResult as (text, images): every block, not just the first."""
    texts: list[str] = []
    images: list[tuple[bytes, str]] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "image":
            fmt = IMAGE_FORMATS.get(str(block.mime_type).lower())
            if fmt:
                images.append((base64.b64decode(block.data), fmt))
            else:
                texts.append(f"[image of type {block.mime_type} omitted]")
        elif kind == "resource":
            inner = block.resource
            text = getattr(inner, "text", None)
            texts.append(text if text is not None else f"[binary resource {inner.uri} omitted]")
        elif kind == "resource_link":
            texts.append(f"[resource {block.uri}]")
        else:
            texts.append(f"[{kind} content omitted]")
    structured = getattr(result, "structured_content", None)
    if not texts and structured is not None:
        texts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(texts), images


class McpTool(Tool):
    family = "mcp"

    def __init__(self, pool: ServerPool, remote: RemoteTool, overlong: Overlong):
        self.pool, self.remote, self.overlong = pool, remote, overlong
        self.name = tool_name(remote.server, remote.name)
        self.description = f"[{remote.server}] {remote.description}".strip()
        schema = dict(remote.input_schema)
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        self.parameters = schema

    async def call(self, args: JSONObject) -> Observation:
        try:
            result = await self.pool.call(self.remote.server, self.remote.name, args)
        except ToolCallFailed as exc:  # the server failed, not the model: an error result
            return Observation(text=f"Error: {exc}", ok=False)
        text, images = render_result(result)
        ok = not bool(getattr(result, "is_error", False))
        return Observation(text=self.overlong.cut(text, self.name) or ("ok" if ok else "Error"), ok=ok, images=images)


def mcp_tools(pool: ServerPool, overlong: Overlong) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for remote in pool.tools:
        tool = McpTool(pool, remote, overlong)
        if tool.name in tools:
            raise ValueError(f"two MCP tools are both named {tool.name!r} once made safe; rename a server")
        tools[tool.name] = tool
    return tools
