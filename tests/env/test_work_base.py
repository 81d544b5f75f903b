"""A work base the desktop accounts cannot enter is one clear error up front, not a bus that never starts."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from mcpworld.core.errors import UserError
from mcpworld.env import leftovers
from mcpworld.env.local import LocalEnvironment, require_open_to_desktops

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="desktop accounts exist only when the harness is root")


@pytest.fixture
def open_folder():
    """A folder under /tmp that others may enter (pytest's own tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="mcpworld-test-base-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_closed_work_base_is_named_with_the_fix_and_leaves_nothing(open_folder, monkeypatch):
    closed = open_folder / "closed"
    base = closed / "base"
    base.mkdir(parents=True)
    closed.chmod(0o700)  # as pytest's own /tmp/pytest-of-root, or a private TMPDIR
    monkeypatch.setenv(leftovers.WORK_BASE_VARIABLE, str(base))
    with pytest.raises(UserError, match=rf"under {closed} \(mode 700\).*set MCPWORLD_WORK_BASE"):
        LocalEnvironment(100, 100)
    assert list(base.iterdir()) == []  # the work folder it had made is gone again


def test_an_open_work_base_passes(open_folder):
    require_open_to_desktops(open_folder / "work")  # no error
    (open_folder / "closed").mkdir(mode=0o700)
    with pytest.raises(UserError):
        require_open_to_desktops(open_folder / "closed" / "work")
