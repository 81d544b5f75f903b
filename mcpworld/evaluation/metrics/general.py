"""General metrics over strings, text files and JSON/YAML files.

``rules`` is the literal object an ``expected: {type: rule, rules: {...}}`` getter returns.
Every metric scores a ``None`` result (nothing produced) as 0. A malformed ``rules`` object is
the task author's mistake and raises UserError. A result file that cannot be parsed raises; the
spec evaluator turns that into 0 with the error as the reason.
"""

from __future__ import annotations

import difflib
import io
import json
import re
from pathlib import Path
from typing import Any

import yaml
from rapidfuzz import fuzz

from mcpworld.core.errors import UserError
from mcpworld.evaluation.matchers import RuleError, osworld_match_value
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


def read_text_strict(path: str | None) -> str | None:
    """A local file's text as OSWorld's metrics read it (``open(path)``: UTF-8, universal newlines);
    None when there is no such file or it is not UTF-8 (OSWorld raised there, which scores 0)."""
    if not path:
        return None
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None


@metric("exact_match")
def exact_match(result: Any, rules: Any) -> float:
    """1 when ``result == rules["expected"]``, strings compared with surrounding whitespace stripped.

    Deliberate difference from OSWorld, which compares as is: mcpworld's own tasks and templates
    expect a command's output (``echo x`` gives ``"x\\n"``) to equal ``"x"``. OSWorld's tasks write
    the newline into the expected text (``"1\\n"``), which still matches; only a result differing
    from the expected text in surrounding whitespace alone scores 1 here and 0 in OSWorld.
    """
    expected = rule_value(rules, "expected", "exact_match")
    strip = lambda value: value.strip() if isinstance(value, str) else value  # noqa: E731
    return float(bool(strip(result) == strip(expected)))


@metric("fuzzy_match")
def fuzzy_match(result: Any, rules: Any) -> float:
    """rapidfuzz similarity to ``rules["expected"]`` as OSWorld scores it (case and punctuation
    count; ``None`` scores 0, two empty strings 1), or 0/1 with our ``threshold`` option."""
    expected = rule_value(rules, "expected", "fuzzy_match")
    threshold = rule_value(rules, "threshold", "fuzzy_match", default=None)
    if threshold is not None and not (isinstance(threshold, (int, float)) and 0 <= threshold <= 1):
        raise UserError(f"metric 'fuzzy_match': threshold must be a number in [0, 1], got {threshold!r}")
    try:
        ratio = fuzz.ratio(result, expected) / 100.0
    except TypeError:  # OSWorld raised on a value rapidfuzz cannot compare
        return 0.0
    if threshold is None:
        return ratio
    return 1.0 if ratio >= threshold else 0.0


@metric("check_include_exclude")
def check_include_exclude(result: Any, rules: Any) -> float:
    """1 when every ``include`` item is in the result and no ``exclude`` item is (``in`` on the
    result as it is: a substring of a string, an element of a list; another type scores 0)."""
    include = rule_value(rules, "include", "check_include_exclude", default=[]) or []
    exclude = rule_value(rules, "exclude", "check_include_exclude", default=[]) or []
    if result is None:
        return 0.0
    try:
        return float(all(item in result for item in include) and not any(item in result for item in exclude))
    except TypeError:  # OSWorld raised: the result does not support ``in`` with these items
        return 0.0


# Above this size a character-level comparison gets slow (quadratic); pdf.py compares words instead.
CHAR_DIFF_LIMIT = 200_000


@metric("diff_text_file")
def diff_text_file(result_path: str | None, expected_path: str | None) -> float:
    """Line-level similarity of two text files, as OSWorld scores it: difflib's ratio over the lines.

    ``2 * matching lines / (lines in both)``; a changed line counts wholly as different, so one
    edited line of two scores 0.5. A missing or non-UTF-8 file scores 0 (OSWorld raised there).
    """
    result, expected = read_text_strict(result_path), read_text_strict(expected_path)
    if result is None or expected is None:
        return 0.0
    return difflib.SequenceMatcher(a=result.splitlines(), b=expected.splitlines()).ratio()


class _NotThere(Exception):
    """A key path that OSWorld's check_json could not follow."""


def _follow(data: Any, key: Any) -> Any:
    """``data[k]`` for each ``k`` of the key path, as OSWorld follows it: dict keys, list and string
    indices (negative too); a string key path is followed character by character.

    A missing key or an unindexable value raises _NotThere; an index out of range raises IndexError
    (OSWorld let that escape its per-key handling)."""
    for part in key:
        try:
            data = data[part]
        except (KeyError, TypeError):
            raise _NotThere from None
    return data


@metric("check_json")
def check_json(result_path: str | None, rules: Any, is_yaml: bool = False) -> float:
    """1 when every ``expect`` item matches and no ``unexpect`` item does, as OSWorld decides it.

    Items are ``{"key": [path…], "method": m, "ref": v}`` (``matchers.osworld_match_value``). A key
    missing from the file fails an ``expect`` item; for an ``unexpect`` item the value is ``None``
    and the rule is applied to that (``ne`` then matches, a regex cannot be applied). A rule
    OSWorld could not apply (it raised), an empty YAML file: 0; a file that does not parse raises.
    """
    expect = rule_value(rules, "expect", "check_json", default={}) or []
    unexpect = rule_value(rules, "unexpect", "check_json", default={}) or []
    text = read_text_strict(result_path)
    if text is None:
        return 0.0
    # a file that does not parse raises: the spec evaluator scores it 0 with the parse error as reason
    data = yaml.safe_load(text) if is_yaml else json.loads(text)
    if is_yaml and data is None:
        return 0.0
    try:
        for item in expect:
            try:
                value = _follow(data, item["key"])
            except _NotThere:
                return 0.0
            if not osworld_match_value(value, item):
                return 0.0
        for item in unexpect:
            try:
                value = _follow(data, item["key"])
            except _NotThere:
                value = None
            if osworld_match_value(value, item):
                return 0.0
    except (RuleError, IndexError, KeyError, TypeError):
        return 0.0
    return 1.0


@metric("literal_match")
def literal_match(result: Any, expected: Any, type: str = "str", ignore_case: bool = False) -> float:
    """1 when ``result`` equals ``expected`` compared as strings (``type: str``), or as lists of
    the items' strings (``type: list``: both must be lists or tuples of the same length).

    ``expected`` may also be a rules object ``{"expected": literal}`` (an mcpworld convenience;
    OSWorld would compare against the dict's text, which no task of its asks for).
    """
    if isinstance(expected, dict) and "expected" in expected:
        expected = expected["expected"]

    def text(value: Any) -> str:
        return str(value).lower() if ignore_case else str(value)

    if type == "str":
        return float(text(result) == text(expected))
    if type == "list":
        if not isinstance(result, (list, tuple)) or not isinstance(expected, (list, tuple)):
            return 0.0
        return float(len(result) == len(expected) and [text(r) for r in result] == [text(e) for e in expected])
    raise UserError(f"metric 'literal_match': type must be 'str' or 'list', got {type!r}")


@metric("match_in_list")
def match_in_list(result: Any, rules: Any) -> float:
    """1 when the result is one of ``rules["expected"]`` (``in``: a string expected means a substring)."""
    allowed = rule_value(rules, "expected", "match_in_list")
    try:
        return float(result in allowed)
    except TypeError:
        return 0.0


@metric("is_in_list")
def is_in_list(result: Any, rules: Any) -> float:
    """1 when ``rules["expected"]`` is an element (list result) or substring (string result) of the result."""
    expected = rule_value(rules, "expected", "is_in_list")
    try:
        return float(expected in result)
    except TypeError:  # None or another type without ``in``: OSWorld raised
        return 0.0


@metric("file_contains")
def file_contains(path: str | None, rules: Any) -> float:
    """1 when the file contains each item of ``rules["expected"]`` (a list of strings; as in
    OSWorld, a plain string is taken item by item, i.e. character by character)."""
    expected = rule_value(rules, "expected", "file_contains")
    text = read_text_strict(path)
    if text is None:
        return 0.0
    try:
        return float(all(needle in text for needle in expected))
    except TypeError:
        return 0.0


# OSWorld's clock time (00:00:00 to 23:59:60), found anywhere in a line; override with rules["pattern"].
TIME_PATTERN = r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)"


@metric("check_line_number")
def check_line_number(path: str | None, rules: Any) -> float:
    """1 when the number of lines matching ``rules["pattern"]`` (default: OSWorld's HH:MM:SS time
    regex) equals ``int(rules["expected"])``; an expected value that is not an integer scores 0."""
    expected = rule_value(rules, "expected", "check_line_number")
    pattern = rule_value(rules, "pattern", "check_line_number", default=TIME_PATTERN)
    try:
        regex = re.compile(pattern)
    except (TypeError, re.error) as exc:
        raise UserError(f"metric 'check_line_number': bad pattern {pattern!r}: {exc}") from None
    text = read_text_strict(path)
    if text is None:
        return 0.0
    try:
        expected_count = int(expected)
    except (TypeError, ValueError):
        return 0.0
    return float(sum(1 for line in file_lines(text) if regex.search(line)) == expected_count)


def file_lines(text: str) -> list[str]:
    """The lines that iterating over an open text file yields: split after each ``\\n`` only, line
    endings kept (``str.splitlines`` would also split at \\f, \\x1c, \\u2028…)."""
    return list(io.StringIO(text, newline="\n"))
