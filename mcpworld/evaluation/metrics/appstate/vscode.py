"""Metrics over VS Code's settings.json and keybindings.json, JSON with comments and trailing commas
(JSONC) as VS Code reads it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.general import read_text_strict, rule_value
from mcpworld.evaluation.registry import metric

_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
_JSONC_COMMENT = re.compile(_JSON_STRING + r"|//[^\n]*|/\*.*?\*/", re.S)
_JSONC_TRAILING_COMMA = re.compile(_JSON_STRING + r"|,(?=\s*[}\]])")


def _keep_strings(match: re.Match[str]) -> str:
    token = match.group(0)
    return token if token.startswith('"') else " "  # a space, so [1/**/2] cannot become [12]


def loads_jsonc(text: str) -> Any:
    """Parse JSON that may contain ``//`` and ``/* */`` comments and trailing commas (as VS Code allows).

    Comments, then trailing commas, are dropped outside strings; ValueError if the rest is not JSON.
    """
    without_comments = _JSONC_COMMENT.sub(_keep_strings, text.lstrip("\ufeff"))
    return json.loads(_JSONC_TRAILING_COMMA.sub(_keep_strings, without_comments))


_UNREADABLE = object()


def _load_jsonc(text: str | None) -> Any:
    """Parsed JSONC, or ``_UNREADABLE``."""
    if text is None:
        return _UNREADABLE
    try:
        return loads_jsonc(text)
    except (ValueError, RecursionError):
        return _UNREADABLE


@metric("check_json_settings")
def check_json_settings(result: str | None, rules: Any) -> float:
    """1 when every top-level setting in ``rules["expected"]`` (a dict) is in the settings file with
    an equal value (Python equality, as OSWorld: ``1 == true``, nested objects compared whole).

    result = path of a VS Code-style settings.json (UTF-8). OSWorld parsed it as strict JSON, so a
    file with comments or a trailing comma (which VS Code itself writes and reads) scored 0 there;
    here they are tolerated, the one deliberate difference.
    """
    expected = rule_value(rules, "expected", "check_json_settings")
    if not isinstance(expected, dict):
        raise UserError(f"metric 'check_json_settings': 'expected' must be a mapping of settings, got {expected!r}")
    data = _load_jsonc(read_text_strict(result))
    if not isinstance(data, dict):
        return 0.0
    return float(all(key in data and data[key] == value for key, value in expected.items()))


@metric("check_json_keybindings")
def check_json_keybindings(result: str | None, rules: Any) -> float:
    """1 when ``rules["expected"]`` (one binding ``{key, command[, when, args]}``) is an entry of the
    keybindings file, compared as OSWorld does: the same fields with equal values (key chords
    exactly, case included).

    result = path of a VS Code keybindings.json, a JSON list. As in OSWorld the file is read whole,
    or else without its first line (VS Code's ``// Place your key bindings…`` header); comments and
    trailing commas elsewhere are tolerated, which OSWorld's strict JSON reading did not.
    """
    expected = rule_value(rules, "expected", "check_json_keybindings")
    text = read_text_strict(result)
    if text is None:
        return 0.0
    data = _load_jsonc(text)
    if not isinstance(data, list):
        data = _load_jsonc(text.split("\n", 1)[1] if "\n" in text else "")
    if not isinstance(data, list):
        return 0.0
    return float(expected in data)
