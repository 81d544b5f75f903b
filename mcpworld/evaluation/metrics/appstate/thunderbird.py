"""Metrics over a Thunderbird profile: prefs.js, an account's msgFilterRules.dat, and mail folders
(mbox files).
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcpworld.core.errors import UserError
from mcpworld.evaluation.matchers import match_value
from mcpworld.evaluation.metrics.appstate.common import _LINE
from mcpworld.evaluation.metrics.general import _read_text, read_text_strict
from mcpworld.evaluation.registry import metric


def _text_or_none(path: str | None) -> str | None:
    """Text of a local file; None when absent or unreadable (scored 0 by the caller)."""
    try:
        return _read_text(path)
    except OSError:
        return None


# A prefs.js line as OSWorld reads it: exactly one space after the name's comma, the value a JSON literal.
_USER_PREF = re.compile(r'^user_pref\("(?P<key>(?:[^"]|\\")+)", (?P<value>.+)\);$')


def thunderbird_prefs(text: str) -> list[tuple[str, Any]] | None:
    """``(name, value)`` of every ``user_pref("name", value);`` line of a prefs.js, in file order.

    Names are kept as written; values are decoded as JSON (``true`` is True, strings unescaped).
    None when a value is not JSON (OSWorld raised on such a file, which scores 0).
    """
    prefs = []
    for line in _LINE.findall(text):
        match = _USER_PREF.match(line.strip())
        if match:
            try:
                prefs.append((match.group("key"), json.loads(match.group("value"))))
            except ValueError:
                return None
    return prefs


def _pref_rules(rules: Any, key: str) -> dict[str, dict[str, Any]]:
    value = rules.get(key, {}) if isinstance(rules, dict) else None
    if not isinstance(value, dict) or not all(isinstance(r, dict) for r in value.values()):
        raise UserError(f"metric 'check_thunderbird_prefs': {key!r} must map pref names to {{method, ref}} rules, got {value!r}")
    return value


@metric("check_thunderbird_prefs")
def check_thunderbird_prefs(result: str | None, rules: Any) -> float:
    """1 when every pref of ``rules["expect"]`` is set in prefs.js to a value its ``{method, ref}`` rule
    accepts, and no pref of ``rules["unexpect"]`` has a value its rule accepts.

    result = path of a profile's prefs.js (Thunderbird writes it on exit; close it first). Read as
    OSWorld reads it: ``user_pref("name", value);`` lines, the last line for a pref deciding an
    ``expect``; a value that is not a JSON literal anywhere in the file scores 0. A pref Thunderbird
    left at its default is not in the file: an ``expect`` on it scores 0.
    """
    expect, unexpect = _pref_rules(rules, "expect"), _pref_rules(rules, "unexpect")
    if not expect and not unexpect:
        raise UserError("metric 'check_thunderbird_prefs' needs 'expect' or 'unexpect' rules")
    text = read_text_strict(result)
    prefs = thunderbird_prefs(text) if text is not None else None
    if prefs is None:
        return 0.0
    met = dict.fromkeys(expect, False)
    for name, value in prefs:
        if name in expect:
            met[name] = match_value(value, expect[name])
        elif name in unexpect and match_value(value, unexpect[name]):
            return 0.0
    return float(all(met.values()))


# One term of a filter condition, as OSWorld splits it: ``AND (subject,contains,x)`` or ``ALL``.
_FILTER_TERM = re.compile(r'\b(?:AND|OR) \([\w ]+,[\w \']+,(?:"(?:[^"]|")+"|[^)]+)\)|\bALL\b')
_FILTER_FIELDS = ("name", "enabled", "type", "action", "actionValue", "condition")


def _filter_value(line: str, field: str) -> str:
    """The quoted value of a ``field="…"`` line (its closing quote and line end cut off as OSWorld
    does: the last two characters), with ``\\"`` and ``\\\\`` unescaped."""
    return line[len(field) + 2 : -2].replace('\\"', '"').replace("\\\\", "\\")


def thunderbird_filters(text: str) -> list[dict[str, Any]] | None:
    """The filters of a msgFilterRules.dat as OSWorld reads them: ``{name, enabled, type, action,
    actionValue, condition: [terms]}``, a filter counted once its ``condition`` line is read.

    A filter's later ``action``/``actionValue`` lines overwrite earlier ones (the last action
    counts). None when a field line comes before any ``name`` (OSWorld raised).
    """
    filters: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in _LINE.findall(text):
        field = next((f for f in _FILTER_FIELDS if line.startswith(f + "=")), None)
        if field is None:
            continue
        value = _filter_value(line, field)
        if field == "name":
            current = {"name": value}
            continue
        if current is None:
            return None
        if field == "condition":
            current["condition"] = _FILTER_TERM.findall(value)
            filters.append(current)
        else:
            current[field] = value
    return filters


def _record_list(rules: Any, key: str) -> list[dict[str, Any]]:
    value = rules.get(key, []) if isinstance(rules, dict) else None
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        raise UserError(f"metric 'check_thunderbird_filter': {key!r} must be a list of filter records, got {value!r}")
    return value


def _fits(pattern: dict[str, Any], record: dict[str, Any]) -> bool:
    return all(key in record and record[key] == value for key, value in pattern.items())


@metric("check_thunderbird_filter")
def check_thunderbird_filter(result: str | None, rules: Any) -> float:
    """1 when every record of ``rules["expect"]`` fits some filter and no filter fits a record of
    ``rules["unexpect"]``.

    result = path of an account's msgFilterRules.dat. A record such as ``{enabled: "yes", action:
    "Move to folder", actionValue: "mailbox://…", condition: ["AND (subject,contains,x)"]}`` fits a
    filter when each of its fields equals the filter's (``condition`` as the list of terms). As in
    OSWorld a filter with several actions shows only its last one.
    """
    expect, unexpect = _record_list(rules, "expect"), _record_list(rules, "unexpect")
    text = read_text_strict(result)
    filters = thunderbird_filters(text) if text is not None else None
    if filters is None:
        return 0.0
    if any(_fits(pattern, flt) for pattern in unexpect for flt in filters):
        return 0.0
    return float(all(any(_fits(pattern, flt) for flt in filters) for pattern in expect))


# An mbox "From " line starts the file or follows a blank line; other "From " lines are body text.
_MBOX_SEPARATOR = re.compile(r"(?:\A|(?<=\n\n))From [^\n]*(?:\n|\Z)")
_MOZILLA_STATUS = re.compile(r"^X-Mozilla-Status: *([0-9A-Fa-f]{1,4})\s*$", re.M)
MSG_FLAG_EXPUNGED = 0x0008


def _mbox_messages(
    path: str, ignore_status: bool, ignore_keys: bool, remove_deleted: bool, remove_duplicate: bool
) -> list[str] | None:
    """The normalised messages of an mbox file (or of a single .eml), sorted; None if unreadable."""
    text = _text_or_none(path)
    if text is None:
        return None
    text = text.replace("\r\n", "\n")
    # A file that does not start with a "From " line is one message (.eml), whatever its body holds.
    parts = _MBOX_SEPARATOR.split(text) if text.startswith("From ") else [text]
    messages = []
    for message in parts:
        if not message.strip():
            continue
        status = _MOZILLA_STATUS.search(message)
        if remove_deleted and status and int(status.group(1), 16) & MSG_FLAG_EXPUNGED:
            continue
        if ignore_status:
            message = re.sub(r"^X-Mozilla-Status2?:.*\n?", "", message, flags=re.M)
        if ignore_keys:
            message = re.sub(r"^X-Mozilla-Keys:.*\n?", "", message, flags=re.M)
        messages.append(message.strip())
    return sorted(set(messages) if remove_duplicate else messages)


@metric("check_thunderbird_folder")
def check_thunderbird_folder(
    result: Any,
    expected: Any,
    ignore_status: bool = False,
    ignore_keys: bool = False,
    remove_deleted: bool = True,
    remove_duplicate: bool = True,
) -> float:
    """1 when each mail folder file holds the same messages as its gold file.

    result, expected: local paths of Thunderbird mbox folder files (``Mail/Local Folders/Bills``) or of
    single messages (.eml), or parallel lists of them. Messages compare as text, in any order, with
    the mbox ``From -`` separator lines left out (Thunderbird stamps them with the time it stored the
    message). ``remove_deleted`` (default on) skips messages whose X-Mozilla-Status has the expunged
    flag (a message moved away stays in its old folder marked so until the folder is compacted);
    ``remove_duplicate`` (on) compares sets; ``ignore_status`` / ``ignore_keys`` drop the
    X-Mozilla-Status(2) / X-Mozilla-Keys headers first (read/starred state, tags).

    OSWorld's version skips every non-empty message while splitting, so it compares nothing and
    scores 1 whenever the files exist; this one compares the messages, as its options describe.
    """
    results, golds = (result, expected) if isinstance(expected, list) else ([result], [expected])
    if not isinstance(results, list) or len(results) != len(golds):
        raise UserError(
            f"metric 'check_thunderbird_folder': result and expected must be paths or equally long lists, "
            f"got {result!r} and {expected!r}"
        )
    options = (bool(ignore_status), bool(ignore_keys), bool(remove_deleted), bool(remove_duplicate))
    for pred, gold in zip(results, golds, strict=True):
        mine = _mbox_messages(pred, *options) if pred else None
        theirs = _mbox_messages(gold, *options) if gold else None
        if mine is None or theirs is None or mine != theirs:
            return 0.0
    return 1.0
