"""A filesystem-backed Environment double for evaluator tests (no desktop)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

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


@pytest.fixture
def env(tmp_path: Path) -> DirEnvironment:
    return DirEnvironment(tmp_path)


@pytest.fixture
def local(tmp_path: Path):
    """Write a host-side file (as a getter's cached copy would be) and return its path string."""
    folder = tmp_path / "local"
    folder.mkdir()

    def write(name: str, text: str) -> str:
        path = folder / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    return write


@pytest.fixture
def make_docx(tmp_path: Path):
    """make_docx(name, *paragraphs, build=fn): a real .docx whose paragraphs are strings or lists of
    (text, {font attribute: value}) runs, ``build(document)`` applied last; its path string."""
    import docx

    def write(name: str, *paragraphs: Any, build: Any = None) -> str:
        document = docx.Document()
        for paragraph in paragraphs:
            if isinstance(paragraph, str):
                document.add_paragraph(paragraph)
                continue
            p = document.add_paragraph()
            for text, fmt in paragraph:
                run = p.add_run(text)
                for key, value in fmt.items():
                    setattr(run.font, key, value)
        if build is not None:
            build(document)
        path = tmp_path / name
        document.save(str(path))
        return str(path)

    return write
