"""OSWorld's Chrome setup steps on the episode's Chromium, over its DevTools port.

- ``chrome_open_tabs`` (``urls_to_open``): each URL in a new tab of the browser's first context, the
  tab the browser started with closed after the first one opens; a page that does not finish
  loading within 60 s is left loading (OSWorld logs it and goes on).
- ``chrome_close_tabs`` (``urls_to_close``): for each URL, the first tab showing it is closed (URLs
  compare as OSWorld's ``compare_urls``: mcpworld/urls.py).

The browser is the one a ``launch`` of ``google-chrome`` started (the desktop's shim gives it its
DevTools port). OSWorld retries the connection for a minute while Chrome starts; so do we. A
browser that never answers is the environment's failure (InfraError), never the agent's.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

from mcpworld.env.cdp import in_thread
from mcpworld.errors import InfraError
from mcpworld.urls import compare_urls

log = logging.getLogger(__name__)

CONNECT_TRIES, CONNECT_PAUSE_S = 15, 4.0
GOTO_TIMEOUT_MS = 60_000


def _with_context(port: int | None, step: str, work: Callable[[Any], None]) -> None:
    if port is None:
        raise InfraError(f"{step}: this desktop starts no Chromium with a DevTools port "
                         "(conf/app/chromium.yaml's program has ports: [cdp])")
    endpoint = f"http://127.0.0.1:{port}"

    def run() -> None:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            for attempt in range(CONNECT_TRIES):
                try:
                    browser = p.chromium.connect_over_cdp(endpoint, timeout=10_000)
                    break
                except PlaywrightError as exc:
                    if attempt == CONNECT_TRIES - 1:
                        raise InfraError(f"{step}: no Chromium answers at {endpoint} (was google-chrome "
                                         f"launched first?): {str(exc).splitlines()[0]}") from None
                    time.sleep(CONNECT_PAUSE_S)
            if not browser.contexts:
                raise InfraError(f"{step}: the Chromium at {endpoint} has no browser context")
            work(browser.contexts[0])  # leaving `with` disconnects; the browser keeps running

    in_thread(run)


def open_tabs(port: int | None, urls: list[str]) -> None:
    def work(context: Any) -> None:
        first = context.pages[0] if context.pages else None
        for i, url in enumerate(urls):
            page = context.new_page()
            try:
                page.goto(url, timeout=GOTO_TIMEOUT_MS)
            except Exception as exc:  # a slow or failing page stays open, as in OSWorld
                log.warning("chrome_open_tabs: %s did not finish loading: %s", url, str(exc).splitlines()[0])
            if i == 0 and first is not None:
                first.close()

    _with_context(port, "chrome_open_tabs", work)


def close_tabs(port: int | None, urls: list[str]) -> None:
    def work(context: Any) -> None:
        for url in urls:
            page = next((p for p in context.pages if compare_urls(p.url, url)), None)
            if page is not None:
                page.close()
            else:
                log.info("chrome_close_tabs: no tab shows %s", url)

    _with_context(port, "chrome_close_tabs", work)
