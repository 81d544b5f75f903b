"""The value-matcher language used by check_json (and later table/prefs metrics).

A rule is ``{"method": M, "ref": R}``; ``match_value(value, rule)`` says whether ``value`` fits.

=====================  ===================================================================
method                 meaning
=====================  ===================================================================
``eq ne lt le gt ge``  ``value <op> ref``; incomparable types do not match
``re``                 ``re.search(ref, value)``; value must be a string. As in OSWorld, any
                       method starting with ``re`` is a regex match (``regex`` too).
``re.FLAGS``           same with flags after the dots: Python's flag names (``re.IGNORECASE``,
                       ``re.DOTALL.MULTILINE``, ``re.I.S``) or runs of the letters I S M X A U (``re.IS``)
``approx:<tol>``       ``abs(float(value) - float(ref)) <= tol``
``range.<l><r>``       ``ref = [low, high]``; ``l`` is ``[`` (low <= value) or ``(`` (low < value),
                       ``r`` is ``]`` (value <= high) or ``)`` (value < high): ``range.[)``.
                       OSWorld's spelling ``range.<e|t><e|t>`` (e: or-equal, t: strict) is accepted too.
``str_list_eq``        comma-separated string (or list) equals ``ref`` item by item. As in OSWorld the
                       string's outer quotes are dropped (a list validation's formula1 is
                       ``"a,b"``) and items keep their spaces (``a, b`` has the item `` b``)
``str_set_eq``         same, ignoring order and duplicates
=====================  ===================================================================

An unknown method or a malformed ``ref`` is the task author's mistake: UserError.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any

from mcpworld.core.errors import UserError

COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}
RE_FLAGS = {"I": re.I, "S": re.S, "M": re.M, "X": re.X, "A": re.A, "U": re.U}
# Flag names OSWorld resolves with getattr(re, name); LOCALE/TEMPLATE/DEBUG do not apply to str patterns.
RE_FLAG_NAMES = {
    "NOFLAG": 0,
    "ASCII": re.A,
    "IGNORECASE": re.I,
    "UNICODE": re.U,
    "MULTILINE": re.M,
    "DOTALL": re.S,
    "VERBOSE": re.X,
    **RE_FLAGS,
}
# True = that end is closed (the bound itself is inside the range).
RANGE_LEFT = {"[": True, "(": False, "e": True, "t": False}
RANGE_RIGHT = {"]": True, ")": False, "e": True, "t": False}

KNOWN_METHODS = "eq, ne, lt, le, gt, ge, re, re.<FLAGS>, approx:<tol>, range.<[(><])>, str_list_eq, str_set_eq"


def match_value(value: Any, rule: dict[str, Any]) -> bool:
    """Whether ``value`` satisfies ``rule`` (see the module docstring for the methods)."""
    method = rule.get("method") if isinstance(rule, dict) else None
    if not isinstance(method, str):
        raise UserError(f"a match rule needs a string 'method', got {rule!r}")
    ref = rule.get("ref")
    if method in COMPARISONS:
        try:
            return bool(COMPARISONS[method](value, ref))
        except TypeError:
            return False
    if method.startswith("re"):
        return _match_regex(value, ref, method)
    if method.startswith("approx:"):
        return _match_approx(value, ref, method)
    if method.startswith("range."):
        return _match_range(value, ref, method)
    if method in ("str_list_eq", "str_set_eq"):
        got, want = _str_items(value), _str_items(ref)
        if got is None or want is None:
            return False
        return got == want if method == "str_list_eq" else set(got) == set(want)
    raise UserError(f"unknown match method {method!r}; known methods: {KNOWN_METHODS}")


def _match_regex(value: Any, ref: Any, method: str) -> bool:
    flags = 0
    for part in method.split(".")[1:]:
        if not part:
            raise UserError(f"match method {method!r}: empty flag list")
        if part in RE_FLAG_NAMES:
            flags |= RE_FLAG_NAMES[part]
            continue
        for letter in part:
            if letter not in RE_FLAGS:
                raise UserError(
                    f"match method {method!r}: unknown regex flag {letter!r} "
                    f"(a flag name such as IGNORECASE, or letters from {' '.join(RE_FLAGS)})"
                )
            flags |= RE_FLAGS[letter]
    if not isinstance(ref, str):
        raise UserError(f"match method {method!r} needs a string 'ref' (a regular expression), got {ref!r}")
    try:
        pattern = re.compile(ref, flags)
    except re.error as exc:
        raise UserError(f"match method {method!r}: bad regular expression {ref!r}: {exc}") from None
    return isinstance(value, str) and pattern.search(value) is not None


def _match_approx(value: Any, ref: Any, method: str) -> bool:
    try:
        tolerance = float(method[len("approx:") :])
    except ValueError:
        raise UserError(f"match method {method!r}: the tolerance after 'approx:' must be a number") from None
    try:
        return abs(float(value) - float(ref)) <= tolerance
    except (TypeError, ValueError):
        return False


def _match_range(value: Any, ref: Any, method: str) -> bool:
    ends = method[len("range.") :]
    if len(ends) != 2 or ends[0] not in RANGE_LEFT or ends[1] not in RANGE_RIGHT:
        raise UserError(f"match method {method!r}: write range.[] range.[) range.(] or range.() (got {ends!r})")
    if not isinstance(ref, (list, tuple)) or len(ref) != 2:
        raise UserError(f"match method {method!r} needs 'ref' = [low, high], got {ref!r}")
    low, high = ref
    try:
        above = low <= value if RANGE_LEFT[ends[0]] else low < value
        below = value <= high if RANGE_RIGHT[ends[1]] else value < high
    except TypeError:
        return False
    return bool(above and below)


def _str_items(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return value.strip("\"'").split(",")
    if isinstance(value, (list, tuple)):
        return [str(item) for item in value]
    return None


class RuleError(Exception):
    """A rule that OSWorld's matcher could not apply to a value (it raised); its callers score that 0."""


_OSWORLD_RANGE_ENDS = {"e": operator.le, "t": operator.lt}


def osworld_match_value(value: Any, rule: Any) -> bool:
    """``value`` against ``{method, ref}`` exactly as OSWorld's ``_match_value_to_rule`` decides it.

    Unlike ``match_value`` nothing is coerced or forgiven: a regex needs a string value, ``approx``
    a numeric ``ref``, ``range.`` only knows ``e``/``t`` ends, ``str_list_eq``/``str_set_eq`` split a
    string value and take ``ref`` as it is (a string ref is a sequence of characters). Where
    OSWorld's matcher raises, this raises RuleError; OSWorld's metrics then score 0, and the
    metrics that use this function do the same.
    """
    try:
        method = rule["method"]
        ref = rule.get("ref")
        if method.startswith("re"):
            flags = re.RegexFlag(0)
            for name in method.split(".")[1:]:
                flag = getattr(re, name)
                if not isinstance(flag, re.RegexFlag):
                    raise TypeError(f"re.{name} is not a regex flag")
                flags |= flag
            return re.search(ref, value, flags) is not None
        if method in COMPARISONS:
            return bool(COMPARISONS[method](value, ref))
        if method.startswith("approx"):
            tolerance = float(method.split(":")[1])
            try:
                number = float(value)
            except (TypeError, ValueError):
                return False
            return bool(abs(number - ref) <= tolerance)
        if method.startswith("range."):
            left, right = _OSWORLD_RANGE_ENDS[method[6]], _OSWORLD_RANGE_ENDS[method[7]]
            return bool(left(ref[0], value) and right(value, ref[1]))
        if method in ("str_list_eq", "str_set_eq"):
            kind = list if method == "str_list_eq" else set
            return kind(value.strip("\"'").split(",")) == kind(ref)
    except Exception as exc:
        raise RuleError(f"cannot match {value!r} against {rule!r}: {exc}") from exc
    raise RuleError(f"unknown match method {method!r}")
