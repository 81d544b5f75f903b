"""A work base the desktop accounts cannot enter is one clear error up front, not a bus that never starts."""

from __future__ import annotations

import os

import pytest

from mcpworld.core.errors import UserError
from mcpworld.env.local import leftovers
from mcpworld.env.local.environment import LocalEnvironment, require_open_to_desktops

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="desktop accounts exist only when the harness is root")


def test_a_closed_work_base_is_named_with_the_fix_and_leaves_nothing(shared_dir, monkeypatch):
    closed = shared_dir / "closed"
    base = closed / "base"
    base.mkdir(parents=True)
    closed.chmod(0o700)  # as pytest's own /tmp/pytest-of-root, or a private TMPDIR
    monkeypatch.setenv(leftovers.WORK_BASE_VARIABLE, str(base))
    with pytest.raises(UserError, match=rf"under {closed} \(mode 700\).*set MCPWORLD_WORK_BASE"):
        LocalEnvironment(100, 100)
    assert list(base.iterdir()) == []  # the work folder it had made is gone again


def test_an_open_work_base_passes(shared_dir):
    require_open_to_desktops(shared_dir / "work")  # no error
    (shared_dir / "closed").mkdir(mode=0o700)
    with pytest.raises(UserError):
        require_open_to_desktops(shared_dir / "closed" / "work")
