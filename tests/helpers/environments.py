"""Environment doubles: a real bash in a temporary home, without a desktop (DirEnvironment), and with a
recorded one that returns blank screenshots (FakeDesktop)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from PIL import Image

from mcpworld.env.base import Environment, ShellResult


class DirEnvironment(Environment):
    """Home is a temporary directory; shell runs real bash there; GUI methods are unavailable."""

    width = 1000
    height = 1000

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.cache_dir = root / "cache"
        self.home.mkdir(parents=True)
        self.steps: list[list[dict[str, Any]]] = []
        self.step_error: Exception | None = None
        self.shell_calls: list[str] = []

    # what the evaluator uses
    def run_steps(self, steps: list[dict[str, Any]]) -> None:
        self.steps.append(steps)
        if self.step_error is not None:
            raise self.step_error

    def shell(self, command: str, timeout: float = 30.0, max_output: int = 20_000) -> ShellResult:
        self.shell_calls.append(command)
        try:
            done = subprocess.run(["bash", "-c", command], cwd=self.home, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            return ShellResult(returncode=-9, stdout=out, stderr="", timed_out=True)
        return ShellResult(done.returncode, done.stdout[:max_output], done.stderr[:max_output])

    def read_file(self, path: str) -> bytes:
        return self.resolve(path).read_bytes()

    def list_dir(self, path: str) -> list[str]:
        target = self.resolve(path)
        if not target.is_dir():
            raise FileNotFoundError(path)
        return sorted(p.name for p in target.iterdir())

    def write(self, path: str, text: str) -> Path:
        """Test helper: create a file inside the home."""
        target = self.resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return target

    def end_episode(self) -> None:
        pass

    def close(self) -> None:
        pass

    # the desktop part is not needed here
    def reset(self, task, episode_dir):  # type: ignore[override]
        raise NotImplementedError

    def screenshot(self):  # type: ignore[override]
        raise NotImplementedError

    def act(self, action):  # type: ignore[override]
        raise NotImplementedError

    def settle(self, before=None):  # type: ignore[override]
        raise NotImplementedError

    def cursor_position(self):  # type: ignore[override]
        raise NotImplementedError


class FakeDesktop(DirEnvironment):
    """DirEnvironment (real bash in a temp home) plus a recorded, screenshot-returning desktop."""

    def __init__(self, root: Path, width: int = 1000, height: int = 1000) -> None:
        super().__init__(root)
        self.width, self.height = width, height
        self.actions: list[dict[str, Any]] = []
        self.cursor = (0, 0)
        self.screenshots = 0
        self.settles = 0

    def screenshot(self) -> Image.Image:
        self.screenshots += 1
        return Image.new("RGB", (self.width, self.height), "white")

    def act(self, action: dict[str, Any]) -> None:
        self.actions.append(dict(action))

    def settle(self, before=None) -> Image.Image:
        self.settles += 1
        return self.screenshot()

    def cursor_position(self) -> tuple[int, int]:
        return self.cursor
