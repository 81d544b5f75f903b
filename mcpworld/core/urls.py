"""URL equality as OSWorld's ``compare_urls`` has it: a missing scheme means ``http``; the host is
cut to its registered domain and subdomain, without the public suffix and the port, a sole ``www``
subdomain dropped (``www.airbnb.com.sg`` = ``airbnb.com``, ``maps.google.com`` ≠ ``google.com``);
a bare ``/`` path equals no path; path, query and fragment must match exactly. The public suffix
list is tldextract's bundled snapshot (never fetched). Shared by the Chrome steps and metrics."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlparse, urlunparse

_domains = None


def _split_host(netloc: str) -> Any:
    global _domains
    if _domains is None:
        import tldextract

        _domains = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)  # the bundled list, offline
    return _domains(netloc)


def normalize_url(url: str) -> str:
    text = str(url).strip()
    if not re.match(r"^[a-zA-Z][a-zA-Z0-9+\-.]*://", text):
        text = "http://" + text
    parsed = urlparse(text)
    host = _split_host(parsed.netloc.lower())
    sub = "" if host.subdomain == "www" else host.subdomain
    netloc = f"{sub}.{host.domain}" if sub else host.domain
    path = "" if parsed.path == "/" else parsed.path
    return urlunparse(parsed._replace(scheme=parsed.scheme.lower(), netloc=netloc, path=path))


def compare_urls(url1: Any, url2: Any) -> bool:
    """OSWorld's URL equality (see the module docstring); two Nones are equal, one None is not."""
    if url1 is None or url2 is None:
        return url1 is url2
    return normalize_url(url1) == normalize_url(url2)
