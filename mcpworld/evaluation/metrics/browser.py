"""Browser tab metrics (OSWorld's chrome metrics over the live-tab getters of ``getters.chrome``).

URLs compare as OSWorld's ``compare_urls`` does (mcpworld/urls.py). Every metric scores a ``None`` or empty result as 0.
"""

from __future__ import annotations

import re
from typing import Any

from mcpworld.core.errors import UserError
from mcpworld.core.urls import compare_urls
from mcpworld.evaluation.metrics.general import rule_value
from mcpworld.evaluation.registry import metric


def are_lists_equal(list1: list[Any], list2: list[Any], same: Any) -> bool:
    """Same length and every item of ``list1`` has an equal item in ``list2`` (OSWorld's check)."""
    return len(list1) == len(list2) and all(any(same(a, b) for b in list2) for a in list1)


def _url_of(result: Any) -> str | None:
    if isinstance(result, dict):
        url = result.get("url")
        return url if isinstance(url, str) else None
    return result if isinstance(result, str) else None


def _match_type(rules: Any, name: str) -> str:
    kind = rule_value(rules, "type", name)
    if kind != "url":
        raise UserError(f"metric {name!r}: type must be 'url', got {kind!r}")
    return kind


@metric("is_expected_tabs")
def is_expected_tabs(result: Any, rules: Any) -> float:
    """1 when the open tabs' URLs are exactly ``rules["urls"]`` (in any order; ``type: url``).

    result = the list of ``{"title", "url"}`` of getter ``open_tabs_info`` (which leaves out the
    browser's own ``chrome://`` tabs, as OSWorld's does; the metric compares every tab it is given).
    A tab without ``url`` scores 0.
    """
    _match_type(rules, "is_expected_tabs")
    expected = rule_value(rules, "urls", "is_expected_tabs")
    if not isinstance(expected, list):
        raise UserError(f"metric 'is_expected_tabs': urls must be a list, got {expected!r}")
    if not result or not isinstance(result, list):
        return 0.0
    try:
        actual = [tab["url"] for tab in result]
        return float(are_lists_equal(expected, actual, compare_urls))
    except (KeyError, TypeError, AttributeError):
        return 0.0


@metric("is_expected_active_tab")
def is_expected_active_tab(result: Any, rules: Any) -> float:
    """1 when the active tab's URL is ``rules["url"]`` (or one of ``rules["accepted_urls"]``; ``type: url``).

    result = ``{"title", "url", …}`` of getter ``active_tab_info`` or a URL string.
    """
    _match_type(rules, "is_expected_active_tab")
    accepted = rules.get("accepted_urls") or [rule_value(rules, "url", "is_expected_active_tab")]
    if not isinstance(accepted, list):
        raise UserError(f"metric 'is_expected_active_tab': accepted_urls must be a list, got {accepted!r}")
    actual = _url_of(result) if result else None
    if actual is None:
        return 0.0
    return float(any(compare_urls(url, actual) for url in accepted))


@metric("is_expected_url_pattern_match")
def is_expected_url_pattern_match(result: Any, rules: Any) -> float:
    """1 when every regex of ``rules["expected"]`` is found (re.search) in the URL.

    result = a tab dict (its ``url``) or a URL string; anything else, or a tab whose url is not a
    string, scores 0 (with no patterns at all a tab dict scores 1, as in OSWorld).
    """
    patterns = rule_value(rules, "expected", "is_expected_url_pattern_match")
    patterns = [patterns] if isinstance(patterns, str) else patterns
    if not isinstance(patterns, list):
        raise UserError(f"metric 'is_expected_url_pattern_match': expected must be a list of regexes, got {patterns!r}")
    try:
        compiled = [re.compile(str(p)) for p in patterns]
    except re.error as exc:
        raise UserError(f"metric 'is_expected_url_pattern_match': bad regex: {exc}") from None
    if not result or not (isinstance(result, str) or (isinstance(result, dict) and "url" in result)):
        return 0.0
    url = result if isinstance(result, str) else result["url"]
    if not compiled:
        return 1.0
    if not isinstance(url, str):
        return 0.0
    return float(all(p.search(url) for p in compiled))


@metric("is_expected_search_query")
def is_expected_search_query(result: Any, rules: Any) -> float:
    """1 when the active tab's URL matches ``rules["expect"]["pattern"]`` (re.search).

    result = getter ``active_tab_info``'s dict; as in OSWorld a bare URL string, or a dict without
    a string ``url``, scores 0.
    """
    expect = rule_value(rules, "expect", "is_expected_search_query")
    if not isinstance(expect, dict) or "pattern" not in expect:
        raise UserError(f"metric 'is_expected_search_query': expect must be {{pattern: regex}}, got {expect!r}")
    url = result.get("url") if isinstance(result, dict) and result else None
    if not isinstance(url, str):
        return 0.0
    return float(re.search(str(expect["pattern"]), url) is not None)
