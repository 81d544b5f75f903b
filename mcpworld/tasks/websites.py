"""The web sites a task's browser opens, checked once before the run.

OSWorld's Chrome tasks open live sites in setup (``chrome_open_tabs``, a URL on the browser's
command line) or load one to grade (``page_info``, ``info_from_website``, ``pdf_from_url``). On a
machine that cannot reach a site the agent could only fail, and that failure would be the
network's: such a task is skipped, naming the site and why it cannot be reached. One TCP connect
per host and port, a few at a time, cached for the run. Loopback sites are the episode's own
(a server its setup starts) and are not checked. A task whose solution file declares ``offline:``
(its answer needs none of the sites' content) is not checked either.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlparse

from mcpworld.core.steps import normalize_step
from mcpworld.core.task import Task

URL = re.compile(r"https?://[^\s'\"<>]+")
FETCHING_GETTERS = ("page_info", "info_from_website", "pdf_from_url")
COMMAND_STEPS = ("launch", "execute", "command")


def _urls_in(value: Any) -> Iterator[str]:
    for text in value if isinstance(value, list) else [value]:
        yield from URL.findall(str(text))


def site_urls(task: Task) -> list[str]:
    """Every http(s) URL the task's steps open and its getters load."""
    urls: list[str] = []
    for steps in (task.setup, task.evaluator.postconfig if task.evaluator else []):
        for step in steps:
            kind, params = normalize_step(step)
            if kind == "chrome_open_tabs":
                urls += [str(u) for u in params.get("urls_to_open") or []]
            elif kind in COMMAND_STEPS:
                urls += _urls_in(params.get("command", ""))
    for cfg in task.evaluator.getters() if task.evaluator else []:
        if cfg.get("type") in FETCHING_GETTERS:
            # pdf_from_url names its page in "path", as OSWorld's getter reads it
            where = cfg.get("path") if cfg.get("type") == "pdf_from_url" else cfg.get("url")
            if where:
                urls.append(str(where))
    return list(dict.fromkeys(u for u in urls if urlparse(u).hostname))


def _endpoint(url: str) -> tuple[str, int]:
    parsed = urlparse(url)
    return str(parsed.hostname), parsed.port or (443 if parsed.scheme == "https" else 80)


def _loopback(url: str) -> bool:
    """A site on this machine is the episode's own (a server its setup starts): not checkable before."""
    host = str(urlparse(url).hostname)
    return host == "localhost" or host.startswith("127.") or host == "::1"


def why_unreachable(host: str, port: int, timeout_s: float = 3.0) -> str | None:
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
        return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__


def skip_unreachable(tasks: list[Task], timeout_s: float = 3.0, workers: int = 8) -> None:
    """Give every runnable task whose sites this machine cannot reach its skip reason."""
    needed = {t.id: [u for u in site_urls(t) if not _loopback(u)] for t in tasks if not t.skip_reason and not t.offline}
    endpoints = sorted({_endpoint(u) for urls in needed.values() for u in urls})
    if not endpoints:
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        causes = dict(zip(endpoints, pool.map(lambda e: why_unreachable(e[0], e[1], timeout_s), endpoints), strict=True))
    for task in tasks:
        for url in needed.get(task.id, []):
            cause = causes[_endpoint(url)]
            if cause:
                host, port = _endpoint(url)
                task.skip_reason = (
                    f"it opens {url}, and this machine cannot reach {host}:{port} ({cause}); run it where that site is reachable"
                )
                break
