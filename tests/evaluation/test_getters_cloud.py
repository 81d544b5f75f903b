"""cloud_file: OSWorld's gold files by URL, placed in the cache dir as OSWorld places them."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpworld.core.errors import InfraError, UserError
from mcpworld.evaluation.getters.cloud import cloud_file
from tests.fakes.file_server import FileServer


@pytest.fixture
def host(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # the default file cache
    monkeypatch.setattr("mcpworld.core.downloads.time.sleep", lambda s: None)
    with FileServer({"/gold/a.docx": b"A", "/gold/b.docx": b"B", "/gold/c.docx": b"C"}) as server:
        yield server


def test_one_file_is_returned_as_a_path_under_dest(env, host):
    got = cloud_file(env, {"path": host.url + "/gold/a.docx", "dest": "gold_a.docx"})
    assert got == str(env.cache_dir.resolve() / "gold_a.docx") and Path(got).read_bytes() == b"A"
    assert (env.cache_dir.parent / "xdg" / "mcpworld" / "files").is_dir()  # fetched through the default cache


def test_multi_returns_the_entries_gives_picks_in_file_order(env, host):
    urls = [host.url + f"/gold/{n}.docx" for n in "abc"]
    got = cloud_file(
        env, {"type": "cloud_file", "multi": True, "path": urls, "dest": ["1.docx", "2.docx", "3.docx"], "gives": [2, 0]}
    )
    assert [Path(p).read_bytes() for p in got] == [b"A", b"C"]
    assert host.count("/gold/b.docx") == 0  # not given: not needed


def test_a_localized_path_is_copied_as_is(env, tmp_path):
    gold = tmp_path / "gold.xlsx"
    gold.write_bytes(b"G")
    assert Path(cloud_file(env, {"path": str(gold), "dest": "g.xlsx"})).read_bytes() == b"G"


def test_an_unreachable_gold_file_is_an_infra_error_not_the_agents(env, host):
    with pytest.raises(InfraError, match=r"cloud_file.*missing\.docx.*404"):
        cloud_file(env, {"path": host.url + "/gold/missing.docx", "dest": "m.docx"})


def test_multi_needs_lists_of_one_length(env, host):
    with pytest.raises(UserError, match="multi: true needs 'path' and 'dest' lists"):
        cloud_file(env, {"multi": True, "path": [host.url + "/gold/a.docx"], "dest": "a.docx"})
