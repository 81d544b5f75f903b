"""Fixtures for evaluator tests: a filesystem-backed Environment double (no desktop) and files to grade."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.environments import DirEnvironment


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
