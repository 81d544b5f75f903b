"""Metrics over Chromium's settings and profile state (OSWorld's chrome metrics over ``getters.chrome_profile``).

Every metric scores a ``None`` result (nothing could be read) as 0. A rule ``type`` OSWorld does
not support is the task author's mistake (UserError).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlparse, urlunparse

from mcpworld.core.errors import UserError
from mcpworld.core.urls import compare_urls
from mcpworld.evaluation.metrics.browser import _match_type, _url_of
from mcpworld.evaluation.metrics.general import rule_value
from mcpworld.evaluation.registry import metric


def _list_rule(rules: Any, key: str, name: str) -> list[Any]:
    value = rule_value(rules, key, name)
    if not isinstance(value, list):
        raise UserError(f"metric {name!r}: {key!r} must be a list, got {value!r}")
    return value


@metric("is_extension_installed")
def is_extension_installed(result: Any, rules: Any) -> float:
    """1 when the command output ``result`` contains ``rules["expected"]`` (``type: contain``) or not (``not_contain``).

    OSWorld's VS Code metric, used by many tasks as a plain "output contains" test.
    """
    kind = rule_value(rules, "type", "is_extension_installed")
    expected = str(rule_value(rules, "expected", "is_extension_installed"))
    if kind not in ("contain", "not_contain"):
        raise UserError(f"metric 'is_extension_installed': type must be 'contain' or 'not_contain', got {kind!r}")
    if result is None:
        return 0.0
    found = expected in str(result)
    return float(found if kind == "contain" else not found)


@metric("is_cookie_deleted")
def is_cookie_deleted(result: Any, rules: Any) -> float:
    """1 when no cookie's host (second column of getter ``cookie_data``'s rows) is one of ``rules["domains"]``.

    Hosts compare as URLs (``compare_urls``, as in OSWorld): ``.amazon.com`` matches cookies of
    ``amazon.com`` and ``www.amazon.com``, not of another subdomain such as ``smile.amazon.com``.
    """
    kind = rule_value(rules, "type", "is_cookie_deleted")
    if kind != "domains":
        raise UserError(f"metric 'is_cookie_deleted': type must be 'domains', got {kind!r}")
    domains = _list_rule(rules, "domains", "is_cookie_deleted")
    if result is None:
        return 0.0
    hosts = [row[1] for row in result if isinstance(row, (list, tuple)) and len(row) > 1]
    return float(not any(compare_urls(domain, host) for domain in domains for host in hosts))


def _entry_values(text: str, key: str) -> list[str]:
    """The values of ``key=`` lines of a desktop entry (unlocalised key only, the line kept as is)."""
    prefix = key + "="
    return [line[len(prefix) :] for line in text.split("\n") if line.startswith(prefix)]


def _loosely_equal(expected: str, actual: str, fold_case: bool) -> bool:
    a, b = (expected.lower(), actual.lower()) if fold_case else (expected, actual)
    return a in b or b in a


def _description(text: str) -> list[str]:
    """The shortcut's description: its ``Comment=`` lines, or ``data.description`` of a JSON shortcut (WAA)."""
    try:
        data = json.loads(text)
    except ValueError:
        return _entry_values(text, "Comment")
    value = data.get("data", {}).get("description") if isinstance(data, dict) else None
    return [value] if isinstance(value, str) else []


@metric("is_shortcut_on_desktop")
def is_shortcut_on_desktop(result: Any, rules: Any) -> float:
    """1 when a desktop launcher (getter ``shortcuts_on_desktop``) fits the rule.

    ``type: name``: the text ``Name=<name>\\n`` is in a launcher, or a ``Name=`` line's value
    equals, contains or is contained in ``rules["name"]`` (case-insensitive); ``type: exec``:
    likewise with ``Exec=`` (case-sensitive); ``type: description`` (WAA, ours):
    ``rules["description"]`` is part of the launcher's description. As in OSWorld an empty value
    (``Name=``) is contained in any name and matches, and a CRLF line keeps its ``\\r``.
    """
    kind = rule_value(rules, "type", "is_shortcut_on_desktop")
    if kind not in ("name", "exec", "description"):
        raise UserError(f"metric 'is_shortcut_on_desktop': type must be 'name', 'exec' or 'description', got {kind!r}")
    wanted = str(rule_value(rules, kind, "is_shortcut_on_desktop"))
    if not isinstance(result, dict):
        return 0.0
    for text in result.values():
        text = str(text)
        if kind == "description":
            if any(wanted in value for value in _description(text)):
                return 1.0
            continue
        key = "Name" if kind == "name" else "Exec"
        if f"{key}={wanted}\n" in text:
            return 1.0
        if any(_loosely_equal(wanted, value, fold_case=kind == "name") for value in _entry_values(text, key)):
            return 1.0
    return 0.0


def _without_query(url: str) -> str:
    return urlunparse(urlparse(url)._replace(query=""))


@metric("is_expected_active_tab_approximate")
def is_expected_active_tab_approximate(result: Any, rules: Any) -> float:
    """1 when the active tab's URL equals ``rules["url"]`` once both drop their ``?query`` (``type: url``).

    result = getter ``active_tab_info``'s dict or a URL string. The rest of the URL must match
    exactly (OSWorld does not normalise it here).
    """
    _match_type(rules, "is_expected_active_tab_approximate")
    expected = str(rule_value(rules, "url", "is_expected_active_tab_approximate"))
    actual = _url_of(result) if result else None
    if not actual:
        return 0.0
    return float(_without_query(expected) == _without_query(actual))


@metric("is_added_to_steam_cart")
def is_added_to_steam_cart(result: Any, rules: Any) -> float:
    """1 when the cart page's HTML (``result["content"]``, getter ``page_info``) names every item of ``rules["items"]``."""
    items = _list_rule(rules, "items", "is_added_to_steam_cart")
    content = result.get("content") if isinstance(result, dict) else None
    if not isinstance(content, str):
        return 0.0
    return float(all(str(item) in content for item in items))


# Extensions whose store name changed between Chrome Web Store versions: either name counts.
EXTENSION_ALIASES = ({"Zoom Chrome Extension", "Zoom for Google Chrome"},)


def _canonical_extension(name: str) -> str:
    for group in EXTENSION_ALIASES:
        if name in group:
            return min(group)
    return name


@metric("is_expected_installed_extensions")
def is_expected_installed_extensions(result: Any, rules: Any) -> float:
    """1 when every name in ``rules["expected"]`` is among the installed extensions' names
    (getter ``find_installed_extension_name``)."""
    expected = _list_rule(rules, "expected", "is_expected_installed_extensions")
    if not result or not isinstance(result, list):
        return 0.0
    installed = {_canonical_extension(str(name)) for name in result}
    return float({_canonical_extension(str(name)) for name in expected} <= installed)


@metric("check_enabled_experiments")
def check_enabled_experiments(result: Any, rules: Any) -> float:
    """1 when the enabled chrome://flags (getter ``enabled_experiments``, ``@option`` dropped) are
    exactly ``rules["names"]``, in order."""
    kind = rule_value(rules, "type", "check_enabled_experiments")
    if kind != "names":
        raise UserError(f"metric 'check_enabled_experiments': type must be 'names', got {kind!r}")
    names = _list_rule(rules, "names", "check_enabled_experiments")
    if not isinstance(result, list):
        return 0.0
    return float([str(flag).split("@")[0] for flag in result] == names)
