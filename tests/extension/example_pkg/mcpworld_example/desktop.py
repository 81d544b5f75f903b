"""An env backend with no display: a folder is the desktop's home and the shell runs bash in it.

An env backend is any callable ``(DesktopSettings, programs, apps) -> Environment``. Entry point:
``example_folder`` in ``mcpworld.env_backends``. It serves tasks a shell can do (``modality=cli``).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from PIL import Image

from mcpworld.core.task import Task
from mcpworld.env.base import Environment, ShellResult


class FolderDesktop(Environment):
    def __init__(self, settings: Any, programs: Any = (), apps: Any = ()) -> None:
        self.width, self.height = settings.width, settings.height
        self.apps = list(apps)  # the apps the run's tasks start, as the run's app catalog resolved them
        self.home = Path(tempfile.mkdtemp(prefix="mcpworld-example-"))

    def reset(self, task: Task, episode_dir: Path) -> None:
        shutil.rmtree(self.home, ignore_errors=True)
        self.home.mkdir(parents=True)
        (episode_dir / "example_apps.txt").write_text("\n".join(self.apps))

    def run_steps(self, steps: list[dict[str, Any]]) -> None:
        if steps:
            raise NotImplementedError("the example desktop runs no setup steps")

    def screenshot(self) -> Image.Image:
        return Image.new("RGB", (self.width, self.height))

    def act(self, action: Any) -> None:
        raise NotImplementedError("the example desktop has no screen to act on")

    def settle(self, before: Image.Image | None = None) -> Image.Image:
        return self.screenshot()

    def cursor_position(self) -> tuple[int, int]:
        return (0, 0)

    def shell(self, command: str, timeout: float = 30.0, max_output: int = 20_000) -> ShellResult:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=self.home,
            env={"HOME": str(self.home), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return ShellResult(done.returncode, done.stdout[:max_output], done.stderr[:max_output])

    def read_file(self, path: str) -> bytes:
        return (self.home / path.removeprefix("~/")).read_bytes()

    def list_dir(self, path: str) -> list[str]:
        return sorted(p.name for p in (self.home / path.removeprefix("~/")).iterdir())

    def end_episode(self) -> None:
        pass

    def close(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)
