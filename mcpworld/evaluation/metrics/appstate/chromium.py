"""Metrics over Chromium's profile files: the Bookmarks roots, the History database, and the font
sizes of Preferences.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.appstate.common import _string_list
from mcpworld.evaluation.metrics.general import rule_value
from mcpworld.evaluation.registry import metric


def _covers(choices: list[list[str]], urls: set[str]) -> bool:
    """Whether one URL can be picked from each list so that the picks are exactly ``urls``.

    Each list may only pick a URL of ``urls``; every URL needs a list of its own that allows it
    (a matching), the other lists then pick any allowed URL.
    """
    allowed = [set(choice) & urls for choice in choices]
    if any(not a for a in allowed):
        return False
    owner: dict[int, str] = {}  # list index -> the URL it is reserved for

    def place(url: str, seen: set[int]) -> bool:
        for i, a in enumerate(allowed):
            if url in a and i not in seen:
                seen.add(i)
                if i not in owner or place(owner[i], seen):
                    owner[i] = url
                    return True
        return False

    return all(place(url, set()) for url in urls)


@metric("is_expected_bookmarks")
def is_expected_bookmarks(result: Any, rules: Any) -> float:
    """1 when the bookmark bar holds the expected folders / URLs, as OSWorld checks them.

    result = the Bookmarks ``roots`` object (getter ``bookmarks``).
    ``rules["type"]``:

    - ``bookmark_bar_folders_names``: the set of the bar's folder names is the set ``names``;
    - ``bookmark_bar_websites_urls``: the set of the bar's URL bookmarks is the set ``urls``
      (URLs compared exactly: ``https://a.com`` is not ``https://a.com/``);
    - ``liked_authors_websites_urls``: the bar's folder "Liked Authors" (``folder``, ours) holds a
      set of URLs that one pick from each ``urls`` entry (a URL or a list of acceptable URLs) makes
      exactly; duplicates count once.

    ``rules["allow_extra"]: true`` (ours, for the first two types) lets other bookmarks sit on the
    bar. An empty result or a bookmark without its type/name/url scores 0.
    """
    kind = rule_value(rules, "type", "is_expected_bookmarks")
    if kind not in ("bookmark_bar_folders_names", "bookmark_bar_websites_urls", "liked_authors_websites_urls"):
        raise UserError(f"metric 'is_expected_bookmarks': unknown type {kind!r}")
    key = "names" if kind == "bookmark_bar_folders_names" else "urls"
    wanted = _string_list(rules, key, "is_expected_bookmarks")
    allow_extra = bool(rules.get("allow_extra", False))
    if not result or not isinstance(result, dict):
        return 0.0
    try:
        bar = result["bookmark_bar"]["children"]
        if kind != "liked_authors_websites_urls":
            field, node_type = ("name", "folder") if kind == "bookmark_bar_folders_names" else ("url", "url")
            found = {node[field] for node in bar if node["type"] == node_type}
            expected = set(wanted)
            return float(expected <= found if allow_extra else found == expected)
        folder_name = rules.get("folder", "Liked Authors")
        folder = next((node for node in bar if node["type"] == "folder" and node["name"] == folder_name), None)
        if folder is None:
            return 0.0
        urls = {node["url"] for node in folder["children"] if node["type"] == "url"}
    except (KeyError, TypeError):
        return 0.0
    choices = [entry if isinstance(entry, list) else [entry] for entry in wanted]
    return float(_covers(choices, urls))


def _history_urls(result: Any) -> list[Any] | None:
    """First columns of the History rows (OSWorld's getter gives rows), or the ``url`` column of a
    History database copy (our getter gives its path, opened read-only); None if unreadable."""
    if isinstance(result, (list, tuple)):
        try:
            return [row[0] for row in result]
        except (TypeError, IndexError, KeyError):
            return None
    if not isinstance(result, (str, os.PathLike)) or not Path(result).is_file():
        return None
    uri = Path(result).resolve().as_uri() + "?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True)
        try:
            return [row[0] for row in connection.execute("SELECT url FROM urls")]
        finally:
            connection.close()
    except sqlite3.Error:
        return None


@metric("check_history_deleted")
def check_history_deleted(result: Any, rules: Any) -> float:
    """1 when no browsing-history URL contains any of ``rules["keywords"]`` (``rules["type"]: keywords``),
    case-sensitively as in OSWorld.

    result = rows of getter ``history`` (URL first) or the path of a History sqlite copy.
    """
    kind = rule_value(rules, "type", "check_history_deleted")
    if kind != "keywords":
        raise UserError(f"metric 'check_history_deleted': type must be 'keywords', got {kind!r}")
    keywords = _string_list(rules, "keywords", "check_history_deleted")
    urls = _history_urls(result)
    if urls is None:
        return 0.0
    try:
        return float(not any(keyword in url for keyword in keywords for url in urls))
    except TypeError:
        return 0.0


@metric("check_font_size")
def check_font_size(result: Any, rules: Any) -> float:
    """1 when Chromium's default font size fits the rule, as OSWorld checks it.

    result = the ``webkit.webprefs`` font-size dict of getter ``chrome_font_size`` (or a whole
    Preferences dict). ``rules["type"]``: ``value`` (equals ``value``) or ``range``
    (``min < size < max``, strict). ``rules["key"]`` (ours) picks another size
    (``minimum_font_size``, ``default_fixed_font_size``). No ``default_font_size`` in the dict: 0.
    """
    kind = rule_value(rules, "type", "check_font_size")
    key = rule_value(rules, "key", "check_font_size", default="default_font_size")
    if kind == "value":
        bounds = [rule_value(rules, "value", "check_font_size")]
    elif kind == "range":
        bounds = [rule_value(rules, "min", "check_font_size"), rule_value(rules, "max", "check_font_size")]
    else:
        raise UserError(f"metric 'check_font_size': type must be 'value' or 'range', got {kind!r}")
    if not isinstance(result, dict):
        return 0.0
    sizes = _walk_dicts(result, ["webkit", "webprefs"]) if "webkit" in result else result
    if not isinstance(sizes, dict) or key not in sizes:
        return 0.0
    size = sizes[key]
    try:
        return float(bool(size == bounds[0] if kind == "value" else bounds[0] < size < bounds[1]))
    except TypeError:
        return 0.0


def _walk_dicts(data: Any, keys: list[str]) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data
