"""A desktop-less environment over a home directory: for evaluating a finished state.

``python -m mcpworld.evaluation`` and the /evaluate service grade a directory that stands in for
the episode's home; file and shell getters work, GUI steps say clearly that they need a desktop.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcpworld.core.errors import InfraError
from mcpworld.env.base import Environment, ShellResult
from mcpworld.env.context import copy_into_home
from mcpworld.env.local.processes import run_bounded, scrubbed_env
from mcpworld.env.steps import run_steps


class HomeEnvironment(Environment):
    def __init__(self, home: Path, width: int = 1000, height: int = 1000):
        self.home = Path(home).resolve()
        if not self.home.is_dir():
            raise FileNotFoundError(f"home directory {home} does not exist")
        self.width, self.height = width, height
        self._tmp = tempfile.TemporaryDirectory(prefix="mcpworld-eval-")
        self.cache_dir = Path(self._tmp.name) / "cache"
        self.cache_dir.mkdir()
        self.runtime_dir = Path(self._tmp.name) / "run"
        self.runtime_dir.mkdir(mode=0o700)

    # --- what evaluation uses ---------------------------------------------------------------
    def shell(self, command: str, timeout: float = 30.0, max_output: int = 20_000) -> ShellResult:
        return run_bounded(["bash", "-c", command], scrubbed_env(self.home, self.runtime_dir), self.home, timeout, max_output)

    def read_file(self, path: str) -> bytes:
        return self.resolve(path).read_bytes()

    def list_dir(self, path: str) -> list[str]:
        return sorted(p.name for p in self.resolve(path).iterdir())

    def run_steps(self, steps: Sequence[object]) -> None:
        run_steps(self, steps, where="postconfig")

    # --- step host: only steps that need no desktop -------------------------------------------
    def execute(
        self,
        command: list[str] | str,
        shell: bool = False,
        timeout_s: float = 60,
        env: dict[str, str] | None = None,
        task_code: bool = False,
    ) -> None:
        import shlex

        if env:  # (only an episode's preprocess has variables of its own; grading a folder runs none)
            raise InfraError("a step with variables of its own cannot run when grading a home folder")

        text = command if isinstance(command, str) else shlex.join(str(c) for c in command)
        result = self.shell(self.map_paths(text), timeout=timeout_s)
        if result.returncode != 0:
            raise InfraError(f"step command {text!r} exited {result.returncode}: {result.stderr.strip()[-300:]}")

    def copy_in(self, src: str, dest: str) -> None:
        copy_into_home(Path(src), self.resolve(dest))

    def _needs_desktop(self, *args: Any, **kwargs: Any) -> None:
        raise InfraError("this needs a live desktop; grading a bare home directory cannot provide one")

    launch = open_path = activate_window = close_window = _needs_desktop

    # --- no desktop -----------------------------------------------------------------------------
    def reset(self, task: Any, episode_dir: Path) -> None:
        raise InfraError("a home-directory environment cannot run episodes")

    screenshot = act = settle = cursor_position = accessibility_tree = _needs_desktop  # type: ignore[assignment]

    def end_episode(self) -> None:
        pass

    def close(self) -> None:
        self._tmp.cleanup()
