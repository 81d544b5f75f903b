"""``active_tab_html_parse``: values read off the page in the live browser's active tab, as OSWorld's
Chrome tasks grade a search the agent ran on a web site (the fields it filled, the filters it set).

``category`` picks how elements are found, and each found text is stored under the key the config
names (OSWorld's shapes):

- ``class``: ``class_singleObject {class: key}`` (first element's text), ``class_multiObject
  {class: {rank: key}}`` (the rank-th element's text), ``class_multiObject_child`` (the rank-th of
  the first element's own text nodes), ``class_multiObject_only_child`` (the rank-th element's
  ``h3`` text), ``class_multiObject_search_exist {class: [texts]}`` (each text → whether an
  element has exactly it; ``is_other_exist`` → whether an element has a text not listed);
- ``label``: ``labelObject {text: key}`` (the first element containing the text);
- ``xpath``: ``xpathObject {xpath: key}`` (the first match's text);
- ``input``: ``inputObject {xpath: key}`` (the first match's input value);
- ``class&url``: ``class_multiObject {class: [texts]}`` and ``class_multiObject_li`` (the ``span``
  texts of its ``li.catAllProducts``): each text found (any case) → true under its lower-case
  name, ``is_other_exist`` as above but by containment; ``url_include_expected [words]`` and
  ``url_include_expected_multichoice {word: key}``: whether the page URL contains the word.

Texts are stripped; a rank or element that is not there gives ``""``. The page is the active tab
found through DevTools (``chrome``), waited on until loaded; no browser gives None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpworld.core.errors import UserError
from mcpworld.evaluation.getters.base import require
from mcpworld.evaluation.getters.chrome import _active_page, _wait_loaded, cdp_url, with_browser
from mcpworld.evaluation.registry import getter

if TYPE_CHECKING:
    from mcpworld.env.base import Environment

NAME = "active_tab_html_parse"
CATEGORIES = ("class", "label", "xpath", "input", "class&url")
DIRECT_TEXT_NODES = (
    "node => Array.from(node.childNodes).filter(n => n.nodeType === Node.TEXT_NODE)"
    ".map(n => n.textContent.trim()).filter(Boolean)"
)


def _safe(read: Callable[[], Any], default: Any) -> Any:
    """A page read that fails (the page navigated away, no such element) gives ``default``."""
    try:
        return read()
    except Exception:
        return default


def _texts(page: Any, selector: str) -> list[str]:
    return _safe(lambda: [(e.text_content() or "").strip() for e in page.query_selector_all(selector)], [])


def _direct_texts(page: Any, selector: str) -> list[str]:
    return _safe(lambda: next(iter(e.evaluate(DIRECT_TEXT_NODES) for e in page.query_selector_all(selector)), []), [])


def _child_texts(page: Any, selector: str, child: str) -> list[str]:
    def read() -> list[str]:
        found = [e.query_selector(child) for e in page.query_selector_all(selector)]
        return [(c.text_content() or "").strip() for c in found if c is not None]

    return _safe(read, [])


def _ranked(texts: list[str], ranks: dict[str, str], out: dict[str, Any]) -> None:
    for rank, key in ranks.items():
        index = int(rank)
        out[key] = texts[index] if 0 <= index < len(texts) else ""


def _first_text(page: Any, locator: str) -> str:
    def read() -> str:
        found = page.locator(locator)
        return ((found.first.text_content() or "").strip()) if found.count() else ""

    return _safe(read, "")


def _by_class(page: Any, cfg: dict[str, Any], out: dict[str, Any]) -> None:
    for name, ranks in (cfg.get("class_multiObject") or {}).items():
        _ranked(_texts(page, f".{name}"), ranks, out)
    for name, ranks in (cfg.get("class_multiObject_child") or {}).items():
        _ranked(_direct_texts(page, f".{name}"), ranks, out)
    for name, ranks in (cfg.get("class_multiObject_only_child") or {}).items():
        _ranked(_child_texts(page, f".{name}", "h3"), ranks, out)
    for name, wanted in (cfg.get("class_multiObject_search_exist") or {}).items():
        texts = _texts(page, f".{name}")
        for text in wanted:
            if text != "is_other_exist":
                out[text] = text in texts
        if "is_other_exist" in wanted:  # once true (for any class), it stays true
            out["is_other_exist"] = out.get("is_other_exist", False) or any(t not in wanted for t in texts)
    for name, key in (cfg.get("class_singleObject") or {}).items():
        texts = _texts(page, f".{name}")
        out[key] = texts[0] if texts else ""


def _found_and_others(texts: list[str], wanted: list[str], out: dict[str, Any]) -> None:
    for text in wanted:
        if any(text.lower() == t.lower() for t in texts):
            out[text.lower()] = True
    out["is_other_exist"] = out.get("is_other_exist", False) or any(
        all(t.lower() not in w.lower() for w in wanted) for t in texts
    )


def _by_class_and_url(page: Any, cfg: dict[str, Any], out: dict[str, Any]) -> None:
    for name, wanted in (cfg.get("class_multiObject") or {}).items():
        _found_and_others(_texts(page, f".{name}"), wanted, out)
    for name, wanted in (cfg.get("class_multiObject_li") or {}).items():
        _found_and_others(_child_texts(page, f".{name} li.catAllProducts", "span"), wanted, out)
    url = _safe(lambda: page.url.lower(), "")
    for word in cfg.get("url_include_expected") or []:
        out.setdefault(word.lower(), bool(url) and word.lower() in url)
    for word, key in (cfg.get("url_include_expected_multichoice") or {}).items():
        out.setdefault(key.lower(), bool(url) and word.lower() in url)


def parse_page(page: Any, cfg: dict[str, Any]) -> dict[str, Any]:
    """The values ``cfg`` asks for, read off ``page`` (a Playwright page)."""
    category = cfg["category"]
    out: dict[str, Any] = {}
    if category == "class":
        _by_class(page, cfg, out)
    elif category == "class&url":
        _by_class_and_url(page, cfg, out)
    elif category == "label":
        for text, key in (cfg.get("labelObject") or {}).items():
            out[key] = _first_text(page, f"text={text}")
    elif category == "xpath":
        for xpath, key in (cfg.get("xpathObject") or {}).items():
            out[key] = _first_text(page, f"xpath={xpath}")
    else:  # input
        for xpath, key in (cfg.get("inputObject") or {}).items():

            def value(xpath: str = xpath) -> str:
                found = page.locator(f"xpath={xpath}")
                return (found.first.input_value() or "").strip() if found.count() else ""

            out[key] = _safe(value, "")
    return out


@getter(NAME)
def active_tab_html_parse(env: Environment, cfg: dict[str, Any]) -> dict[str, Any] | None:
    """Values read off the active tab's page by class, label, xpath or input (see the module), or None."""
    category = require(cfg, "category")
    if category not in CATEGORIES:
        raise UserError(f"getter {NAME!r}: category must be one of {', '.join(CATEGORIES)}, got {category!r}")
    endpoint = cdp_url(env, NAME)

    def work(browser: Any) -> dict[str, Any] | None:
        page = _active_page(browser, endpoint)
        if page is None:
            return None
        _wait_loaded(page)
        return parse_page(page, cfg)

    return with_browser(env, NAME, work)
