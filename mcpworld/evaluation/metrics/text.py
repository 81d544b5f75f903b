"""Metrics over text-like results: CSV rows, lines, JSON objects, SQLite queries, config, answer
and Python source files.

These are the OSWorld ``general.py`` / ``vscode.py`` metrics not covered by ``general``. ``rules``
is the literal object an ``expected: {type: rule, rules: {...}}`` getter returns. Every metric
scores a missing or unreadable result (``None``, a path that is not a file, a file that does not
parse) as 0 and never raises for it; a malformed ``rules`` object is the task author's mistake
and raises UserError naming the metric and the key.
"""

from __future__ import annotations

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

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.general import file_lines, read_text_strict, rule_value
from mcpworld.evaluation.registry import metric

# A getter that could not fetch live data (OSWorld's web getters) puts this in place of a value.
EVALUATION_FAILED = "__EVALUATION_FAILED__"


# ---------------------------------------------------------------------------------------------
# expect / unexpect over a sequence of items (check_csv rows, check_list lines)


def _expect_unexpect(items: Iterable[Any], expect: list[Any], unexpect: list[Any], matches: Callable[[Any, Any], bool]) -> float:
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


def _record_matches(record: dict[str, Any], row: dict[str, Any]) -> bool:
    """OSWorld's record test: every column is in the row with a cell equal to the value (no coercion:
    a cell is a string, or None past the end of a short row)."""
    return all(column in row and row[column] == want for column, want in record.items())


@metric("check_csv")
def check_csv(result_path: str | None, rules: Any) -> float:
    """1 when every ``expect`` record matches some CSV row and no ``unexpect`` record matches any row.

    ``result``: path to a CSV file with a header line (``csv.DictReader``; a UTF-8 byte-order mark
    stays part of the first column's name, as in OSWorld). ``rules``: ``{"expect": [record…],
    "unexpect": [record…]}``; a record maps column → value, and matches a row whose cells equal
    the values exactly (strings: ``"3"`` is not ``3``).
    """
    expect, unexpect = _rule_lists(rules, "check_csv")
    for record in [*expect, *unexpect]:
        if not isinstance(record, dict):
            raise UserError(f"metric 'check_csv': each expect/unexpect record must be a mapping column → value, got {record!r}")
    text = read_text_strict(result_path)
    if text is None:
        return 0.0
    try:
        rows = list(csv.DictReader(io.StringIO(text)))
    except csv.Error:
        return 0.0
    return _expect_unexpect(rows, expect, unexpect, lambda record, row: _record_matches(record, row))


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
    each tried with ``re.search`` on every line as file iteration yields it (its ``\\n`` kept, as
    in OSWorld: ``\\s$`` matches every full line).
    """
    expect, unexpect = (_compile_all(p, "check_list") for p in _rule_lists(rules, "check_list"))
    text = read_text_strict(result_path)
    if text is None:
        return 0.0
    return _expect_unexpect(file_lines(text), expect, unexpect, lambda regex, line: regex.search(line) is not None)


# ---------------------------------------------------------------------------------------------
# JSON objects


@metric("check_direct_json_object")
def check_direct_json_object(result: Any, rules: Any) -> float:
    """1 when the result object has the values ``rules["expected"]`` asks for, as OSWorld decides it.

    ``result``: a dict, or JSON text (stripped, every ``'`` turned into ``"`` first, so single-quoted
    Python dicts parse; text that still does not parse scores 0). ``rules``: ``{"expected": {key:
    value…}, "expect_in_result": bool}``. By default each expected value must equal the result's
    value for that key (a missing key is ``None``). With ``expect_in_result`` a string must be a
    substring of (or element of) the result's value, a list means "any one of these" (an element
    of the result's list, or equal to its string), any other expected value scores 0. The marker
    ``"__EVALUATION_FAILED__"`` as an expected value scores 0. OSWorld's ``ignore_list_order`` is
    read from inside ``expected``, where it is also compared as a key, which always fails: kept.
    """
    if isinstance(result, str):
        try:
            result = json.loads(result.strip().replace("'", '"'))
        except (ValueError, RecursionError):
            return 0.0
    if result is None or not isinstance(rules, dict):
        return 0.0
    try:
        expected = rules.get("expected", {})
        if expected and any(value == EVALUATION_FAILED for value in expected.values()):
            return 0.0
        expected = rules["expected"]
        if not rules.get("expect_in_result", False):
            for key in expected:
                if expected.get("ignore_list_order", False):
                    if sorted(expected.get(key)) != sorted(result.get(key)):
                        return 0.0
                elif expected.get(key) != result.get(key):
                    return 0.0
            return 1.0
        for key in expected:
            want, have = expected.get(key), result.get(key)
            if isinstance(want, list):
                if not any((isinstance(have, list) and w in have) or (isinstance(have, str) and w == have) for w in want):
                    return 0.0
            elif isinstance(want, str):
                if want not in have:
                    return 0.0
            else:
                return 0.0
        return 1.0
    except Exception:
        return 0.0


@metric("is_included_all_json_objects")
def is_included_all_json_objects(result_path: str | None, expected_path: str | None) -> float:
    """1 when every top-level key of the RESULT JSON object is in the expected JSON object with an
    equal value (result ⊆ expected; an empty result object passes).

    OSWorld's code names its first parameter "gold" and documents gold ⊆ result, but it is called
    ``metric(result, expected)``, so it checks result ⊆ expected; that is the behaviour its tasks
    were written against, and the one kept here. Both files must hold JSON objects; a missing or
    unparsable file scores 0.
    """
    if not result_path or not expected_path:
        return 0.0
    result_text, expected_text = read_text_strict(result_path), read_text_strict(expected_path)
    if result_text is None or expected_text is None:
        return 0.0
    try:
        result, expected = json.loads(result_text), json.loads(expected_text)
    except (ValueError, RecursionError):
        return 0.0
    if not isinstance(result, dict) or not isinstance(expected, dict):
        return 0.0
    return float(all(key in expected and result[key] == expected[key] for key in result))


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
    if value is None:
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

    ``result``/``expected``: paths to UTF-8 text files (a missing or non-UTF-8 file scores 0).
    Options: ``ignore_blanks`` (every run of whitespace, newlines included, counts as one space;
    leading/trailing whitespace ignored), ``ignore_case``.
    """
    result, expected = read_text_strict(result_path), read_text_strict(expected_path)
    if result is None or expected is None:
        return 0.0
    return float(_normalize_text(result, ignore_blanks, ignore_case) == _normalize_text(expected, ignore_blanks, ignore_case))


def _json_contains(want: Any, have: Any) -> bool:
    """OSWorld's containment: dict keys recursively; lists and everything else must be equal."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and _json_contains(v, have[k]) for k, v in want.items())
    return want == have


@metric("compare_config")
def compare_config(result_path: str | None, rules: Any, containment_ok: bool = True) -> float:
    """1 when a config file matches the text ``rules["expected"]``, as OSWorld decides it.

    ``containment_ok`` (default true): when both the file and the expected text parse as JSON,
    the expected object must be contained in the file's (dict keys recursively, other values
    equal, lists equal); when either does not parse, the stripped expected text must be a
    substring of the file. False: the texts are equal, or both parse as equal JSON. Plain JSON
    only, as in OSWorld (a VS Code settings file with comments is compared as text). An empty or
    non-text ``expected``, or a missing or non-UTF-8 file, scores 0.
    """
    expected = rules.get("expected") if isinstance(rules, dict) else None
    if not result_path or not expected or not isinstance(expected, str):
        return 0.0
    text = read_text_strict(result_path)
    if text is None:
        return 0.0
    if containment_ok:
        try:
            have, want = json.loads(text), json.loads(expected)
        except (ValueError, RecursionError):
            return float(expected.strip() in text)
        return float(_json_contains(want, have))
    if text == expected:
        return 1.0
    try:
        return float(json.loads(text) == json.loads(expected))
    except (ValueError, RecursionError):
        return 0.0


@metric("compare_answer")
def compare_answer(result: Any, rules: Any) -> float:
    """1 when the answer equals ``rules["expected"]`` exactly (nothing stripped, as in OSWorld); an
    empty or None answer scores 0."""
    expected = rule_value(rules, "expected", "compare_answer")
    if not result:
        return 0.0
    return float(bool(result == expected))


@metric("compare_result_files")
def compare_result_files(result_path: str | None, expected_path: str | None) -> float:
    """1 when the result file holds the gold file's answer, as OSWorld decides it.

    Both contents are stripped. When the gold is a number (``float()`` parses it), the result
    passes if it contains the gold text (a sentence around the number; note gold ``5`` is in
    ``15``) or is itself a number less than 1e-4 away. Otherwise the contents must be equal.
    A missing or non-UTF-8 file scores 0.
    """
    result, expected = read_text_strict(result_path), read_text_strict(expected_path)
    if result is None or expected is None:
        return 0.0
    result, expected = result.strip(), expected.strip()
    try:
        target = float(expected)
        if expected in result:
            return 1.0
        return float(abs(float(result) - target) < 1e-4)
    except (ValueError, OverflowError):
        return float(result == expected)


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
