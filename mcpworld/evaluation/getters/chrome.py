"""Live Chromium state: OSWorld's browser getters, read through the episode browser's DevTools port.

Every getter is ``(env, cfg) -> value``. The browser is the one the desktop started (the
``google-chrome`` shim), reached at ``127.0.0.1:env.ports["cdp"]`` with Playwright's
``connect_over_cdp`` (no browser download: Playwright only speaks the protocol). Result shapes
are OSWorld's:

- ``open_tabs_info``: ``[{"title", "url"}, …]``, one per tab, in tab-creation order;
- ``active_tab_info``: ``{"title", "url", "content"}`` of the tab in front (``content`` is the
  page's current HTML);
- ``active_url_from_accessTree``: the active tab's URL (a string);
- ``active_tab_url_parse``: ``{key: value}`` of the active URL's query parameters ``parse_keys``
  (absent ones as ``""``), renamed by ``replace`` ``{old: new}``;
- ``page_info``: ``{"title", "url", "content"}`` of ``url`` loaded in a new tab (closed again);
- ``url_dashPart``: one ``/``-separated part of the active URL; ``url_path_parse``: the filters of
  a Macy's listing URL in the active tab.

Differences from the anchor, on purpose: the active tab is found through the protocol (the
most recently activated visible tab), not by reading the address bar from the accessibility
tree and reloading that URL in a new tab, so a page's live state (typed text, scripts) is what
the metric sees and no tab is left behind. A browser that is not running or not answering
gives ``None`` (OSWorld would start a new one, which has nothing the agent did): every metric
scores ``None`` as 0. The episode's home directory in URLs, titles and content is written as
``/home/user`` (``canonical_home: false`` keeps it), so tasks spell local pages
``file:///home/user/…`` whatever the episode's real home is.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs, unquote, urlparse

from mcpworld.core.errors import InfraError, UserError
from mcpworld.env.cdp import cdp_call
from mcpworld.env.cdp import in_thread as _in_thread
from mcpworld.env.chrome_steps import shown_url
from mcpworld.evaluation.getters.base import canonical_home, require
from mcpworld.evaluation.registry import getter

if TYPE_CHECKING:
    from mcpworld.env.base import Environment

log = logging.getLogger(__name__)

T = TypeVar("T")

CONNECT_TIMEOUT_MS = 10_000
LOAD_TIMEOUT_MS = 10_000
# Tabs whose URL is the browser's own UI, not a page the user opened (OSWorld filters chrome://).
INTERNAL_SCHEMES = ("devtools://", "chrome-extension://")


class BrowserUnavailable(Exception):
    """No browser answers on the DevTools port."""


def cdp_url(env: Environment, name: str) -> str:
    port = (getattr(env, "ports", None) or {}).get("cdp")
    if port is None:
        raise InfraError(
            f"getter {name!r}: this environment starts no Chromium with a DevTools port "
            "(app chromium's program config has ports: [cdp])"
        )
    return f"http://127.0.0.1:{port}"


def with_browser(env: Environment, name: str, work: Callable[[Any], T]) -> T | None:
    """``work(browser)`` on the episode's Chromium; None (logged) when no browser answers."""
    endpoint = cdp_url(env, name)

    def run() -> T | None:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            try:
                browser = p.chromium.connect_over_cdp(endpoint, timeout=CONNECT_TIMEOUT_MS)
            except PlaywrightError as exc:
                log.info("%s: no browser answers at %s: %s", name, endpoint, str(exc).splitlines()[0])
                return None
            # Leaving the `with` disconnects; browser.close() is not called (it could end the real browser).
            return work(browser)

    return _in_thread(run)


def _pages(browser: Any) -> list[Any]:
    return [page for context in browser.contexts for page in context.pages if not page.url.startswith(INTERNAL_SCHEMES)]


def _wait_loaded(page: Any, timeout_ms: int = LOAD_TIMEOUT_MS) -> bool:
    try:
        page.wait_for_load_state("load", timeout=timeout_ms)
        return True
    except Exception:  # a timeout or a page that went away: report what it has
        return False


def _target_id(page: Any) -> str | None:
    try:
        return cdp_call(page, "Target.getTargetInfo")["targetInfo"]["targetId"]
    except Exception:
        return None


def _activation_order(browser: Any, endpoint: str) -> list[str | None]:
    """Target ids of the pages, most recently activated first (Chromium's /json/list order)."""
    import httpx

    try:
        targets = httpx.get(f"{endpoint}/json/list", timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return []
    return [t.get("id") for t in targets if isinstance(t, dict) and t.get("type") == "page"]


def _active_page(browser: Any, endpoint: str) -> Any | None:
    """The tab in front: a visible page (the selected tab of a shown window), the most recently activated first."""
    pages = _pages(browser)
    if not pages:
        return None
    order = _activation_order(browser, endpoint)
    rank = {target: i for i, target in enumerate(order)}
    ranked = sorted(pages, key=lambda page: rank.get(_target_id(page), len(rank)))
    for page in ranked:
        try:
            if page.evaluate("document.visibilityState") == "visible":
                return page
        except Exception:  # a page mid-navigation: try the next one
            continue
    return ranked[0]


def _canon(env: Environment, cfg: dict[str, Any], text: str) -> str:
    if not cfg.get("canonical_home", True) or not isinstance(text, str):
        return text
    return canonical_home(env, text.encode("utf-8", errors="surrogatepass")).decode("utf-8", errors="replace")


def _info(env: Environment, cfg: dict[str, Any], page: Any, content: bool) -> dict[str, str]:
    loaded = _wait_loaded(page)
    try:
        title = page.title() if loaded else "Load timeout"
    except Exception as exc:
        log.info("reading a tab's title failed: %s", exc)
        title = "Error encountered"
    info = {"title": _canon(env, cfg, title), "url": _canon(env, cfg, shown_url(page))}
    if content:
        try:
            info["content"] = _canon(env, cfg, page.content())
        except Exception as exc:
            log.info("reading a tab's content failed: %s", exc)
            info["content"] = ""
    return info


@getter("open_tabs_info")
def open_tabs_info(env: Environment, cfg: dict[str, Any]) -> list[dict[str, str]] | None:
    """``[{"title", "url"}, …]`` of the live browser's tabs, or None when no browser answers.

    A tab that does not finish loading within 10 s has the title ``Load timeout`` (as in OSWorld).
    """
    return with_browser(env, "open_tabs_info", lambda browser: [_info(env, cfg, page, False) for page in _pages(browser)])


def _active_info(env: Environment, cfg: dict[str, Any], name: str) -> dict[str, str] | None:
    endpoint = cdp_url(env, name)

    def work(browser: Any) -> dict[str, str] | None:
        page = _active_page(browser, endpoint)
        return None if page is None else _info(env, cfg, page, True)

    return with_browser(env, name, work)


@getter("active_tab_info")
def active_tab_info(env: Environment, cfg: dict[str, Any]) -> dict[str, str] | None:
    """``{"title", "url", "content"}`` of the live browser's active tab (its current HTML), or None."""
    return _active_info(env, cfg, "active_tab_info")


@getter("active_url_from_accessTree")
def active_url_from_access_tree(env: Environment, cfg: dict[str, Any]) -> str | None:
    """The active tab's full URL (read through DevTools, not the address bar), or None."""
    info = _active_info(env, cfg, "active_url_from_accessTree")
    return None if info is None else info["url"]


@getter("active_tab_url_parse")
def active_tab_url_parse(env: Environment, cfg: dict[str, Any]) -> dict[str, str] | None:
    """``{key: value}`` of the active tab URL's query parameters ``parse_keys`` (``""`` when absent), or None.

    ``replace: {old: new}`` renames keys in the result.
    """
    keys = require(cfg, "parse_keys")
    if not isinstance(keys, list):
        raise UserError(f"getter 'active_tab_url_parse': parse_keys must be a list, got {keys!r}")
    replace = cfg.get("replace") or {}
    if not isinstance(replace, dict):
        raise UserError(f"getter 'active_tab_url_parse': replace must be a mapping, got {replace!r}")
    info = _active_info(env, cfg, "active_tab_url_parse")
    if info is None:
        return None
    query = parse_qs(urlparse(info["url"]).query)
    params = {str(key): query.get(str(key), [""])[0] for key in keys}
    for old, new in replace.items():
        if old in params:
            params[str(new)] = params.pop(old)
    return params


@getter("page_info")
def page_info(env: Environment, cfg: dict[str, Any]) -> dict[str, str] | None:
    """``{"title", "url", "content"}`` of ``url`` opened in a new tab of the live browser (then closed), or None.

    ``url`` may be spelled with ``/home/user`` (``file:///home/user/page.html``): it is opened
    from the episode's home.
    """
    url = str(require(cfg, "url"))
    target = env.map_paths(url)

    def work(browser: Any) -> dict[str, str] | None:
        if not browser.contexts:
            return None
        page = browser.contexts[0].new_page()
        try:
            try:
                page.goto(target, timeout=LOAD_TIMEOUT_MS)
            except Exception as exc:
                log.info("page_info: loading %s: %s", url, str(exc).splitlines()[0])
            return _info(env, cfg, page, True)
        finally:
            with contextlib.suppress(Exception):
                page.close()

    return with_browser(env, "page_info", work)


@getter("url_dashPart")
def url_dash_part(env: Environment, cfg: dict[str, Any]) -> Any:
    """One ``/``-separated part of the active tab's URL (``partIndex``, negative counts from the end).

    ``needDeleteId: true`` drops a ``?query`` from the part. ``returnType``: ``string`` gives the
    part, ``json`` gives ``{key: part}``. None when no browser answers or the URL has no such part.
    """
    index = require(cfg, "partIndex")
    try:
        index = int(index)
    except (TypeError, ValueError):
        raise UserError(f"getter 'url_dashPart': partIndex must be an integer, got {index!r}") from None
    return_type = require(cfg, "returnType")
    if return_type not in ("string", "json"):
        raise UserError(f"getter 'url_dashPart': returnType must be 'string' or 'json', got {return_type!r}")
    key = require(cfg, "key") if return_type == "json" else None
    url = active_url_from_access_tree(env, cfg)
    if url is None:
        return None
    parts = url.split("/")
    if not -len(parts) <= index < len(parts):
        log.info("url_dashPart: %s has no part %d", url, index)
        return None
    part = parts[index]
    if cfg.get("needDeleteId"):
        part = part.split("?")[0]
    return part if return_type == "string" else {key: part}


# Macy's encodes filters as a path pair "/Key1,Key2/Value1,Value2"; OSWorld's task asks for
# these fields (always present, None when the URL lacks them).
MACYS_FIELDS = ("Men_regular_size_t", "Price_discount_range")
FIFTY_OFF = "50_PERCENT_ off & more"
SMALLER_DISCOUNTS = ("30_PERCENT_ off & more", "20_PERCENT_ off & more")


@getter("url_path_parse")
def url_path_parse(env: Environment, cfg: dict[str, Any]) -> dict[str, Any] | None:
    """The filters of a Macy's product-listing URL in the active tab (OSWorld's one use), or None.

    Always ``mens_clothing`` (True when a path part starts with ``mens-clothing``; OSWorld's
    substring test also took ``womens-clothing``), ``shirts`` (True for a
    ``shirts`` path or department Shirts), ``short_sleeve`` (True for ``short-sleeve`` in the path
    or as Sleeve_length); each is None otherwise. Plus, for each of ``parse_keys`` found among
    the filters (Men_regular_size_t and Price_discount_range always are, None when unset), its
    value; Price_discount_range is reported as ``"50_PERCENT_ off & more"`` only when that is the
    sole discount chosen, else ``"not_50_PERCENT_ off & more"``.
    """
    keys = require(cfg, "parse_keys")
    if not isinstance(keys, list):
        raise UserError(f"getter 'url_path_parse': parse_keys must be a list, got {keys!r}")
    url = active_url_from_access_tree(env, cfg)
    if url is None:
        return None
    path = unquote(urlparse(url).path)
    parts = path.strip("/").split("/")
    filters: dict[str, Any] = {}
    shirts = "shirts" in path
    short_sleeve = "short-sleeve" in path
    for names, values in itertools.pairwise(parts):
        if "," in names and "," in values:
            for name, value in zip((n.strip() for n in names.split(",")), (v.strip() for v in values.split(",")), strict=False):
                if name == "Price_discount_range":
                    filters[name] = [item.strip() for item in value.split("|")] if value else None
                else:
                    filters[name] = value or None
                shirts = shirts or (name == "Product_department" and value in ("shirts", "Shirts", "Shirt"))
                short_sleeve = short_sleeve or (name == "Sleeve_length" and value in ("short-sleeve", "Short Sleeve"))
            break  # only the first filter pair counts
    for field in MACYS_FIELDS:
        filters.setdefault(field, None)
    result: dict[str, Any] = {
        "mens_clothing": True if re.search(r"(^|/)mens-clothing", path) else None,
        "shirts": True if shirts else None,
        "short_sleeve": True if short_sleeve else None,
    }
    for key in keys:
        if key not in filters:
            continue
        if key == "Price_discount_range":
            chosen = filters[key] or []
            only_fifty = FIFTY_OFF in chosen and not any(d in chosen for d in SMALLER_DISCOUNTS)
            result[key] = FIFTY_OFF if only_fifty else "not_" + FIFTY_OFF
        else:
            result[key] = filters[key]
    return result
