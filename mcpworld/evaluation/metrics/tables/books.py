"""The workbooks ``compare_table`` compares, and how its rules name sheets: the result and expected
xlsx in openpyxl's formula view (the value view loaded on first use), the sheet selectors
(``0``, ``RI0``, ``ENSheet1``…) resolved both the strict way and OSWorld's way, and the errors the
rules raise (``_bad``: the task author's mistake; ``_Crash``: OSWorld's code would raise, so 0).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openpyxl
from openpyxl.workbook.workbook import Workbook
from openpyxl.worksheet.worksheet import Worksheet

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.tables.raw import RawBook

NAME = "compare_table"


def _bad(message: str) -> UserError:
    return UserError(f"metric {NAME!r}: {message}")


_UNBOUND = object()


class _Crash(Exception):
    """OSWorld's compare_table raises on this input: the score is 0."""


class _Unreadable(Exception):
    """The result workbook could not be read (in a second view): the metric scores 0."""


# ---------------------------------------------------------------------------------------------
# Workbooks and sheet selectors


def _load(path: str | None, data_only: bool) -> Workbook | None:
    if not path or not Path(path).is_file():
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # openpyxl warns about every extension it drops
            return openpyxl.load_workbook(path, data_only=data_only)
    except Exception:
        return None


class _Book:
    """One workbook: the formula view, and the value view loaded on first use."""

    def __init__(self, path: str, formulas: Workbook, *, expected: bool = False) -> None:
        self.path = path
        self.formulas = formulas
        self.expected = expected
        self._values: Workbook | None = None

    @property
    def values(self) -> Workbook:
        if self._values is None:
            self._values = _load(self.path, data_only=True)
            if self._values is None and self.expected:
                raise _bad(f"the expected workbook {self.path!r} cannot be read with data_only=True")
            if self._values is None:
                raise _Unreadable(self.path)
        return self._values


@dataclass(frozen=True)
class _Sheet:
    """A resolved sheet: its book and its name (the views are read through the book)."""

    book: _Book
    name: str

    @property
    def ws(self) -> Worksheet:
        return self.book.formulas[self.name]

    @property
    def vs(self) -> Worksheet:
        return self.book.values[self.name]


_SELECTOR = re.compile(r"(?P<book>[RE])(?:I(?P<index>\d+)|N(?P<name>.+))", re.DOTALL)


def _parse_selector(value: Any, where: str) -> tuple[str, int | str]:
    """``0`` (result, by index), ``"RI0"``/``"EI0"`` (by index), ``"RNSheet1"``/``"ENSheet1"`` (by name)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return "R", value
    match = _SELECTOR.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise _bad(f"{where}: a sheet selector is an index or RI<n>/EI<n>/RN<name>/EN<name>, got {value!r}")
    if match["index"] is not None:
        return match["book"], int(match["index"])
    return match["book"], match["name"]


class _Workbooks:
    """The result book (already loaded) and the expected book (loaded when a rule needs it)."""

    def __init__(self, result: _Book, expected_path: str | None) -> None:
        self.result = result
        self.expected_path = expected_path
        self._expected: _Book | None = None
        self._raw: dict[str, RawBook] = {}
        self.previous_metric: Any = _UNBOUND  # OSWorld's `metric` variable left by the rule before

    @property
    def expected(self) -> _Book:
        if self._expected is None:
            if self.expected_path is None:
                raise _bad("a rule refers to the expected workbook (EI…/EN…, or a comparison) but there is none")
            formulas = _load(self.expected_path, data_only=False)
            if formulas is None:
                raise _bad(f"the expected workbook {self.expected_path!r} is missing or not a readable xlsx")
            self._expected = _Book(self.expected_path, formulas, expected=True)
        return self._expected

    # OSWorld's view of selectors, used by every rule type except sheet_data.

    def locate(self, selector: Any) -> tuple[str, str]:
        """("R" or "E", sheet name) as OSWorld resolves a selector: an index past the end (or an
        ``EI`` index without an expected workbook) gives the name "", which no sheet has; a
        negative index counts from the end; ``RN``/``EN`` names are not checked here."""
        if isinstance(selector, int):
            names = self.result.formulas.sheetnames
            try:
                return "R", names[selector] if names and selector < len(names) else ""
            except IndexError:
                return "R", ""
        if not isinstance(selector, str):
            raise _Crash(f"sheet selector {selector!r}")
        which, how = selector[:1], selector[1:2]
        if selector[:2] not in ("RI", "RN", "EI", "EN"):
            raise _Crash(f"unrecognised sheet selector {selector!r}")
        if how == "N":
            return which, selector[2:]
        try:
            names = self.result.formulas.sheetnames if which == "R" else self.expected.formulas.sheetnames
            return which, names[int(selector[2:])]
        except (ValueError, IndexError):
            return which, ""

    def formulas(self, which: str) -> Workbook:
        return (self.result if which == "R" else self.expected).formulas

    def path(self, which: str) -> str:
        return self.result.path if which == "R" else self.expected.path

    def raw(self, which: str) -> RawBook:
        if which not in self._raw:
            self._raw[which] = RawBook(self.path(which))
        return self._raw[which]

    def sheet(self, selector: Any, *, worksheet: bool = True) -> _Sheet | None:
        """The selected sheet; None when the result lacks it (the rule fails).

        A sheet missing from the expected workbook is the task author's mistake: UserError. With
        ``worksheet`` a chartsheet counts as missing (it has no cells).
        """
        which, key = _parse_selector(selector, "sheet")
        book = self.result if which == "R" else self.expected
        names = book.formulas.sheetnames
        name = (names[key] if 0 <= key < len(names) else None) if isinstance(key, int) else (key if key in names else None)
        if name is None:
            if which == "E":
                raise _bad(f"the expected workbook has no sheet {selector!r} (sheets: {names})")
            return None
        if worksheet and not isinstance(book.formulas[name], Worksheet):
            return None
        return _Sheet(book, name)

    def pair(self, rule: dict[str, Any], *, worksheet: bool = True) -> tuple[_Sheet, _Sheet] | None:
        first = self.sheet(rule["sheet_idx0"], worksheet=worksheet)
        second = self.sheet(rule["sheet_idx1"], worksheet=worksheet)
        return None if first is None or second is None else (first, second)


# ---------------------------------------------------------------------------------------------
# The rule types but sheet_data, scored as OSWorld's compare_table scores them. OSWorld reads the
# workbook through openpyxl (formula view) for styles, charts, pivots, filters, dimensions,
# validation, freeze and zoom; through the raw XML (raw.RawBook) for the cell values of
# check_cell, sheet_fuzzy and conditional formats; and through the exported CSV for sheet_print.
# Where OSWorld's code raises for a given input the metric scores 0 (_Crash).


def _osw_sheet(books: _Workbooks, rule: dict[str, Any], key: str) -> Any:
    """The openpyxl sheet (a worksheet or chartsheet) the selector names; None when absent."""
    which, name = books.locate(rule[key])
    try:
        return books.formulas(which)[name]
    except KeyError:
        return None
