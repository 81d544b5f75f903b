"""A package installed from outside mcpworld, as importlib.metadata sees one: a module and a
``*.dist-info`` with its ``entry_points.txt``, on a folder put on sys.path for the test."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

Install = Callable[[str, str, dict[str, dict[str, str]]], Path]


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Install]:
    """``installed(module, source, {group: {name: "module:attr"}})`` installs a one-module package."""
    site = tmp_path / "site"

    def install(module: str, source: str, groups: dict[str, dict[str, str]]) -> Path:
        (site / f"{module}.py").write_text(source)
        info = site / f"{module}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
        lines = [
            f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in names.items()) for group, names in groups.items()
        ]
        (info / "entry_points.txt").write_text("\n".join(lines))
        importlib.invalidate_caches()
        return site

    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    yield install
    for name in [m for m in sys.modules if m.startswith("outside_")]:
        del sys.modules[name]
