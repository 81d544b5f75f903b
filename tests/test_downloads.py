"""The file cache against a real HTTP file host on 127.0.0.1: caching, retries, resume, mirrors."""

from __future__ import annotations

import hashlib
import threading

import pytest

from mcpworld.core.downloads import DownloadError, FileCache, mirror_path
from tests.fakes.file_server import FileServer

BIG = bytes(range(256)) * 4096  # 1 MiB: several chunks, so a dropped connection leaves a part


@pytest.fixture
def host():
    with FileServer({"/a/report.xlsx": b"sheet", "/big.bin": BIG}) as server:
        yield server


def cache_of(tmp_path, **kw) -> FileCache:
    kw.setdefault("retries", 3)
    return FileCache(root=tmp_path / "cache", **kw)


def test_second_fetch_is_served_from_the_cache(tmp_path, host):
    cache = cache_of(tmp_path)
    first = cache.fetch(host.url + "/a/report.xlsx")
    assert first.read_bytes() == b"sheet" and first.name == "report.xlsx"
    again = cache_of(tmp_path).fetch(host.url + "/a/report.xlsx")  # a new process's cache object
    assert again == first and host.count("/a/report.xlsx") == 1
    assert cache.cached(host.url + "/a/report.xlsx") == first
    assert cache.cached(host.url + "/a/other.xlsx") is None


def test_a_transient_error_is_retried(tmp_path, host, monkeypatch):
    monkeypatch.setattr("mcpworld.core.downloads.time.sleep", lambda s: None)
    host.statuses["/a/report.xlsx"] = [503, 429]
    assert cache_of(tmp_path).fetch(host.url + "/a/report.xlsx").read_bytes() == b"sheet"
    assert host.count("/a/report.xlsx") == 3


def test_a_dropped_connection_resumes_with_a_range_request(tmp_path, host, monkeypatch):
    monkeypatch.setattr("mcpworld.core.downloads.time.sleep", lambda s: None)
    host.cut_after["/big.bin"] = 300_000
    path = cache_of(tmp_path).fetch(host.url + "/big.bin")
    assert path.read_bytes() == BIG
    ranges = [r for p, r in host.requests if p == "/big.bin"]
    assert ranges[0] is None and ranges[1].startswith("bytes=") and int(ranges[1][6:].rstrip("-")) > 0
    assert not list(path.parent.glob("*.part"))


def test_not_found_fails_at_once_naming_the_url(tmp_path, host):
    url = host.url + "/missing.docx"
    with pytest.raises(DownloadError, match=r"missing\.docx.*HTTP 404"):
        cache_of(tmp_path).fetch(url)
    assert host.count("/missing.docx") == 1  # a 404 is not retried


def test_giving_up_after_the_retries_says_so(tmp_path, host, monkeypatch):
    monkeypatch.setattr("mcpworld.core.downloads.time.sleep", lambda s: None)
    host.statuses["/a/report.xlsx"] = [502, 502, 502]
    with pytest.raises(DownloadError, match=r"HTTP 502 \(after 3 attempts"):
        cache_of(tmp_path).fetch(host.url + "/a/report.xlsx")
    assert cache_of(tmp_path).cached(host.url + "/a/report.xlsx") is None


def test_a_host_that_cannot_be_connected_to_is_tried_once_per_run(tmp_path, host, monkeypatch):
    """Offline, a suite's hundreds of files on one host cost one round of retries, not one each."""
    import socket

    slept = []
    monkeypatch.setattr("mcpworld.core.downloads.time.sleep", slept.append)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{probe.getsockname()[1]}"
    cache = cache_of(tmp_path)
    with pytest.raises(DownloadError, match=r"ConnectError.*after 3 attempts"):
        cache.fetch(down + "/one.xlsx")
    assert len(slept) == 2
    with pytest.raises(DownloadError, match="could not be reached earlier in this run"):
        cache.fetch(down + "/two.xlsx")
    assert len(slept) == 2  # no more attempts, no more backoff
    assert cache.fetch(host.url + "/a/report.xlsx").read_bytes() == b"sheet"  # another host still is


def test_a_checksum_mismatch_keeps_nothing(tmp_path, host):
    with pytest.raises(DownloadError, match="sha256"):
        cache_of(tmp_path).fetch(host.url + "/a/report.xlsx", sha256="0" * 64)
    good = hashlib.sha256(b"sheet").hexdigest()
    assert cache_of(tmp_path).fetch(host.url + "/a/report.xlsx", sha256=good).read_bytes() == b"sheet"


def test_parallel_fetches_of_one_url_download_it_once(tmp_path, host):
    cache = cache_of(tmp_path)
    out: list = []
    threads = [threading.Thread(target=lambda: out.append(cache.fetch(host.url + "/big.bin"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(out)) == 1 and out[0].read_bytes() == BIG
    assert host.count("/big.bin") == 1


def test_a_mirror_folder_serves_a_suites_files_without_the_network(tmp_path):
    url = "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/libreoffice_calc/0a2e43bf/a.xlsx"
    assert mirror_path(url) == "libreoffice_calc/0a2e43bf/a.xlsx"
    waa = "https://raw.githubusercontent.com/rogeriobonatti/winarenafiles/main/task_files/x/b.docx"
    assert mirror_path(waa) == "task_files/x/b.docx"
    assert mirror_path("https://example.org/f%20g/h.txt") == "example.org/f g/h.txt"
    mirror = tmp_path / "mirror"
    (mirror / "libreoffice_calc/0a2e43bf").mkdir(parents=True)
    (mirror / "libreoffice_calc/0a2e43bf/a.xlsx").write_bytes(b"mirrored")
    cache = cache_of(tmp_path, mirror=mirror)
    assert cache.fetch(url).read_bytes() == b"mirrored"  # no host: a network fetch would fail
    assert cache.cached(url) == mirror / "libreoffice_calc/0a2e43bf/a.xlsx"


def test_rewrite_maps_a_prefix_to_a_folder_or_another_host(tmp_path, host):
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "x.txt").write_text("from a folder")
    cache = cache_of(tmp_path, rewrite={"https://example.org/": str(folder), "https://example.org/hosted/": host.url + "/a/"})
    assert cache.fetch("https://example.org/x.txt").read_text() == "from a folder"
    assert cache.fetch("https://example.org/hosted/report.xlsx").read_bytes() == b"sheet"  # longest prefix wins
    with pytest.raises(DownloadError, match=r"does not exist \(rewritten from https://example\.org/y\.txt"):
        cache.fetch("https://example.org/y.txt")


def test_a_local_path_or_file_url_is_used_as_is(tmp_path):
    f = tmp_path / "local.txt"
    f.write_text("here")
    cache = cache_of(tmp_path)
    assert cache.fetch(str(f)) == f and cache.fetch(f"file://{f}") == f
    assert not (tmp_path / "cache").exists()


def test_progress_reports_bytes_and_total(tmp_path, host):
    seen: list = []
    cache_of(tmp_path, progress=lambda url, done, total: seen.append((done, total))).fetch(host.url + "/big.bin")
    assert seen[-1] == (len(BIG), len(BIG)) and all(t == len(BIG) for _, t in seen)
