"""Toolathlon's local tools, named as Toolathlon names them (``local-…``): claim_done,
python_execute, sleep, and paging through overlong tool outputs. A task asks for them in
``needed_local_tools``; they come with the mcp tool family."""

from __future__ import annotations

import asyncio
import re
import shlex
import sys
import uuid
from collections.abc import Callable

from mcpworld.agent.messages import JSONObject
from mcpworld.agent.tools.base import Observation, Tool, ToolError, integer, number
from mcpworld.agent.tools.mcp import Overlong
from mcpworld.env.base import Environment

PAGE = 10_000  # characters per page of an overlong output


class ClaimDone(Tool):
    name, family = "local-claim_done", "mcp"
    description = "Claim that the task is done. Call it once everything the task asks for is finished."
    parameters: JSONObject = {"type": "object", "properties": {}}  # noqa: RUF012 - never mutated; an instance attribute MCP tools set

    async def call(self, args: JSONObject) -> Observation:
        return Observation(text="you have claimed the task is done!", final="DONE")


class PythonExecute(Tool):
    name, family = "local-python-execute", "mcp"
    description = "Run Python code in the workspace (the working directory) and return its stdout, stderr and exit code."
    parameters = {  # noqa: RUF012 - never mutated; an instance attribute MCP tools set
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "the Python source to run"},
            "filename": {"type": "string", "description": "optional file name for the script"},
            "timeout": {"type": "integer", "description": "seconds, at most 120 (default 30)"},
        },
        "required": ["code"],
    }

    def __init__(self, env: Environment, workspace: str, max_output: int):
        self.env, self.workspace, self.max_output = env, workspace, max_output

    async def call(self, args: JSONObject) -> Observation:
        code = args.get("code")
        if not isinstance(code, str) or not code.strip():
            raise ToolError("'code' must be a non-empty string of Python source")
        timeout = number(args.get("timeout") or 30)
        if not 0 < timeout <= 120:
            raise ToolError("'timeout' must be between 1 and 120 seconds")
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", str(args.get("filename") or "")).strip(".")
        name = name if name.endswith(".py") else f"{name or uuid.uuid4().hex[:12]}.py"  # never a folder name
        folder = self.env.resolve(self.workspace) / ".python_tmp"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(code, encoding="utf-8")
        command = (
            f"cd {shlex.quote(str(self.env.resolve(self.workspace)))} && "
            f"{shlex.quote(sys.executable)} .python_tmp/{shlex.quote(name)}"
        )
        result = await asyncio.to_thread(self.env.shell, command, timeout, self.max_output)
        status = "timed out" if result.timed_out else f"return code {result.returncode}"
        return Observation(
            text=f"=== STDOUT ===\n{result.stdout}\n=== STDERR ===\n{result.stderr}\n=== {status} ===",
            ok=result.returncode == 0 and not result.timed_out,
        )


class Sleep(Tool):
    name, family = "local-sleep", "mcp"
    description = "Wait for a number of seconds (at most 60), e.g. for a background job to finish."
    parameters = {"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]}  # noqa: RUF012 - never mutated; an instance attribute MCP tools set

    async def call(self, args: JSONObject) -> Observation:
        seconds = number(args.get("seconds", 0))
        if not 0 <= seconds <= 60:
            raise ToolError("'seconds' must be between 0 and 60")
        await asyncio.sleep(seconds)
        return Observation(text=f"slept {seconds:g} seconds")


class ViewOverlong(Tool):
    name, family = "local-view_overlong_tooloutput", "mcp"
    description = f"Read one page ({PAGE} characters) of a tool output that was cut, by its id."
    parameters = {"type": "object", "properties": {"id": {"type": "string"}, "page": {"type": "integer"}}, "required": ["id"]}  # noqa: RUF012 - never mutated; an instance attribute MCP tools set

    def __init__(self, overlong: Overlong):
        self.overlong = overlong

    async def call(self, args: JSONObject) -> Observation:
        text = _saved(self.overlong, args)
        pages = max(1, -(-len(text) // PAGE))
        page = integer(args.get("page", 1))
        if not 1 <= page <= pages:
            raise ToolError(f"'page' must be between 1 and {pages}")
        return Observation(text=f"[page {page} of {pages}]\n" + text[(page - 1) * PAGE : page * PAGE])


class SearchOverlong(Tool):
    name, family = "local-search_overlong_tooloutput", "mcp"
    description = "Search a tool output that was cut for a regular expression; lines that match, with numbers."
    parameters = {  # noqa: RUF012 - never mutated; an instance attribute MCP tools set
        "type": "object",
        "properties": {"id": {"type": "string"}, "pattern": {"type": "string"}},
        "required": ["id", "pattern"],
    }

    def __init__(self, overlong: Overlong):
        self.overlong = overlong

    async def call(self, args: JSONObject) -> Observation:
        text = _saved(self.overlong, args)
        try:
            pattern = re.compile(str(args.get("pattern", "")))
        except re.error as exc:
            raise ToolError(f"'pattern' is not a valid regular expression: {exc}") from None
        hits = [f"{n}: {line[:300]}" for n, line in enumerate(text.splitlines(), 1) if pattern.search(line)]
        return Observation(
            text="\n".join(hits[:200]) + (f"\n[{len(hits) - 200} more]" if len(hits) > 200 else "") if hits else "no line matches"
        )


def _saved(overlong: Overlong, args: JSONObject) -> str:
    try:
        return overlong.read(str(args.get("id", "")))
    except KeyError as exc:
        raise ToolError(str(exc.args[0])) from None


def local_tools(names: list[str], env: Environment, workspace: str, overlong: Overlong, max_output: int) -> dict[str, Tool]:
    """The tools for a task's ``needed_local_tools``; names we do not provide (Toolathlon's context
    management, ``history``) were accepted or refused when the task was loaded."""
    makers: dict[str, Callable[[], list[Tool]]] = {
        "claim_done": lambda: [ClaimDone()],
        "python_execute": lambda: [PythonExecute(env, workspace, max_output)],
        "sleep": lambda: [Sleep()],
        "handle_overlong_tool_outputs": lambda: [ViewOverlong(overlong), SearchOverlong(overlong)],
    }
    tools: dict[str, Tool] = {}
    for name in names:
        for tool in makers.get(name, list)():
            tools[tool.name] = tool
    return tools
