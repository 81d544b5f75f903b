"""The real browser the MLflow UI tests drive: Playwright with the system Chromium."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def require_browser() -> None:
    """Skip the calling test, saying why, where Playwright or the system Chromium is missing."""
    pytest.importorskip("playwright")
    if not Path(CHROMIUM).exists():
        pytest.skip("no system Chromium for Playwright")
