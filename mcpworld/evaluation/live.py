"""A running desktop that other harnesses grade over HTTP (``python -m mcpworld.evaluation.server --live``).

Windows Agent Arena's harness asks the machine to grade a task against its *current* state. Here the
grading runs with the harness-side Environment (``env=local``: this host's Xvfb desktop; ``env=docker``:
the container reached through its desktop service, its bind-mounted home and its app ports), through
the same ``verdict.judge`` an episode uses, so every getter works (accessibility tree, windows, an
app's running settings, Chromium over DevTools) and the verdict is the episode's. The desktop image
holds only the service's few packages, never the evaluator's, which is why grading does not live there.

The folder the desktop is served from holds ``endpoint.json`` (URL, display, viewer) and ``token``
(mode 0600, ``mcpworld.core.listener.write_token``): another harness on this machine reads both,
nothing else ever prints the token.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcpworld.apps.programs import Program, programs_started_by
from mcpworld.core.errors import UserError
from mcpworld.core.listener import TOKEN_FILE, write_token
from mcpworld.core.task import Task
from mcpworld.env.base import Environment
from mcpworld.evaluation.client import ENDPOINT_FILE
from mcpworld.evaluation.standalone import grade_in


class LiveDesktop:
    """One desktop, set up for a task and graded as it is now; one request at a time (a grade must
    not see a reset half done)."""

    def __init__(self, env: Environment, folder: Path, threshold: float = 1.0, display_here: bool = True):
        """``display_here``: the desktop's X display is on this host (env=local), not in a container."""
        self.env, self.folder, self.threshold = env, folder, threshold
        self.display_here = display_here
        self.task: Task | None = None
        self._resets = 0
        self._lock = threading.Lock()

    def reset(self, task: Task) -> dict[str, Any]:
        """The task's context restored and its setup run on a fresh desktop, as an episode starts."""
        if task.skip_reason:
            raise UserError(f"task {task.id} cannot run on this machine: {task.skip_reason}")
        with self._lock:
            self._resets += 1
            self.env.reset(task, self.folder / f"reset-{self._resets:03d}")
            self.task = task
            return self.describe()

    def evaluate(self, task: Task, final_action: str | None = "DONE") -> dict[str, Any]:
        with self._lock:
            return grade_in(task, self.env, final_action, self.threshold)

    def describe(self) -> dict[str, Any]:
        """What a harness needs to drive the desktop: its X display and the cookie file its clients
        need (``XAUTHORITY``; env=local), where to watch it, the task."""
        logs = self.folder / f"reset-{self._resets:03d}" / "logs" / "desktop.json"
        desktop = json.loads(logs.read_text()) if logs.is_file() else {}
        return {
            "task": self.task.id if self.task else None,
            "display": desktop.get("display") if self.display_here else None,
            "xauthority": desktop.get("xauthority") if self.display_here else None,
            "viewer_url": self.env.viewer_url,
            "home": str(self.env.home),
        }


def apps_started_by(task: Task, programs: Sequence[Program]) -> list[str]:
    """The app configs whose programs the task starts: what an env=docker image must hold for it."""
    return sorted(p.app for p in programs_started_by(task, programs))


def write_endpoint(folder: Path, url: str, token: str, about: dict[str, Any]) -> Path:
    """``endpoint.json`` (no secret in it) and ``token`` (0600) for a harness on this machine."""
    token_path = write_token(folder / TOKEN_FILE, token)
    endpoint = folder / ENDPOINT_FILE
    endpoint.write_text(json.dumps({"url": url, "token_file": str(token_path), **about}, indent=2))
    return endpoint
