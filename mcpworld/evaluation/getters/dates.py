"""``rule_relativeTime``: a task's expected dates written as relative phrases (``next Monday``,
``first monday four months later``), filled in by the environment's clock when it is graded.
"""

from __future__ import annotations

import copy
import logging
import re
import time
from calendar import monthrange
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mcpworld.core.errors import UserError
from mcpworld.evaluation.getters.base import require
from mcpworld.evaluation.registry import getter

if TYPE_CHECKING:
    from mcpworld.env.base import Environment

log = logging.getLogger(__name__)


WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
DOW_SHORT = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
MONTHS_FULL = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
    )
} | {
    "a": 1,
    "an": 1,
}
ORDINAL_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "last": -1}

SUPPORTED_PHRASES = (
    "today, tomorrow, yesterday, day after tomorrow; in N days/weeks/months, N days/weeks/months later|from now|ago; "
    "this|next|last <weekday>; this|next month, next week, next year; <Nth> [of] this|next month; "
    "<first..fifth|last> <weekday> [of] this|next month | N months later"
)


def _number(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    return NUMBER_WORDS.get(word)


def _add_months(day: date, months: int, day_of_month: int | None = None) -> date:
    """``day`` moved by ``months``; the day of month (or ``day_of_month``) is clamped to the month's end."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    month += 1
    wanted = day.day if day_of_month is None else day_of_month
    return date(year, month, min(wanted, monthrange(year, month)[1]))


def _nth_weekday(year: int, month: int, weekday: int, nth: int) -> date:
    """The ``nth`` (1-based; -1 = last) ``weekday`` of a month."""
    if nth == -1:
        last = date(year, month, monthrange(year, month)[1])
        return last - timedelta(days=(last.weekday() - weekday) % 7)
    first = date(year, month, 1)
    day = first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (nth - 1))
    if day.month != month:
        raise UserError(f"getter 'rule_relativeTime': there is no {nth}th {WEEKDAYS[weekday]} in {year}-{month:02d}")
    return day


_UNIT_DAYS = {"day": 1, "days": 1, "week": 7, "weeks": 7}
_MONTH_OFFSET = {"this": 0, "next": 1, "last": -1}


def _month_offset(words: list[str]) -> int | None:
    """Months from now for a trailing ``[of|in] this|next|last month`` / ``N months later``; None if neither."""
    words = [w for w in words if w not in ("of", "in", "the")]
    if len(words) == 2 and words[1] == "month" and words[0] in _MONTH_OFFSET:
        return _MONTH_OFFSET[words[0]]
    if len(words) == 3 and words[1] in ("month", "months") and words[2] in ("later", "after"):
        return _number(words[0])
    return None


def relative_date(phrase: str, today: date) -> date:
    """The date a relative phrase such as ``next Monday`` or ``first monday four months later`` means.

    Researcher's conventions where the anchor is silent: ``next <weekday>`` is the first such day
    strictly after today, ``this <weekday>`` the first on or after today, ``last <weekday>`` the
    latest strictly before today; a day of month past the month's end is clamped to its last day.
    """
    text = re.sub(r"\s+", " ", str(phrase).strip().lower())
    words = text.split(" ")
    simple = {
        "today": 0,
        "now": 0,
        "tomorrow": 1,
        "yesterday": -1,
        "day after tomorrow": 2,
        "the day after tomorrow": 2,
        "day before yesterday": -2,
        "next week": 7,
    }
    if text in simple:
        return today + timedelta(days=simple[text])
    if text in ("this month", "next month", "last month", "next year", "last year"):
        shift = {"this month": 0, "next month": 1, "last month": -1, "next year": 12, "last year": -12}[text]
        return _add_months(today, shift)
    # this|next|last <weekday>
    if len(words) == 2 and words[0] in ("this", "next", "last", "coming") and words[1] in WEEKDAYS:
        target = WEEKDAYS.index(words[1])
        ahead = (target - today.weekday()) % 7
        if words[0] == "last":
            return today - timedelta(days=(today.weekday() - target) % 7 or 7)
        if words[0] in ("next", "coming"):
            ahead = ahead or 7
        return today + timedelta(days=ahead)
    # in N days|weeks|months / N days|weeks|months later|from now|ago
    count_match = re.fullmatch(r"(?:in )?(\w+) (day|days|week|weeks|month|months)(?: (later|after|from now|ago))?", text)
    if count_match and (text.startswith("in ") or count_match.group(3)):
        n = _number(count_match.group(1))
        if n is not None:
            sign = -1 if count_match.group(3) == "ago" else 1
            unit = count_match.group(2)
            if unit.startswith("month"):
                return _add_months(today, sign * n)
            return today + timedelta(days=sign * n * _UNIT_DAYS[unit])
    # <Nth> [of] this|next month  (5th next month, 10th of next month)
    nth_day = re.fullmatch(r"(\d{1,2})(?:st|nd|rd|th)? (.+)", text)
    if nth_day:
        months = _month_offset(nth_day.group(2).split(" "))
        if months is not None and 1 <= int(nth_day.group(1)) <= 31:
            return _add_months(today, months, int(nth_day.group(1)))
    # <first..last> <weekday> [of] this|next month / N months later
    if len(words) >= 3 and words[0] in ORDINAL_WORDS and words[1] in WEEKDAYS:
        months = _month_offset(words[2:])
        if months is not None:
            month_day = _add_months(today.replace(day=1), months)
            return _nth_weekday(month_day.year, month_day.month, WEEKDAYS.index(words[1]), ORDINAL_WORDS[words[0]])
    raise UserError(f"getter 'rule_relativeTime': cannot understand the relative time {phrase!r}; supported: {SUPPORTED_PHRASES}")


def format_date(template: str, day: date) -> str:
    """Fill ``{DoW} {DoWFull} {Month} {MonthFull} {month} {Month0D} {MonthD} {DayD} {Day0D} {Year}``.

    Every occurrence is replaced (the anchor replaced only the first); other braces stay as they are.
    """
    values = {
        "DoW": DOW_SHORT[day.weekday()],
        "DoWFull": WEEKDAYS[day.weekday()].capitalize(),
        "Month": MONTHS_FULL[day.month - 1][:3],
        "MonthFull": MONTHS_FULL[day.month - 1],
        "month": MONTHS_FULL[day.month - 1],
        "Month0D": f"{day.month:02d}",
        "MonthD": str(day.month),
        "DayD": str(day.day),
        "Day0D": f"{day.day:02d}",
        "Year": str(day.year),
    }
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)


def _format_templates(value: Any, day: date) -> Any:
    if isinstance(value, str):
        return format_date(value, day)
    if isinstance(value, list):
        return [_format_templates(v, day) for v in value]
    if isinstance(value, dict):
        return {k: _format_templates(v, day) for k, v in value.items()}
    return value


def _offset_tz(text: str) -> tzinfo | None:
    match = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", text.strip())
    if not match:
        return None
    delta = timedelta(hours=int(match.group(2)), minutes=int(match.group(3)))
    return timezone(-delta if match.group(1) == "-" else delta)


def environment_now(env: Environment, tz_name: str | None) -> datetime:
    """Now, by the environment's clock, in ``tz_name``, else the environment's zone, else UTC."""
    zone: tzinfo | None = None
    if tz_name:
        try:
            zone = ZoneInfo(tz_name)
        except (ZoneInfoNotFoundError, ValueError):
            raise UserError(f"getter 'rule_relativeTime': unknown timezone {tz_name!r} (use an IANA name)") from None
    instant = time.time()
    env_zone: tzinfo | None = None
    try:
        result = env.shell("date +%s' '%z", timeout=10.0)
        seconds, _, offset = result.stdout.strip().partition(" ")
        if result.returncode == 0 and seconds.isdigit():
            instant = float(seconds)
            env_zone = _offset_tz(offset)
    except Exception as exc:  # the host clock is the fallback; never fail the task over it
        log.info("rule_relativeTime: cannot read the environment's clock: %s", exc)
    return datetime.fromtimestamp(instant, zone or env_zone or UTC)


@getter("rule_relativeTime")
def rule_relative_time(env: Environment, cfg: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``rules`` whose ``expected`` date templates are filled from relative phrases.

    ``rules.relativeTime`` is ``{"from": phrase}`` (fills ``expected.time``, or ``expected.from``)
    or ``{"from": phrase, "to": phrase}`` (fills ``expected.from`` / ``expected.to``); each
    template is a string, or a list/dict of them. ``rules.timezone`` (IANA) picks the zone, else the
    environment's own, else UTC. The caller's config is not modified (the anchor mutated it).
    """
    rules = require(cfg, "rules")
    if not isinstance(rules, dict):
        raise UserError(f"getter 'rule_relativeTime': 'rules' must be a mapping, got {rules!r}")
    relative = rules.get("relativeTime")
    if isinstance(relative, str):
        relative = {"from": relative}
    expected = rules.get("expected")
    if not isinstance(relative, dict) or not relative or not isinstance(expected, dict):
        raise UserError("getter 'rule_relativeTime' needs rules.relativeTime {from[, to]} and rules.expected {…}")
    today = environment_now(env, rules.get("timezone")).date()
    out = copy.deepcopy(rules)
    for key, phrase in relative.items():
        target = key
        if key not in expected and key == "from" and "to" not in relative and "time" in expected:
            target = "time"
        if target not in expected:
            raise UserError(f"getter 'rule_relativeTime': relativeTime.{key} has no template in rules.expected")
        out["expected"][target] = _format_templates(expected[target], relative_date(phrase, today))
    return out
