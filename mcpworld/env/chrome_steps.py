"""OSWorld's Chrome setup steps on the episode's Chromium, over its DevTools port.

- ``chrome_open_tabs`` (``urls_to_open``): each URL in a new tab of the browser's first context, the
  tab the browser started with closed after the first one opens; a page that does not finish
  loading within 60 s is left loading (OSWorld logs it and goes on).
- ``update_browse_history`` (``history``: url, title, visit_time_from_now_in_seconds): rows added
  to the profile's History database before the browser starts (see ``HISTORY_SCRIPT``).
- ``chrome_close_tabs`` (``urls_to_close``): for each URL, the first tab showing it is closed (URLs
  compare as OSWorld's ``compare_urls``: mcpworld/urls.py).

And one thing a ``launch`` does on Chrome that Chromium does not: ``google-chrome chrome://settings/…``
opens that page, where Debian's Chromium ignores chrome:// URLs on its command line and shows a
new tab. ``open_command_line_pages`` opens them over the DevTools port once the browser is ready.

The browser is the one a ``launch`` of ``google-chrome`` started (the desktop's shim gives it its
DevTools port). OSWorld retries the connection for a minute while Chrome starts; so do we. A
browser that never answers is the environment's failure (InfraError), never the agent's.
"""

from __future__ import annotations

import json
import logging
import shlex
import time
from collections.abc import Callable
from typing import Any

from mcpworld.core.errors import InfraError, TaskFileError
from mcpworld.core.urls import compare_urls
from mcpworld.env.cdp import cdp_call, in_thread

log = logging.getLogger(__name__)

CONNECT_TRIES, CONNECT_PAUSE_S = 15, 4.0
GOTO_TIMEOUT_MS = 60_000


def _with_context(port: int | None, step: str, work: Callable[[Any], None]) -> None:
    if port is None:
        raise InfraError(
            f"{step}: this desktop starts no Chromium with a DevTools port "
            "(mcpworld/conf/app/chromium.yaml's program has ports: [cdp])"
        )
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
                        raise InfraError(
                            f"{step}: no Chromium answers at {endpoint} (was google-chrome "
                            f"launched first?): {str(exc).splitlines()[0]}"
                        ) from None
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


# what a browser shows where it opened no page of its own: a new tab, or nothing yet
BLANK_PAGES = ("about:blank", "chrome://newtab/", "chrome://new-tab-page/", "chrome://new-tab-page-third-party/")


def command_line_pages(argv: list[str]) -> list[str]:
    """The chrome:// pages a browser command line asks for (its arguments that are no option)."""
    return [a for a in argv[1:] if not a.startswith("-") and a.lower().startswith("chrome://")]


def open_command_line_pages(port: int | None, argv: list[str]) -> None:
    """Open the chrome:// pages ``argv`` names as Chrome would have at start: the first in the newest
    blank tab (the one the launch opened), the others in new tabs. Nothing when it names none."""
    urls = command_line_pages(argv)
    if not urls:
        return

    def work(context: Any) -> None:
        blank = [p for p in context.pages if p.url in BLANK_PAGES]
        for i, url in enumerate(urls):
            page = blank[-1] if i == 0 and blank else context.new_page()
            page.goto(url, timeout=GOTO_TIMEOUT_MS)

    _with_context(port, f"opening {', '.join(urls)} (given on the browser's command line)", work)


def shown_url(page: Any) -> str:
    """The tab's URL as its address bar shows it. A page that failed to load (a site this machine
    cannot reach) is Chromium's ``chrome-error://chromewebdata/`` to Playwright, while the tab, its
    history and its bookmark keep the URL it was sent to: that one, as on a machine where it loads."""
    url = str(page.url)
    if not url.startswith("chrome-error://"):
        return url
    try:
        history = cdp_call(page, "Page.getNavigationHistory")
        return str(history["entries"][history["currentIndex"]]["url"]) or url
    except Exception as exc:  # a closing tab: Playwright's answer stands
        log.info("reading a failed tab's URL failed: %s", exc)
        return url


def close_tabs(port: int | None, urls: list[str]) -> None:
    def work(context: Any) -> None:
        for url in urls:
            page = next((p for p in context.pages if compare_urls(shown_url(p), url)), None)
            if page is not None:
                page.close()
            else:
                log.info("chrome_close_tabs: no tab shows %s", url)

    _with_context(port, "chrome_close_tabs", work)


# update_browse_history: Chromium's own History database (made by starting the desktop's Chromium
# headless once when the profile has none, as OSWorld ships one Chrome made), then OSWorld's rows:
# one url and one visit per entry, visit_time_from_now_in_seconds before now, transition 805306368.
HISTORY_SCRIPT = r"""
set -e
profile="$HOME/.config/google-chrome"
history="$profile/Default/History"
if [ ! -f "$history" ]; then
  "$CHROMIUM" --headless=new --user-data-dir="$profile" --no-first-run --disable-gpu about:blank >/dev/null 2>&1 &
  browser=$!
  for _ in $(seq 150); do [ -f "$history" ] && break; sleep 0.2; done
  sleep 1; kill "$browser" 2>/dev/null || true; wait "$browser" 2>/dev/null || true
fi
[ -f "$history" ] || { echo "Chromium made no History database in $profile" >&2; exit 1; }
python3 - "$history" "$ENTRIES" <<'PY'
import json, sqlite3, sys, time
history, entries = sys.argv[1], json.loads(sys.argv[2])
EPOCH_1601 = 11644473600  # seconds from 1601-01-01 (Chrome's epoch) to 1970-01-01
db = sqlite3.connect(history)
for entry in entries:
    stamp = int((time.time() - float(entry["visit_time_from_now_in_seconds"]) + EPOCH_1601) * 1_000_000)
    row = db.execute("INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden) "
                     "VALUES (?, ?, 1, 0, ?, 0)", (entry["url"], entry["title"], stamp)).lastrowid
    db.execute("INSERT INTO visits (url, visit_time, from_visit, transition, segment_id, visit_duration) "
               "VALUES (?, ?, 0, 805306368, 0, 0)", (row, stamp))
db.commit()
PY
"""


def history_command(entries: list[dict], chromium: str) -> list[str]:
    """The shell command (run as the desktop's account) that adds ``entries`` to the History."""
    for entry in entries:
        if not isinstance(entry, dict) or not {"url", "title", "visit_time_from_now_in_seconds"} <= set(entry):
            raise TaskFileError(
                f"update_browse_history: each history entry needs url, title and visit_time_from_now_in_seconds, got {entry!r}"
            )
    return ["bash", "-c", f"CHROMIUM={shlex.quote(chromium)} ENTRIES={shlex.quote(json.dumps(entries))}\n{HISTORY_SCRIPT}"]
