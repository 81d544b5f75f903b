"""``compare_conference_city_in_order``: one column of place names in a workbook (OSWorld's
conference-city task), matched as whole words without case, accents or punctuation.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.tables.books import _load
from mcpworld.evaluation.registry import metric


def _place_words(value: Any) -> str:
    """A place name folded for matching: accents dropped, lower case, punctuation as single spaces."""
    text = unicodedata.normalize("NFKD", "" if value is None else str(value))
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


@metric("compare_conference_city_in_order")
def compare_conference_city_in_order(result_path: str | None, rules: Any) -> float:
    """1 when column C of the workbook's active sheet, from row 2 on, names the expected cities in order.

    rules: ``{expected: [city | [alternatives…], …]}``, one entry per row (OSWorld's task: 21,
    C2:C22). A cell matches when one alternative appears in it as whole words, ignoring case,
    accents and punctuation ("Montréal, Canada" matches "Montreal"). OSWorld matched substrings,
    so "LA" was found in "Atlanta" and "Lake Tahoe"; and it always read C2:C22 whatever the
    length of the list.
    """
    name = "compare_conference_city_in_order"
    if not isinstance(rules, dict) or not isinstance(rules.get("expected"), list) or not rules["expected"]:
        raise UserError(f"metric {name!r} needs rules {{expected: [city or [alternatives], ...]}}, got {rules!r}")
    wanted: list[list[str]] = []
    for i, entry in enumerate(rules["expected"]):
        alternatives = [entry] if isinstance(entry, str) else entry
        if not isinstance(alternatives, list) or not all(isinstance(a, str) and _place_words(a) for a in alternatives):
            raise UserError(f"metric {name!r}: expected[{i}] must be a city name or a list of them, got {entry!r}")
        wanted.append([_place_words(a) for a in alternatives])
    book = _load(result_path, data_only=True)
    if book is None:
        return 0.0
    sheet = book.active
    if sheet is None or not hasattr(sheet, "cell"):  # no sheet, or a chart sheet
        return 0.0
    for row, alternatives in enumerate(wanted, start=2):
        cell = f" {_place_words(sheet.cell(row=row, column=3).value)} "
        if not any(f" {alternative} " in cell for alternative in alternatives):
            return 0.0
    return 1.0
