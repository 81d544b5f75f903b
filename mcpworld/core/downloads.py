"""Files that tasks name by URL (OSWorld/WAA ``download`` steps, ``cloud_file`` gold files), fetched
once over HTTP(S) into a content cache keyed by URL, or served from a local mirror.

Why a cache of our own: a suite names the same few hundred files in every run of every sweep, and
the hosts (Hugging Face, raw GitHub) rate-limit. An entry is ``<root>/<sha256(url)[:2]>/<sha256(url)>/
<file name>`` with ``meta.json`` (url, size, sha256, etag); it is written under a lock and moved in
place only when complete, so parallel episodes and jobs never see half a file, and an interrupted
download resumes from its ``.part`` with an HTTP Range request.

Lookup order for a URL: a local path or ``file://`` URL as is; ``rewrite`` (URL prefix → another
URL prefix or a folder); ``mirror`` (a local copy of a suite's file cache, see ``mirror_path``);
the cache; the network.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

import httpx

log = logging.getLogger(__name__)

CHUNK = 1 << 16
RETRY_STATUS = {408, 425, 429, 500, 502, 503, 504}
# Where each suite's file host keeps a file under its own folders: the part of the URL after it
# is the file's path inside a mirror (OSWorld's Hugging Face file caches; WAA's GitHub repository).
MIRROR_ROOTS = ("/resolve/main/", "/raw/main/", "raw.githubusercontent.com/rogeriobonatti/winarenafiles/main/")


class DownloadError(Exception):
    """A file could not be had from any source; the message names the URL and the last cause."""

    def __init__(self, url: str, cause: str):
        super().__init__(f"could not fetch {url}: {cause}")
        self.url, self.cause = url, cause


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mcpworld" / "files"


def is_remote(url: str) -> bool:
    return urlparse(url).scheme in ("http", "https")


def mirror_path(url: str) -> str:
    """The URL's path inside a mirror folder: what follows the suite's file-host root
    (``…/resolve/main/libreoffice_calc/<id>/a.xlsx`` → ``libreoffice_calc/<id>/a.xlsx``), else
    ``<host>/<path>``."""
    parsed = urlparse(url)
    whole = parsed.netloc + unquote(parsed.path)
    for root in MIRROR_ROOTS:
        at = whole.find(root)
        if at >= 0:
            return whole[at + len(root) :]
    return whole


def _local(target: str) -> Path:
    return Path(unquote(urlparse(target).path)) if target.startswith("file://") else Path(target).expanduser()


@dataclass
class FileCache:
    root: Path = field(default_factory=default_cache_dir)
    mirror: Path | None = None
    rewrite: dict[str, str] = field(default_factory=dict)
    retries: int = 3
    timeout_s: float = 300.0
    progress: Callable[[str, int, int | None], None] | None = None  # (url, bytes so far, total)
    # hosts that could not be connected to after every attempt: the next file from one fails at once
    # (an offline machine would otherwise spend every retry's backoff on each of a suite's files)
    unreachable: dict[str, str] = field(default_factory=dict)

    # ------------------------------------------------------------------ lookup
    def fetch(self, url: str, sha256: str | None = None) -> Path:
        """A local file holding ``url``'s content; DownloadError once every source has failed."""
        source = self._rewritten(url)
        if not is_remote(source):
            path = _local(source)
            if path.is_file():
                return path
            raise DownloadError(url, f"{path} does not exist" + (f" (rewritten from {url})" if source != url else ""))
        if self.mirror is not None:
            path = Path(self.mirror) / mirror_path(source)
            if path.is_file():
                return path
            log.debug("mirror has no %s", path)
        entry = self.entry(source)
        final = entry / self._name(source)
        if self._complete(entry, final, sha256):
            return final
        entry.mkdir(parents=True, exist_ok=True)
        with open(entry / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one downloader per entry, across threads and processes
            if not self._complete(entry, final, sha256):
                self._download(url, source, entry, final, sha256)
        return final

    def cached(self, url: str) -> Path | None:
        """The cached or mirrored file for ``url`` without touching the network, or None."""
        source = self._rewritten(url)
        if not is_remote(source):
            path = _local(source)
            return path if path.is_file() else None
        if self.mirror is not None and (Path(self.mirror) / mirror_path(source)).is_file():
            return Path(self.mirror) / mirror_path(source)
        entry = self.entry(source)
        final = entry / self._name(source)
        return final if self._complete(entry, final, None) else None

    def entry(self, url: str) -> Path:
        key = hashlib.sha256(url.encode()).hexdigest()
        return Path(self.root) / key[:2] / key

    def _rewritten(self, url: str) -> str:
        prefixes = sorted((p for p in self.rewrite if url.startswith(p)), key=len, reverse=True)
        if not prefixes:
            return url
        target = str(self.rewrite[prefixes[0]])
        rest = url[len(prefixes[0]) :]
        if is_remote(target) or target.startswith("file://"):
            return target + rest
        return str(Path(target).expanduser() / unquote(rest))

    @staticmethod
    def _name(url: str) -> str:
        name = os.path.basename(unquote(urlparse(url).path)).strip()
        return name if name and name not in (".", "..") else "file"

    @staticmethod
    def _complete(entry: Path, final: Path, sha256: str | None) -> bool:
        try:
            meta = json.loads((entry / "meta.json").read_text())
        except (OSError, ValueError):
            return False
        if not final.is_file() or final.stat().st_size != meta.get("size"):
            return False
        return sha256 is None or meta.get("sha256") == sha256.lower()

    # ------------------------------------------------------------------ network
    def _download(self, url: str, source: str, entry: Path, final: Path, sha256: str | None) -> None:
        part = final.with_name(final.name + ".part")
        host = urlparse(source).netloc
        if host in self.unreachable:
            raise DownloadError(url, f"{host} could not be reached earlier in this run ({self.unreachable[host]})")
        cause = "no attempt"
        connect_failed = False
        for attempt in range(max(1, self.retries)):
            if attempt:
                time.sleep(min(30.0, 2 ** (attempt - 1)) * (0.5 + random.random()))
            try:
                etag = self._stream(source, part)
            except _Fatal as exc:
                raise DownloadError(url, str(exc)) from None
            except (httpx.HTTPError, OSError, _Retry) as exc:
                cause = f"{type(exc).__name__}: {exc}" if not isinstance(exc, _Retry) else str(exc)
                connect_failed = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
                log.warning("download of %s failed (attempt %d/%d): %s", url, attempt + 1, self.retries, cause)
                continue
            digest = _sha256(part)
            if sha256 and digest != sha256.lower():
                part.unlink(missing_ok=True)
                raise DownloadError(url, f"sha256 {digest} differs from the expected {sha256}")
            size = part.stat().st_size
            os.replace(part, final)
            meta = {"url": source, "size": size, "sha256": digest, "etag": etag, "fetched": time.time()}
            tmp = entry / "meta.json.tmp"
            tmp.write_text(json.dumps(meta, indent=1))
            os.replace(tmp, entry / "meta.json")
            return
        if connect_failed:
            self.unreachable[host] = cause
        raise DownloadError(url, f"{cause} (after {self.retries} attempts)")

    def _stream(self, url: str, part: Path) -> str | None:
        """Append the rest of ``url`` to ``part`` (Range resume); the response's ETag."""
        have = part.stat().st_size if part.exists() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        timeout = httpx.Timeout(self.timeout_s, connect=min(30.0, self.timeout_s))
        with httpx.stream("GET", url, headers=headers, timeout=timeout, follow_redirects=True) as response:
            if response.status_code == 416 and have:  # the part is the whole file already
                response.close()
                return None
            if response.status_code in RETRY_STATUS:
                raise _Retry(f"HTTP {response.status_code}")
            if response.status_code >= 400:
                raise _Fatal(f"HTTP {response.status_code} {response.reason_phrase}")
            resumed = response.status_code == 206
            if not resumed:
                have = 0
            length = response.headers.get("content-length")
            total = have + int(length) if length and length.isdigit() else None
            done = have
            with open(part, "ab" if resumed else "wb") as out:
                for chunk in response.iter_bytes(CHUNK):
                    out.write(chunk)
                    done += len(chunk)
                    if self.progress:
                        self.progress(url, done, total)
            if total is not None and done != total:
                raise _Retry(f"connection closed after {done} of {total} bytes")
            etag = response.headers.get("etag")
            return str(etag) if etag is not None else None


class _Retry(Exception):
    """A transient failure: try again (resuming what arrived)."""


class _Fatal(Exception):
    """The server said no (404, 403 …): trying again cannot help."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
