"""Browser tab metrics: OSWorld's semantics (URL normalisation, order-free tab lists, None scores 0)."""

import pytest

from mcpworld.core.errors import UserError
from mcpworld.evaluation.registry import get_metric

TABS = [{"title": "A", "url": "https://www.example.com/"}, {"title": "B", "url": "file:///home/user/b.html"}]


def test_is_expected_tabs_compares_the_url_sets_in_any_order_with_osworlds_normalisation():
    m = get_metric("is_expected_tabs")
    assert m(TABS, {"type": "url", "urls": ["file:///home/user/b.html", "https://example.com"]}) == 1.0
    assert m(TABS, {"type": "url", "urls": ["https://example.com"]}) == 0.0  # one tab too many
    assert m(TABS, {"type": "url", "urls": ["https://example.com", "file:///home/user/c.html"]}) == 0.0
    # the metric compares every tab it gets, as OSWorld's (the getter leaves the browser's own pages out)
    assert (
        m(
            [*TABS, {"title": "S", "url": "chrome://settings/"}],
            {"type": "url", "urls": ["https://example.com", "file:///home/user/b.html"]},
        )
        == 0.0
    )
    assert (
        m([*TABS, {"title": "no url"}], {"type": "url", "urls": ["https://example.com", "file:///home/user/b.html", "x"]}) == 0.0
    )
    assert m(None, {"type": "url", "urls": []}) == 0.0
    assert m([], {"type": "url", "urls": []}) == 0.0
    with pytest.raises(UserError):
        m(TABS, {"type": "title", "urls": []})


def test_is_expected_active_tab_takes_a_tab_or_a_url_and_accepted_alternatives():
    m = get_metric("is_expected_active_tab")
    assert m({"title": "A", "url": "http://example.com", "content": ""}, {"type": "url", "url": "example.com/"}) == 1.0
    assert m("https://example.com/x?a=1", {"type": "url", "url": "https://example.com/x?a=2"}) == 0.0
    assert m("https://b.org", {"type": "url", "url": "https://a.org", "accepted_urls": ["https://a.org", "https://b.org"]}) == 1.0
    assert m(None, {"type": "url", "url": "https://a.org"}) == 0.0


def test_url_pattern_and_search_query_metrics():
    pattern_match = get_metric("is_expected_url_pattern_match")
    assert pattern_match({"url": "https://s.com/?q=cats"}, {"expected": ["q=cats", "^https"]}) == 1.0
    assert pattern_match("https://s.com/?q=dogs", {"expected": ["q=cats"]}) == 0.0
    assert get_metric("is_expected_url_pattern_match")(None, {"expected": ["x"]}) == 0.0
    assert get_metric("is_expected_search_query")({"url": "https://s.com/?q=cats"}, {"expect": {"pattern": r"q=cat"}}) == 1.0
    assert get_metric("is_expected_search_query")(None, {"expect": {"pattern": "x"}}) == 0.0


@pytest.mark.parametrize(
    "a, b, same",
    [
        ("https://www.airbnb.com.sg/", "https://airbnb.com", True),  # OSWorld drops the public suffix
        ("maps.google.com", "http://google.com", False),  # a subdomain other than www stays
        ("http://127.0.0.1:8000/a", "127.0.0.1:9000/a", True),  # and the port goes with the suffix
        ("https://a.com/x?q=1", "https://a.com/x?q=2", False),
        ("https://a.com/", "https://a.com", True),
        ("https://a.com/x/", "https://a.com/x", False),  # only a bare "/" path is no path
    ],
)
def test_urls_compare_as_osworld_compares_them(a, b, same):
    from mcpworld.core.urls import compare_urls

    assert compare_urls(a, b) is same


def test_url_pattern_and_search_query_edge_cases_as_in_osworld():
    pattern = get_metric("is_expected_url_pattern_match")
    assert pattern({"url": None}, {"expected": []}) == 1.0  # no patterns: a tab dict passes
    assert pattern({"url": None}, {"expected": ["x"]}) == 0.0
    assert pattern({"title": "no url"}, {"expected": []}) == 0.0
    search = get_metric("is_expected_search_query")
    rules = {"expect": {"pattern": "q=nereida"}}
    assert search({"url": "https://www.google.com/search?q=nereida"}, rules) == 1.0
    assert search("https://www.google.com/search?q=nereida", rules) == 0.0  # OSWorld needs the tab dict
