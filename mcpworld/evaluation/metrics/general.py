"""General metrics over strings, text files and JSON/YAML files.

``rules`` is the literal object an ``expected: {type: rule, rules: {...}}`` getter returns.
Every metric scores a ``None`` result (nothing produced) as 0. A malformed ``rules`` object is
the task author's mistake and raises UserError. A result file that cannot be parsed raises; the
spec evaluator turns that into 0 with the error as the reason.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any

import yaml
from rapidfuzz import fuzz

from mcpworld.errors import UserError
from mcpworld.evaluation.matchers import match_value
from mcpworld.evaluation.registry import metric


def rule_value(rules: Any, key: str, metric_name: str, default: Any = ...) -> Any:
    """``rules[key]``; UserError naming the metric when rules is not a dict or lacks the key."""
    if not isinstance(rules, dict):
        raise UserError(f"metric {metric_name!r} needs a rules object with {key!r}, got {rules!r}")
    if key in rules:
        return rules[key]
    if default is ...:
        raise UserError(f"metric {metric_name!r} needs {key!r} in its rules")
    return default


def _read_text(path: str | None) -> str | None:
    """Text of a local file (a getter's cached copy), or None when there is no such file."""
    if not path:
        return None
    p = Path(path)
    if not p.is_file():
        return None
    return p.read_text(encoding="utf-8", errors="replace")


def _strip(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


@metric("exact_match")
def exact_match(result: Any, rules: Any) -> float:
    """1 when ``result == rules["expected"]`` (strings compared stripped: command output ends in \\n)."""
    expected = rule_value(rules, "expected", "exact_match")
    if result is None:
        return 0.0
    return float(_strip(result) == _strip(expected))


@metric("fuzzy_match")
def fuzzy_match(result: Any, rules: Any) -> float:
    """rapidfuzz similarity to ``rules["expected"]`` as OSWorld scores it (case and punctuation
    count), or 0/1 with our ``threshold`` option.

    An empty result scores 0 (OSWorld: 1 against an empty expectation, as rapidfuzz rates two
    empty strings identical; nothing produced is never a match).
    """
    expected = rule_value(rules, "expected", "fuzzy_match")
    threshold = rule_value(rules, "threshold", "fuzzy_match", default=None)
    if threshold is not None and not (isinstance(threshold, (int, float)) and 0 <= threshold <= 1):
        raise UserError(f"metric 'fuzzy_match': threshold must be a number in [0, 1], got {threshold!r}")
    if result is None or not str(result):
        return 0.0
    ratio = fuzz.ratio(str(result), str(expected)) / 100.0
    if threshold is None:
        return ratio
    return 1.0 if ratio >= threshold else 0.0


@metric("check_include_exclude")
def check_include_exclude(result: Any, rules: Any) -> float:
    """1 when every ``include`` item is in the result and no ``exclude`` item is."""
    include = rule_value(rules, "include", "check_include_exclude", default=[]) or []
    exclude = rule_value(rules, "exclude", "check_include_exclude", default=[]) or []
    if result is None:
        return 0.0
    haystack = result if isinstance(result, (str, list, tuple, set, dict)) else str(result)
    return float(all(item in haystack for item in include) and not any(item in haystack for item in exclude))


# Above this size a character-level comparison gets slow (quadratic); pdf.py compares words instead.
CHAR_DIFF_LIMIT = 200_000


@metric("diff_text_file")
def diff_text_file(result_path: str | None, expected_path: str | None) -> float:
    """Line-level similarity of two text files, as OSWorld scores it: difflib's ratio over the lines.

    ``2 * matching lines / (lines in both)``; a changed line counts wholly as different, so one
    edited line of two scores 0.5. A missing file scores 0 (OSWorld raises on a missing file).
    """
    result, expected = _read_text(result_path), _read_text(expected_path)
    if result is None or expected is None:
        return 0.0
    return difflib.SequenceMatcher(a=result.splitlines(), b=expected.splitlines()).ratio()


_MISSING = object()


def _walk(data: Any, key: Any) -> Any:
    """Follow a key path (dict keys, list indices) into parsed JSON; _MISSING if it is not there."""
    for part in key if isinstance(key, list) else [key]:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and -len(data) <= part < len(data):
            data = data[part]
        else:
            return _MISSING
    return data


@metric("check_json")
def check_json(result_path: str | None, rules: Any, is_yaml: bool = False) -> float:
    """1 when every ``expect`` item matches and no ``unexpect`` item does.

    Items are ``{"key": [path…], "method": m, "ref": v}`` (see ``matchers.match_value``). A key
    missing from the file fails an ``expect`` item and satisfies an ``unexpect`` item.
    """
    expect = rule_value(rules, "expect", "check_json", default=[]) or []
    unexpect = rule_value(rules, "unexpect", "check_json", default=[]) or []
    for item in [*expect, *unexpect]:
        if not isinstance(item, dict) or "key" not in item:
            raise UserError(f"metric 'check_json': each expect/unexpect item needs 'key', 'method', 'ref'; got {item!r}")
    text = _read_text(result_path)
    if text is None:
        return 0.0
    data = yaml.safe_load(text) if is_yaml else json.loads(text)
    for item in expect:
        value = _walk(data, item["key"])
        if value is _MISSING or not match_value(value, item):
            return 0.0
    for item in unexpect:
        value = _walk(data, item["key"])
        if value is not _MISSING and match_value(value, item):
            return 0.0
    return 1.0


def _fold(value: Any, ignore_case: bool) -> Any:
    return value.lower() if ignore_case and isinstance(value, str) else value


@metric("literal_match")
def literal_match(result: Any, expected: Any, type: str = "str", ignore_case: bool = False) -> float:
    """1 when ``result`` equals ``expected`` as a string (``type: str``) or item by item (``type: list``).

    ``expected`` may be the literal itself or a rules object ``{"expected": literal}``.
    """
    if isinstance(expected, dict) and "expected" in expected:
        expected = expected["expected"]
    if result is None:
        return 0.0
    if type == "str":
        return float(_fold(str(result), ignore_case) == _fold(str(expected), ignore_case))
    if type == "list":
        if not isinstance(result, (list, tuple)) or not isinstance(expected, (list, tuple)):
            return 0.0
        return float(
            len(result) == len(expected)
            and all(_fold(r, ignore_case) == _fold(e, ignore_case) for r, e in zip(result, expected))
        )
    raise UserError(f"metric 'literal_match': type must be 'str' or 'list', got {type!r}")


@metric("match_in_list")
def match_in_list(result: Any, rules: Any) -> float:
    """1 when the result (stripped if a string) is one of the allowed ``rules["expected"]`` values."""
    allowed = rule_value(rules, "expected", "match_in_list")
    if not isinstance(allowed, list):
        raise UserError(f"metric 'match_in_list': rules 'expected' must be a list, got {allowed!r}")
    if result is None:
        return 0.0
    return float(_strip(result) in [_strip(a) for a in allowed])


@metric("is_in_list")
def is_in_list(result: Any, rules: Any) -> float:
    """1 when ``rules["expected"]`` is an element (list result) or substring (string result) of the result."""
    expected = rule_value(rules, "expected", "is_in_list")
    if result is None:
        return 0.0
    try:
        return float(expected in result)
    except TypeError:
        return 0.0


@metric("file_contains")
def file_contains(path: str | None, rules: Any) -> float:
    """1 when the file contains every substring in ``rules["expected"]``."""
    expected = rule_value(rules, "expected", "file_contains")
    needles = [expected] if isinstance(expected, str) else list(expected)
    text = _read_text(path)
    if text is None:
        return 0.0
    return float(all(str(needle) in text for needle in needles))


# A clock time such as 12:03:45 (what OSWorld's only use counts); override with rules["pattern"].
TIME_PATTERN = r"\b\d{1,2}:\d{2}:\d{2}\b"


@metric("check_line_number")
def check_line_number(path: str | None, rules: Any) -> float:
    """1 when the number of lines matching ``rules["pattern"]`` (default: a HH:MM:SS time) is ``rules["expected"]``."""
    expected = rule_value(rules, "expected", "check_line_number")
    pattern = rule_value(rules, "pattern", "check_line_number", default=TIME_PATTERN)
    try:
        expected_count = int(expected)
        regex = re.compile(pattern)
    except (TypeError, ValueError, re.error) as exc:
        raise UserError(f"metric 'check_line_number': bad rules {rules!r}: {exc}") from None
    text = _read_text(path)
    if text is None:
        return 0.0
    return float(sum(1 for line in text.splitlines() if regex.search(line)) == expected_count)
