"""Metrics over text-like results: CSV rows, lines, JSON objects, SQLite queries, config, answer
and Python source files.

These are the OSWorld ``general.py`` / ``vscode.py`` metrics not covered by ``general``. ``rules``
is the literal object an ``expected: {type: rule, rules: {...}}`` getter returns. Every metric
scores a missing or unreadable result (``None``, a path that is not a file, a file that does not
parse) as 0 and never raises for it; a malformed ``rules`` object is the task author's mistake
and raises UserError naming the metric and the key.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import re
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from mcpworld.errors import UserError
from mcpworld.evaluation.matchers import match_value
from mcpworld.evaluation.metrics.general import _read_text, rule_value
from mcpworld.evaluation.registry import metric

_MISSING = object()

# A getter that could not fetch live data (OSWorld's web getters) puts this in place of a value.
EVALUATION_FAILED = "__EVALUATION_FAILED__"


# ---------------------------------------------------------------------------------------------
# expect / unexpect over a sequence of items (check_csv rows, check_list lines)


def _expect_unexpect(
    items: Iterable[Any], expect: list[Any], unexpect: list[Any], matches: Callable[[Any, Any], bool]
) -> float:
    """1 when each ``expect`` rule matches some item and no ``unexpect`` rule matches any item."""
    found = [False] * len(expect)
    for item in items:
        if any(matches(rule, item) for rule in unexpect):
            return 0.0
        for i, rule in enumerate(expect):
            found[i] = found[i] or matches(rule, item)
    return float(all(found))


def _rule_lists(rules: Any, name: str) -> tuple[list[Any], list[Any]]:
    lists = []
    for key in ("expect", "unexpect"):
        value = rule_value(rules, key, name, default=[]) or []
        if not isinstance(value, list):
            raise UserError(f"metric {name!r}: rules {key!r} must be a list, got {value!r}")
        lists.append(value)
    return lists[0], lists[1]


def _cell_matches(cell: Any, want: Any) -> bool:
    """One CSV cell (a string, or None for a short row) against a literal or a {method, ref} rule."""
    if isinstance(want, dict):
        return cell is not None and match_value(cell, want)
    if cell is None:
        return False
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        try:
            return float(cell) == float(want)
        except ValueError:
            return False
    return cell == (want if isinstance(want, str) else str(want))


def _record_matches(record: dict[str, Any], row: dict[str, Any]) -> bool:
    return all(column in row and _cell_matches(row[column], want) for column, want in record.items())


@metric("check_csv")
def check_csv(result_path: str | None, rules: Any) -> float:
    """1 when every ``expect`` record matches some CSV row and no ``unexpect`` record matches any row.

    ``result``: path to a CSV file with a header line (read with ``csv.DictReader``, BOM-tolerant).
    ``rules``: ``{"expect": [record…], "unexpect": [record…]}``; a record maps column → wanted
    value. A string value must equal the cell; a number is compared numerically; a
    ``{"method", "ref"}`` value goes through ``matchers.match_value`` (OSWorld compared only by
    equality; the matcher form is an extension). A row lacking a record's column does not match.
    """
    expect, unexpect = _rule_lists(rules, "check_csv")
    for record in [*expect, *unexpect]:
        if not isinstance(record, dict) or not record:
            raise UserError(
                f"metric 'check_csv': each expect/unexpect record must be a non-empty mapping "
                f"column → value, got {record!r}"
            )
    text = _read_text(result_path)
    if text is None:
        return 0.0
    try:
        rows = list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))
    except csv.Error:
        return 0.0
    return _expect_unexpect(rows, expect, unexpect, _record_matches)


def _compile_all(patterns: list[Any], name: str) -> list[re.Pattern[str]]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except (TypeError, re.error) as exc:
            raise UserError(f"metric {name!r}: bad regular expression {pattern!r}: {exc}") from None
    return compiled


@metric("check_list")
def check_list(result_path: str | None, rules: Any) -> float:
    """1 when each ``expect`` regex matches some line of the file and no ``unexpect`` regex matches any line.

    ``result``: path to a text file. ``rules``: ``{"expect": [regex…], "unexpect": [regex…]}``,
    each tried with ``re.search`` on every line (line endings removed).
    """
    expect, unexpect = (_compile_all(p, "check_list") for p in _rule_lists(rules, "check_list"))
    text = _read_text(result_path)
    if text is None:
        return 0.0
    return _expect_unexpect(text.splitlines(), expect, unexpect, lambda regex, line: regex.search(line) is not None)


# ---------------------------------------------------------------------------------------------
# JSON objects


def _parse_json_text(text: str) -> Any:
    """JSON, or a Python literal (single-quoted dicts); _MISSING when it is neither. Never evaluates code."""
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _MISSING


def _load_json_file(path: str | None) -> Any:
    """Parsed JSON of a local file; _MISSING when there is no such file or it is not JSON."""
    text = _read_text(path)
    if text is None:
        return _MISSING
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _MISSING


def _is_file(text: str) -> bool:
    try:
        return Path(text).is_file()
    except (OSError, ValueError):
        return False


def _as_json_object(result: Any) -> Any:
    """A dict/list result as is; a string as JSON text, or as the path of a JSON file."""
    if isinstance(result, (dict, list)):
        return result
    if not isinstance(result, str):
        return _MISSING
    stripped = result.strip()
    if stripped[:1] not in ("{", "[") and len(stripped) < 4096 and _is_file(stripped):
        stripped = _read_text(stripped) or ""
    return _parse_json_text(stripped)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _equal(value: Any, want: Any, ignore_list_order: bool) -> bool:
    if ignore_list_order and isinstance(value, list) and isinstance(want, list):
        return sorted(map(_canonical, value)) == sorted(map(_canonical, want))
    return value == want


def _contains(value: Any, want: Any) -> bool:
    """``expect_in_result`` semantics for one key."""
    if isinstance(want, list):
        # any one of the listed values: an element of a list value, or equal to a scalar value
        return any((isinstance(value, list) and w in value) or value == w for w in want)
    if isinstance(want, str):
        return isinstance(value, (str, list)) and want in value
    return value == want


@metric("check_direct_json_object")
def check_direct_json_object(
    result: Any, rules: Any, expect_in_result: bool | None = None, ignore_list_order: bool | None = None
) -> float:
    """1 when the result object has every key of ``rules["expected"]`` with the expected value.

    ``result``: a dict, a JSON (or Python-literal) string, or the path of a JSON file.
    ``rules``: ``{"expected": {key: value…}, "expect_in_result": bool, "ignore_list_order": bool}``
    (both flags may also be given as options). By default values must be equal (lists compared
    as multisets with ``ignore_list_order``). With ``expect_in_result`` a string value must be a
    substring of (or an element of) the result's value, a list value means "any one of these" (an
    element of the result's list, or equal to its scalar), other values must be equal.
    A key missing from the result fails (OSWorld treated it as ``None``). The marker
    ``"__EVALUATION_FAILED__"`` as an expected or result value scores 0. Fixed anchor bugs:
    ``ignore_list_order`` is read from the rules, and quotes inside strings are not mangled.
    """
    expected = rule_value(rules, "expected", "check_direct_json_object")
    if not isinstance(expected, dict):
        raise UserError(f"metric 'check_direct_json_object': rules 'expected' must be a mapping, got {expected!r}")
    in_result = bool(rules.get("expect_in_result", expect_in_result))
    any_order = bool(rules.get("ignore_list_order", ignore_list_order))
    data = _as_json_object(result)
    if not isinstance(data, dict):
        return 0.0
    for key, want in expected.items():
        value = data.get(key, _MISSING)
        if value is _MISSING or EVALUATION_FAILED in (want, value):
            return 0.0
        ok = _contains(value, want) if in_result else _equal(value, want, any_order)
        if not ok:
            return 0.0
    return 1.0


@metric("is_included_all_json_objects")
def is_included_all_json_objects(result_path: str | None, expected_path: str | None) -> float:
    """1 when every top-level key/value of the gold JSON file is present, equal, in the result JSON file.

    ``result``: path to the agent's JSON file; ``expected``: path to the gold JSON file. A gold
    list means every gold element must be an element of the result list. Fixed anchor bug:
    OSWorld named its first parameter "gold" but is called with the result there, so it checked
    result ⊆ gold; this checks gold ⊆ result, as described.
    """
    result, gold = _load_json_file(result_path), _load_json_file(expected_path)
    if result is _MISSING or gold is _MISSING:
        return 0.0
    if isinstance(gold, dict) and isinstance(result, dict):
        return float(all(key in result and result[key] == value for key, value in gold.items()))
    if isinstance(gold, list) and isinstance(result, list):
        return float(all(item in result for item in gold))
    return 0.0


# ---------------------------------------------------------------------------------------------
# SQLite

# Statements a read query may need; anything else (writes, ATTACH, PRAGMA…) is refused.
_SQLITE_ALLOWED = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    getattr(sqlite3, "SQLITE_RECURSIVE", 33),
}
_SQL_START = re.compile(r"\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*(select|with)\b", re.I | re.S)
SQLITE_TIMEOUT = 10.0
_SQL_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)


def _single_select(sql: Any) -> str:
    """The query without trailing semicolons; UserError unless it is one SELECT (or WITH … SELECT)."""
    if not isinstance(sql, str) or not _SQL_START.match(sql):
        raise UserError(f"metric 'run_sqlite3': rules 'sql' must be a single SELECT statement, got {sql!r}")
    for i, char in enumerate(sql):
        # complete_statement knows about quotes and comments: a ';' that completes the text ends it
        if char == ";" and sqlite3.complete_statement(sql[: i + 1]):
            if _SQL_COMMENT.sub("", sql[i + 1 :]).strip(" \t\r\n;"):
                raise UserError(f"metric 'run_sqlite3': rules 'sql' must be a single statement, got {sql!r}")
            return sql[:i]
    return sql


def _authorize(action: int, *_: Any) -> int:
    return sqlite3.SQLITE_OK if action in _SQLITE_ALLOWED else sqlite3.SQLITE_DENY


def _unit_score(value: Any) -> float:
    """A cell as a score: numbers (or numeric text) clamped to [0, 1]; anything else 0."""
    if value is None or isinstance(value, (bytes, bytearray)):
        return 0.0
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(number) else min(1.0, max(0.0, number))


@metric("run_sqlite3")
def run_sqlite3(result_path: str | None, rules: Any, timeout: float = SQLITE_TIMEOUT) -> float:
    """The first column of the first row of ``rules["sql"]`` run on the result database, clamped to [0, 1].

    ``result``: path to a SQLite database file, opened read-only (``mode=ro``); the query may
    only read (an authorizer refuses everything else). ``rules``: ``{"sql": "SELECT …"}``, one
    SELECT/WITH statement. Options: ``timeout`` seconds (default 10), after which the query is
    interrupted and scores 0. No row, NULL or a non-numeric cell scores 0; so does a database
    that lacks the queried table or is not a database. A SQL syntax error or a refused
    operation is the author's mistake: UserError.
    """
    sql = _single_select(rule_value(rules, "sql", "run_sqlite3"))
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise UserError(f"metric 'run_sqlite3': option 'timeout' must be a positive number of seconds, got {timeout!r}")
    path = Path(result_path) if result_path else None
    if path is None or not path.is_file():
        return 0.0
    deadline = time.monotonic() + timeout
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return 0.0
    try:
        connection.set_authorizer(_authorize)
        connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        row = connection.execute(sql).fetchone()
    except (sqlite3.Warning, sqlite3.ProgrammingError) as exc:
        raise UserError(f"metric 'run_sqlite3': bad rules 'sql' {sql!r}: {exc}") from None
    except sqlite3.DatabaseError as exc:
        message = str(exc)
        if "syntax error" in message or "not authorized" in message or "incomplete input" in message:
            raise UserError(f"metric 'run_sqlite3': bad rules 'sql' {sql!r}: {message}") from None
        return 0.0  # no such table/column, not a database, interrupted by the timeout…
    finally:
        connection.close()
    return _unit_score(row[0]) if row else 0.0


# ---------------------------------------------------------------------------------------------
# Text, config and answer comparisons (OSWorld vscode.py)


def _normalize_text(text: str, ignore_blanks: bool, ignore_case: bool) -> str:
    if ignore_blanks:
        text = " ".join(text.split())
    return text.lower() if ignore_case else text


@metric("compare_text_file")
def compare_text_file(
    result_path: str | None, expected_path: str | None, ignore_blanks: bool = False, ignore_case: bool = False
) -> float:
    """1 when two text files have the same content.

    ``result``/``expected``: paths to text files. Options: ``ignore_blanks`` (every run of
    whitespace, newlines included, counts as one space; leading/trailing whitespace ignored),
    ``ignore_case``.
    """
    result, expected = _read_text(result_path), _read_text(expected_path)
    if result is None or expected is None:
        return 0.0
    return float(
        _normalize_text(result, ignore_blanks, ignore_case) == _normalize_text(expected, ignore_blanks, ignore_case)
    )


# Strings come first in each alternation so that "//" or "," inside a string is kept.
_JSON_STRING = r'"(?:\\.|[^"\\])*"'
_JSONC_COMMENT = re.compile(_JSON_STRING + r"|//[^\n]*|/\*.*?\*/", re.S)
_JSONC_TRAILING_COMMA = re.compile(_JSON_STRING + r"|,(?=\s*[}\]])")


def _keep_strings(match: re.Match[str]) -> str:
    return match.group(0) if match.group(0).startswith('"') else " "


def _parse_jsonc(text: str) -> Any:
    """JSON that may carry // and /* */ comments and trailing commas (VS Code's config files)."""
    cleaned = _JSONC_TRAILING_COMMA.sub(_keep_strings, _JSONC_COMMENT.sub(_keep_strings, text))
    try:
        return json.loads(cleaned)
    except (ValueError, RecursionError):
        return _MISSING


def _is_subset(want: Any, have: Any) -> bool:
    """Structural containment: dict keys recursively, list items each contained by some item."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and _is_subset(v, have[k]) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and all(any(_is_subset(w, h) for h in have) for w in want)
    return want == have


@metric("compare_config")
def compare_config(result_path: str | None, rules: Any, containment_ok: bool = True) -> float:
    """1 when a config file matches ``rules["expected"]``: same text, or (for JSON) the expected structure.

    ``result``: path to a config/text file. ``rules``: ``{"expected": text | object}``. Texts are
    compared with surrounding whitespace stripped. When both sides parse as JSON (comments and
    trailing commas allowed, as in VS Code files), ``containment_ok`` (default true) asks for the
    expected object to be contained in the file's (extra keys and list items allowed); false asks
    for equal objects. For non-JSON text, ``containment_ok`` accepts the expected text as a
    substring of the file.
    """
    expected = rule_value(rules, "expected", "compare_config")
    if not isinstance(expected, (str, dict, list)):
        raise UserError(f"metric 'compare_config': rules 'expected' must be text or a JSON object, got {expected!r}")
    text = _read_text(result_path)
    if text is None:
        return 0.0
    if isinstance(expected, str) and text.strip() == expected.strip():
        return 1.0
    want = _parse_jsonc(expected) if isinstance(expected, str) else expected
    have = _parse_jsonc(text)
    if want is not _MISSING and have is not _MISSING:
        return float(_is_subset(want, have) if containment_ok else want == have)
    if containment_ok and isinstance(expected, str):
        return float(expected.strip() in text)
    return 0.0


@metric("compare_answer")
def compare_answer(result: Any, rules: Any) -> float:
    """1 when the answer string equals ``rules["expected"]`` (both stripped of surrounding whitespace).

    ``result``: a string (command output, an answer). Empty or None scores 0.
    """
    expected = rule_value(rules, "expected", "compare_answer")
    if result is None or not str(result).strip():
        return 0.0
    return float(str(result).strip() == str(expected).strip())


_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


@metric("compare_result_files")
def compare_result_files(result_path: str | None, expected_path: str | None, tolerance: float = 1e-4) -> float:
    """1 when the result file holds the gold file's answer: the same number (within ``tolerance``) or the same text.

    ``result``/``expected``: paths to text files. When the gold content is a number, the result
    passes if any number in it (it may be a sentence around the number; thousands commas allowed)
    is within ``tolerance`` (default 1e-4). Otherwise the stripped contents must be equal.
    Fixed anchor bug: OSWorld's substring test let gold ``5`` pass a result of ``15``.
    """
    result, expected = _read_text(result_path), _read_text(expected_path)
    if result is None or expected is None:
        return 0.0
    result, expected = result.strip(), expected.strip()
    if not re.fullmatch(_NUMBER, expected):
        return float(result == expected)
    target = float(expected)
    numbers = re.findall(_NUMBER, _THOUSANDS.sub("", result))
    return float(any(abs(float(n) - target) <= tolerance for n in numbers))


# First-line markers OSWorld skips before comparing Python sources (at most the first 3 lines).
_PY_HEADER_PREFIXES = ("#!", "# -*- coding:", "# coding:", "# coding=")


def _python_source_lines(path: str | None) -> list[str] | None:
    """A UTF-8 source's lines as OSWorld compares them; None if missing or not UTF-8.

    A shebang/coding header among the first three lines is dropped, blank lines are dropped,
    tabs become 4 columns and trailing spaces go; everything else (comments, spacing inside a
    line, indentation width) is kept.
    """
    if not path or not Path(path).is_file():
        return None
    try:
        lines = Path(path).read_bytes().decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None
    start = 0
    while start < min(3, len(lines)) and lines[start].strip().startswith(_PY_HEADER_PREFIXES):
        start += 1
    return [line.expandtabs(4).rstrip() for line in lines[start:] if line.strip()]


@metric("compare_python_pure_text")
def compare_python_pure_text(result_path: str | None, expected_path: str | None) -> float:
    """1 when two Python files have the same text up to layout, as OSWorld compares them.

    ``result``/``expected``: paths to ``.py`` files, compared as text (never imported or run).
    Blank lines, trailing spaces, tab-vs-4-spaces and a shebang/coding header do not count;
    comments, spacing within a line and indentation width do, as does Markdown around the code.
    """
    result, expected = _python_source_lines(result_path), _python_source_lines(expected_path)
    if result is None or expected is None:
        return 0.0
    return float(result == expected)
