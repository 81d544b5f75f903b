"""The one task model every loader maps onto."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpworld.core.errors import TaskFileError
from mcpworld.core.steps import SetupStep, parse_steps
from mcpworld.core.task_parts import EvaluatorSpec, HandlerSetup, KeyStep, ScriptGrader, Solution

# OSWorld's VMs run as "user": paths in its tasks name /home/user, mapped to the episode's home
HOME_USER = re.compile(r"/home/user(?=/|\b|$)")


@dataclass
class ContextEntry:
    """Copy ``src`` (in the task folder) to ``dest`` (a home path like ``~/notes.txt``) before each attempt."""

    src: Path
    dest: str
    # unpack top-level *.tar.gz of a copied folder in place (safely) and drop the archives
    extract_archives: bool = False


@dataclass
class Task:
    id: str
    app: str
    instruction: str  # rendered
    dir: Path
    source: Path  # the file the task came from, for error messages
    params: dict[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None
    max_steps: int | None = None
    tags: list[str] = field(default_factory=list)
    context: list[ContextEntry] = field(default_factory=list)
    setup: list[SetupStep] = field(default_factory=list)  # parsed at load (a mapping given here is parsed too)
    mcp_servers: list[str | dict[str, Any]] = field(default_factory=list)  # catalog names or server mappings
    key_steps: list[KeyStep] = field(default_factory=list)
    evaluator: EvaluatorSpec | None = None
    handler: Path | None = None
    handler_setup: HandlerSetup | None = None  # an MCPWorld handler's surroundings (PC-Canary tasks)
    solution: Solution = field(default_factory=Solution)  # per modality, the steps the oracle replays
    # where the agent works (MCP servers' {workspace}); a path in the home
    workspace: str = "~"
    local_tools: list[str] = field(default_factory=list)  # Toolathlon local tools: claim_done, python_execute …
    system_prompt: str = ""  # the task's own system prompt, after the harness's ({workspace} filled in)
    grader: ScriptGrader | None = None  # a script that judges the workspace (Toolathlon evaluation/main.py)
    format: str = "native"  # native | osworld | mcpworld | toolathlon
    skip_reason: str | None = None  # set by a loader when this machine cannot run the task (e.g. needs network)
    # why it may run where the sites it opens cannot be reached (its answer needs none of their
    # content: a browser setting, a bookmark): declared by our solution file (``offline:``)
    offline: str = ""
    unsolved: str = ""  # why no oracle solution can be written for it here (our solution file's ``unsolved:``)
    notes: list[str] = field(default_factory=list)  # what of the task file is not acted on here, by name
    # env.stage may run its setup ahead, while the previous episode runs (false: a setup that must run at
    # the episode's start, e.g. one that reads the clock)
    stage: bool = True

    def __post_init__(self) -> None:
        self.setup = parse_steps(self.setup, str(self.source))

    @property
    def infeasible(self) -> bool:
        return self.evaluator is not None and self.evaluator.infeasible


def read_json(path: Path) -> Any:
    """A task file's JSON, or one TaskFileError naming the file."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"{path}: not valid JSON: {exc}") from exc
