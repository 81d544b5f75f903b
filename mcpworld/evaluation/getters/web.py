"""Gold values read off live web sites through the episode's Chromium: OSWorld's getters for tasks
whose answer changes over time, so it is looked up when the episode is graded.

- ``info_from_website``: ``url`` is opened in a new tab; each of ``infos`` gives one value, in
  order (``action`` ``inner_text`` or ``attribute`` of ``selector``; ``click_and_inner_text`` /
  ``click_and_attribute`` click each selector of a list but the last, then read the last). Any
  value that cannot be read (an element not there within 10 s, a captcha page instead of the
  site) gives the task's ``backups`` instead, the whole list, as in OSWorld.
- ``pdf_from_url``: the page at ``path`` printed to PDF with Playwright's defaults (Letter, no
  margins, no backgrounds), as OSWorld's ``page.pdf()`` prints it; saved at ``cache_dir/<dest>``,
  the path returned.
- ``gotoRecreationPage_and_get_html_content``: on www.recreation.gov, searches "Diamond", opens
  the first highlighted result (a new tab), presses its "Next Available" button, and returns
  ``{"expected": {class: text}}``: the stripped text of the ``order``-th element (first without
  ``order``) of class ``class``; ``"__EVALUATION_FAILED__"`` as the text when there is no such
  element or when the search flow breaks on the loaded site (3 tries), which scores 0 as in OSWorld.

A site that cannot be loaded at all (DNS, refused, timed out) is an InfraError: the network's
failure, never the agent's (OSWorld would return the backups, a fake empty PDF, or the failure
marker). When no browser answers on the DevTools port (the agent closed it), a headless run of
the system Chromium does the work, as OSWorld starts a new browser then. Pages these getters open
are closed again.

Fixed anchor bug: OSWorld's recreation getter has the steps after the search click (waiting for
the results, clicking the result) under a ``raise``, so they never run and it always returns the
failure marker; here the steps run as written.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from mcpworld.core.errors import InfraError, UserError
from mcpworld.env.cdp import cdp_call
from mcpworld.env.cdp import in_thread as _in_thread
from mcpworld.evaluation.getters.base import cache_target, require
from mcpworld.evaluation.getters.chrome import CONNECT_TIMEOUT_MS, cdp_url
from mcpworld.evaluation.registry import getter

if TYPE_CHECKING:
    from mcpworld.env.base import Environment

log = logging.getLogger(__name__)

T = TypeVar("T")

NAVIGATION_TIMEOUT_MS = 60_000  # OSWorld's, for slow sites
SELECTOR_TIMEOUT_MS = 10_000  # OSWorld's wait for each element of info_from_website
IDLE_TIMEOUT_MS = 10_000  # a page that keeps polling never goes idle: print / read it anyway
PDF_SETTLE_S = 3.0  # OSWorld's pause before printing, for late rendering
EVALUATION_FAILED = "__EVALUATION_FAILED__"
ACTIONS = ("inner_text", "attribute", "click_and_inner_text", "click_and_attribute")

RECREATION_URLS = ["https://www.recreation.gov/", "http://www.recreation.gov/", "https://recreation.gov/"]
RECREATION_QUERY = "Diamond"
RECREATION_TRIES = 3
FLOW_TIMEOUT_MS = 30_000
NEXT_AVAILABLE = [
    "button.next-available",
    "button[class*='next-available']",
    "button[class*='next']",
    ".next-available",
    "[data-testid*='next']",
]
BROWSER_HEADERS = {"Accept-Language": "en-US,en;q=0.9", "DNT": "1"}


class Unreachable(Exception):
    """The site did not load at all."""


def _system_chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def with_any_browser(env: Environment, name: str, work: Callable[[Any, bool], T]) -> T:
    """``work(browser, episode)``: on the episode's Chromium, or on a headless system Chromium
    (``episode`` False) when none answers on the DevTools port."""
    endpoint = cdp_url(env, name)

    def run() -> T:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            try:
                browser = p.chromium.connect_over_cdp(endpoint, timeout=CONNECT_TIMEOUT_MS)
            except PlaywrightError as exc:
                log.info("%s: no browser answers at %s (%s); using a headless Chromium", name, endpoint, str(exc).splitlines()[0])
            else:  # leaving the `with` disconnects; browser.close() could end the agent's browser
                return work(browser, True)
            executable = _system_chromium()
            if executable is None:
                raise InfraError(f"getter {name!r}: the episode's browser is gone and no chromium is installed")
            headless = p.chromium.launch(executable_path=executable, headless=True)
            try:
                return work(headless, False)
            finally:
                headless.close()

    return _in_thread(run)


def _goto(page: Any, url: str, wait_until: str = "load") -> None:
    """Navigate, or Unreachable when the site does not load (DNS, refused, timeout)."""
    try:
        page.goto(url, wait_until=wait_until, timeout=NAVIGATION_TIMEOUT_MS)
    except Exception as exc:
        raise Unreachable(str(exc).splitlines()[0]) from None


def _settle(page: Any, timeout_ms: int = IDLE_TIMEOUT_MS) -> None:
    with contextlib.suppress(Exception):  # polling pages never go idle
        page.wait_for_load_state("networkidle", timeout=timeout_ms)


def _close(page: Any) -> None:
    with contextlib.suppress(Exception):
        page.close()


def _unreachable(name: str, url: str, why: Unreachable) -> InfraError:
    return InfraError(f"getter {name!r}: {url} did not load ({why}); the site or the network is down, not the agent's doing")


# ---------------------------------------------------------------------------------------------
# info_from_website


def _check_infos(infos: Any) -> list[dict[str, Any]]:
    if not isinstance(infos, list) or not all(isinstance(i, dict) for i in infos):
        raise UserError(f"getter 'info_from_website': infos must be a list of mappings, got {infos!r}")
    for info in infos:
        action = info.get("action", "inner_text")
        if action not in ACTIONS:
            raise UserError(f"getter 'info_from_website': action must be one of {', '.join(ACTIONS)}, got {action!r}")
        selector = info.get("selector")
        if action.startswith("click_and_") and not (isinstance(selector, list) and selector):
            raise UserError(f"getter 'info_from_website': {action} needs a list of selectors, got {selector!r}")
        if not action.startswith("click_and_") and not isinstance(selector, str):
            raise UserError(f"getter 'info_from_website': {action} needs one selector, got {selector!r}")
    return infos


def _read(page: Any, selector: str, attribute: str | None) -> Any:
    element = page.wait_for_selector(selector, state="attached", timeout=SELECTOR_TIMEOUT_MS)
    return element.get_attribute(attribute) if attribute is not None else element.inner_text()


def _extract(page: Any, url: str, info: dict[str, Any]) -> Any:
    if page.url != url:  # an earlier click left the page
        _goto(page, url)
    action = info.get("action", "inner_text")
    attribute = str(info.get("attribute")) if action.endswith("attribute") else None
    if not action.startswith("click_and_"):
        return _read(page, info["selector"], attribute)
    *clicks, last = info["selector"]
    for selector in clicks:
        page.wait_for_selector(selector, state="attached", timeout=SELECTOR_TIMEOUT_MS).click()
        page.wait_for_load_state("load")
    return _read(page, last, attribute)


@getter("info_from_website")
def info_from_website(env: Environment, cfg: dict[str, Any]) -> Any:
    """The values ``infos`` reads off ``url`` (a list, in order), or ``backups`` when one cannot be read."""
    url = str(require(cfg, "url"))
    infos = _check_infos(cfg.get("infos") or [])
    target = env.map_paths(url)

    def work(browser: Any, episode: bool) -> Any:
        context = browser.contexts[0] if browser.contexts else browser.new_context()
        page = context.new_page()
        try:
            _goto(page, target)
            values = []
            for info in infos:
                try:
                    values.append(_extract(page, target, info))
                except Unreachable:
                    raise
                except Exception as exc:
                    log.info(
                        "info_from_website: reading %s on %s failed (%s); the task's backups stand in",
                        info.get("selector"),
                        url,
                        str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                    )
                    return cfg.get("backups")
            return values
        except Unreachable as exc:
            raise _unreachable("info_from_website", url, exc) from None
        finally:
            _close(page)
            if not episode:
                context.close()

    return with_any_browser(env, "info_from_website", work)


# ---------------------------------------------------------------------------------------------
# pdf_from_url


def _print_pdf(page: Any) -> bytes:
    """Playwright's ``page.pdf()`` defaults; the same settings through the protocol if it refuses."""
    try:
        return page.pdf()
    except Exception as exc:
        log.info("pdf_from_url: page.pdf() refused (%s); printing through Page.printToPDF", str(exc).splitlines()[0])
    import base64

    printed = cdp_call(
        page,
        "Page.printToPDF",
        {
            "paperWidth": 8.5,
            "paperHeight": 11,
            "marginTop": 0,
            "marginBottom": 0,
            "marginLeft": 0,
            "marginRight": 0,
            "scale": 1,
            "printBackground": False,
            "landscape": False,
            "displayHeaderFooter": False,
            "preferCSSPageSize": False,
        },
    )
    return base64.b64decode(printed["data"])


@getter("pdf_from_url")
def pdf_from_url(env: Environment, cfg: dict[str, Any]) -> str:
    """The page at ``path`` printed to ``cache_dir/<dest>`` (Letter, no margins), the file's path returned."""
    url = str(require(cfg, "path"))
    target = cache_target(env, str(require(cfg, "dest")), "pdf_from_url")
    address = env.map_paths(url)

    def work(browser: Any, episode: bool) -> bytes:
        page = browser.new_page()
        try:
            _goto(page, address)
            _settle(page)
            time.sleep(PDF_SETTLE_S)
            return _print_pdf(page)
        except Unreachable as exc:
            raise _unreachable("pdf_from_url", url, exc) from None
        finally:
            _close(page)

    data = with_any_browser(env, "pdf_from_url", work)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return str(target)


# ---------------------------------------------------------------------------------------------
# gotoRecreationPage_and_get_html_content


def _click_result(page: Any) -> Any:
    """Search, then open the first highlighted result; the page it opens (a new tab, or this one)."""
    page.wait_for_selector("input#hero-search-input", state="visible", timeout=FLOW_TIMEOUT_MS)
    page.fill("input#hero-search-input", RECREATION_QUERY)
    page.wait_for_selector("button.nav-search-button", state="visible", timeout=FLOW_TIMEOUT_MS)
    page.click("button.nav-search-button")
    page.wait_for_url(re.compile(r"/search"), timeout=FLOW_TIMEOUT_MS)
    page.wait_for_load_state("domcontentloaded", timeout=FLOW_TIMEOUT_MS)
    result = ".search-result-highlight--success"
    try:
        page.wait_for_selector(result, state="visible", timeout=FLOW_TIMEOUT_MS)
    except Exception:  # in the DOM below the fold
        page.wait_for_selector(result, state="attached", timeout=5_000)
        page.locator(result).first.scroll_into_view_if_needed(timeout=5_000)
    before = page.url
    try:
        with page.context.expect_page(timeout=FLOW_TIMEOUT_MS) as opened:
            page.locator(result).first.click()
        campground = opened.value
    except Exception:
        if page.url == before:  # neither a new tab nor a navigation: the click did nothing
            raise
        campground = page  # the result opened in this tab
    campground.set_default_timeout(FLOW_TIMEOUT_MS)
    campground.wait_for_load_state("load")
    return campground


def _press_next_available(page: Any) -> None:
    """The first of OSWorld's selectors that shows a visible element; none there is not a failure."""
    try:
        page.wait_for_selector(", ".join(NEXT_AVAILABLE), state="visible", timeout=FLOW_TIMEOUT_MS)
    except Exception:
        log.info("gotoRecreationPage_and_get_html_content: no next-available button; reading the page as it is")
        return
    for selector in NEXT_AVAILABLE:
        found = page.locator(selector)
        for i in range(found.count()):
            if found.nth(i).is_visible():
                found.nth(i).click()
                _settle(page, 5_000)
                return


def _class_text(page: Any, name: str, order: Any) -> Any:
    elements = page.query_selector_all(f".{name}")
    index = 0 if order is None else int(order)
    if not 0 <= index < len(elements):
        return EVALUATION_FAILED
    text = elements[index].text_content()
    return text.strip() if text else text


@getter("gotoRecreationPage_and_get_html_content")
def goto_recreation_page_and_get_html_content(env: Environment, cfg: dict[str, Any]) -> dict[str, Any]:
    """``{"expected": {class: text}}`` from the Diamond campground page on recreation.gov (see the module)."""
    if require(cfg, "selector") != "class":
        raise UserError(f"getter 'gotoRecreationPage_and_get_html_content': selector must be 'class', got {cfg['selector']!r}")
    name = str(require(cfg, "class"))
    name_ = "gotoRecreationPage_and_get_html_content"

    def attempt(browser: Any) -> dict[str, Any]:
        page = browser.new_page()
        pages = [page]
        try:
            page.set_extra_http_headers(BROWSER_HEADERS)
            errors = []
            for url in RECREATION_URLS:
                try:
                    _goto(page, url, "domcontentloaded")
                    break
                except Unreachable as exc:
                    errors.append(f"{url}: {exc}")
            else:
                raise _unreachable(name_, RECREATION_URLS[0], Unreachable("; ".join(errors)))
            _settle(page)
            campground = _click_result(page)
            pages.append(campground)
            _press_next_available(campground)
            return {"expected": {name: _class_text(campground, name, cfg.get("order"))}}
        finally:
            for opened in pages:
                _close(opened)

    def work(browser: Any, episode: bool) -> dict[str, Any]:
        why = ""
        for n in range(RECREATION_TRIES):
            try:
                return attempt(browser)
            except InfraError:
                raise
            except Exception as exc:
                why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                log.info("%s: try %d of %d failed: %s", name_, n + 1, RECREATION_TRIES, why)
        return {"expected": {"error": EVALUATION_FAILED, "error_message": f"failed {RECREATION_TRIES} times: {why}"}}

    return with_any_browser(env, name_, work)
