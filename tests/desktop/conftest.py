"""Desktop tests run real Xvfb displays and real apps; skipped only where Xvfb is absent."""

import shutil

import pytest


def pytest_collection_modifyitems(config, items):
    if shutil.which("Xvfb"):
        return
    skip = pytest.mark.skip(reason="Xvfb is not installed (make setup)")
    for item in items:
        if "desktop" in item.keywords:
            item.add_marker(skip)
