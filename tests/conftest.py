"""Fixtures every test folder may use."""

import shutil

import pytest


@pytest.fixture
def shared_dir():
    """A folder the desktop account can write too (pytest's tmp_path is root's, closed to it)."""
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp(prefix="mcpworld-test-shared-"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def every_program_installed(monkeypatch):
    """This machine as `make setup` and `make apps` leave it: every catalog app, and every command a
    task's setup or grader runs, counts as installed. Tests of which tasks a run selects use it so
    their counts do not depend on what this machine happens to have (a bare runner has none of it)."""
    from mcpworld.apps.programs import Program
    from mcpworld.tasks import programs_needed

    monkeypatch.setattr(Program, "installed", lambda self: True)
    monkeypatch.setattr(programs_needed, "why_missing", lambda *_args, **_kw: None)


@pytest.fixture
def servers_installed(tmp_path_factory) -> str:
    """The override that points the config at a stand-in for `make servers`: an empty executable at
    each catalog server's command (choosing tasks only checks the program is there; none is started),
    so tests need neither the installed servers nor npm."""
    from tests.helpers.config import make

    root = tmp_path_factory.mktemp("servers")
    for spec in make("modality=mcp").mcp.catalog.values():
        command = spec.get("command") or ""
        if command.startswith("{servers}/"):
            program = root / command.removeprefix("{servers}/")
            program.parent.mkdir(parents=True, exist_ok=True)
            program.write_text("#!/bin/sh\n")
            program.chmod(0o755)
    return f"mcp.servers_dir={root}"
