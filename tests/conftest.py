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
