"""URL equality as OSWorld's ``compare_urls`` has it: a missing scheme means ``http``, scheme and
host are lower-cased, a leading ``www.`` is dropped and a bare ``/`` path equals no path; query
and fragment must match exactly. Shared by the Chrome setup steps and the browser metrics."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlparse, urlunparse


def normalize_url(url: str) -> str:
    text = str(url).strip()
    if not re.match(r"^[a-zA-Z][a-zA-Z0-9+\-.]*:", text):
        text = "http://" + text
    parsed = urlparse(text)
    netloc = parsed.netloc.lower()
    if netloc.startswith("www."):
        netloc = netloc[4:]
    path = "" if parsed.path == "/" else parsed.path
    return urlunparse(parsed._replace(scheme=parsed.scheme.lower(), netloc=netloc, path=path))


def compare_urls(url1: Any, url2: Any) -> bool:
    """OSWorld's URL equality (see the module docstring); two Nones are equal, one None is not."""
    if url1 is None or url2 is None:
        return url1 is url2
    return normalize_url(url1) == normalize_url(url2)
