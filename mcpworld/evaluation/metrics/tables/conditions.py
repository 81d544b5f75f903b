"""A small spreadsheet-formula evaluator for the conditions of conditional formats (``compare_table``'s
``style`` rule).

OSWorld compiles each conditional-format formula with the ``formulas`` engine and calls it with the
cell's raw value as the formula's one input. That engine is not a dependency here, so the
formulas such conditions use in practice are evaluated with spreadsheet semantics instead:
numbers, "text", TRUE/FALSE; ``+ - * / ^ &``, comparisons (text sorts after every number and
compares without case; TRUE/FALSE after text); AND, OR, NOT, IF, SUM, WEEKDAY, MOD, ABS, INT, ROUND,
DAY, MONTH, YEAR, LEN, LEFT, RIGHT, UPPER, LOWER, SEARCH, FIND, ISNUMBER, ISTEXT, ISERROR.
Errors (``#VALUE!``…) propagate and, like any non-empty result, make the condition true, as they do in
OSWorld. ``compile_condition`` returns None for a formula outside this subset (other functions,
more than one distinct cell reference, absolute references, ranges).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any


class _Error(str):
    """A spreadsheet error value such as ``#VALUE!`` (non-empty, so truthy)."""


_VALUE, _DIV0, _NUM = _Error("#VALUE!"), _Error("#DIV/0!"), _Error("#NUM!")


class Unsupported(Exception):
    """The formula is outside the evaluated subset."""


_TOKEN = re.compile(
    r"""\s*(?:
    (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>"(?:[^"]|"")*")
  | (?P<ref>\$?[A-Za-z]{1,3}\$?\d+(?![\w(]))
  | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<op><>|<=|>=|[-+*/^&=<>(),;%:!])
)""",
    re.VERBOSE,
)


def _tokens(text: str) -> list[tuple[str, str]]:
    out, i = [], 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        match = _TOKEN.match(text, i)
        if match is None:
            raise Unsupported(text[i:])
        kind = match.lastgroup
        assert kind is not None  # every alternative of _TOKEN is a named group
        out.append((kind, match[kind]))
        i = match.end()
    return out


def _to_number(value: Any) -> Any:
    if isinstance(value, _Error):
        return value
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return _VALUE


def _to_text(value: Any) -> Any:
    if isinstance(value, _Error):
        return value
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def _rank(value: Any) -> tuple[int, Any]:
    if isinstance(value, bool):
        return 2, value
    if isinstance(value, str):
        return 1, value.lower()
    return 0, float(value)


_COMPARE = {
    "=": lambda a, b: a == b,
    "<>": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
}


def _compare(op: str, a: Any, b: Any) -> Any:
    for v in (a, b):
        if isinstance(v, _Error):
            return v
    return _COMPARE[op](_rank(a), _rank(b))


def _arith(op: str, a: Any, b: Any) -> Any:
    if op == "&":
        a, b = _to_text(a), _to_text(b)
        return a if isinstance(a, _Error) else b if isinstance(b, _Error) else a + b
    a, b = _to_number(a), _to_number(b)
    for v in (a, b):
        if isinstance(v, _Error):
            return v
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return _DIV0 if b == 0 else a / b
    try:
        return float(a**b)
    except (OverflowError, ZeroDivisionError, TypeError):
        return _NUM


def _serial_date(value: Any) -> Any:
    number = _to_number(value)
    if isinstance(number, _Error):
        return number
    if number < 0:
        return _NUM
    days = int(number)
    if days < 60:  # the 1900 date system counts a 29 February 1900 that did not exist
        return datetime(1899, 12, 31) + timedelta(days=days)
    return datetime(1899, 12, 30) + timedelta(days=days)


def _weekday(value: Any, kind: Any = 1.0) -> Any:
    number, kind = _to_number(value), _to_number(kind)
    for v in (number, kind):
        if isinstance(v, _Error):
            return v
    if number < 0:
        return _NUM
    days = int(number)
    if kind == 1:
        return float((days - 1) % 7 + 1)
    if kind == 2:
        return float((days - 2) % 7 + 1)
    if kind == 3:
        return float((days - 2) % 7)
    return _NUM


def _search(find: Any, within: Any, start: Any = 1.0, case: bool = False) -> Any:
    find, within, start = _to_text(find), _to_text(within), _to_number(start)
    for v in (find, within, start):
        if isinstance(v, _Error):
            return v
    if not case:
        find, within = find.lower(), within.lower()
    position = within.find(find, int(start) - 1) if start >= 1 else -1
    return _VALUE if position < 0 else float(position + 1)


def _round(value: Any, digits: Any = 0.0) -> Any:
    value, digits = _to_number(value), _to_number(digits)
    for v in (value, digits):
        if isinstance(v, _Error):
            return v
    scale = 10 ** int(digits)
    return math.copysign(math.floor(abs(value) * scale + 0.5) / scale, value)


def _logical(values: list[Any], combine: Callable[[list[bool]], bool]) -> Any:
    flags = []
    for v in values:
        if isinstance(v, _Error):
            return v
        if isinstance(v, str):
            continue
        flags.append(bool(v))
    return combine(flags) if flags else _VALUE


def _first_error(*values: Any) -> Any:
    return next((v for v in values if isinstance(v, _Error)), None)


def _not(value: Any) -> Any:
    if isinstance(value, _Error):
        return value
    return _VALUE if isinstance(value, str) else not value


def _if(condition: Any, then: Any = True, otherwise: Any = False) -> Any:
    if isinstance(condition, _Error):
        return condition
    if isinstance(condition, str):
        return _VALUE
    return then if condition else otherwise


def _sum(*values: Any) -> Any:
    """SUM as OSWorld's engine computes it for the input value: text is converted (#VALUE! if not a number)."""
    numbers = [_to_number(v) for v in values]
    error = _first_error(*numbers)
    return error if error is not None else float(sum(numbers))


def _mod(a: Any, b: Any) -> Any:
    a, b = _to_number(a), _to_number(b)
    error = _first_error(a, b)
    if error is not None:
        return error
    return _DIV0 if b == 0 else a - b * math.floor(a / b)


def _text_fn(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(text: Any, *rest: Any) -> Any:
        text = _to_text(text)
        numbers = [_to_number(r) for r in rest]
        error = _first_error(text, *numbers)
        return error if error is not None else fn(text, *numbers)

    return call


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "AND": lambda *a: _logical(list(a), all),
    "OR": lambda *a: _logical(list(a), any),
    "NOT": _not,
    "IF": _if,
    "SUM": _sum,
    "WEEKDAY": _weekday,
    "MOD": _mod,
    "ABS": lambda a: _first_error(_to_number(a)) or abs(_to_number(a)),
    "INT": lambda a: _first_error(_to_number(a)) or float(math.floor(_to_number(a))),
    "ROUND": _round,
    "DAY": lambda a: _first_error(_serial_date(a)) or float(_serial_date(a).day),
    "MONTH": lambda a: _first_error(_serial_date(a)) or float(_serial_date(a).month),
    "YEAR": lambda a: _first_error(_serial_date(a)) or float(_serial_date(a).year),
    "LEN": _text_fn(lambda t: float(len(t))),
    "LEFT": _text_fn(lambda t, n=1.0: t[: max(int(n), 0)]),
    "RIGHT": _text_fn(lambda t, n=1.0: t[len(t) - int(n) :] if int(n) > 0 else ""),
    "UPPER": _text_fn(str.upper),
    "LOWER": _text_fn(str.lower),
    "SEARCH": lambda f, w, s=1.0: _search(f, w, s),
    "FIND": lambda f, w, s=1.0: _search(f, w, s, case=True),
    # OSWorld's engine also counts numeric text ("5") as a number.
    "ISNUMBER": lambda a: (
        (isinstance(a, float) and not isinstance(a, bool))
        or (isinstance(a, str) and not isinstance(a, _Error) and not isinstance(_to_number(a), _Error))
    ),
    "ISTEXT": lambda a: isinstance(a, str) and not isinstance(a, _Error),
    "ISERROR": lambda a: isinstance(a, _Error),
}


class _Parser:
    """Recursive descent over the tokens; ``ref`` is the one cell reference allowed (the input)."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens, self.i = tokens, 0
        self.ref: str | None = None

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, text: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None or (text is not None and token[1] != text):
            raise Unsupported(f"expected {text!r}")
        self.i += 1
        return token

    def parse(self) -> Callable[[Any], Any]:
        node = self.comparison()
        if self.peek() is not None:
            raise Unsupported("trailing tokens")
        return node

    def comparison(self) -> Callable[[Any], Any]:
        left = self.concat()
        while (t := self.peek()) and t[1] in _COMPARE:
            self.take()
            right = self.concat()
            left = (lambda op, a, b: lambda v: _compare(op, a(v), b(v)))(t[1], left, right)
        return left

    def binary(self, ops: str, nxt: Callable[[], Callable[[Any], Any]]) -> Callable[[Any], Any]:
        left = nxt()
        while (t := self.peek()) and t[0] == "op" and t[1] in ops:
            self.take()
            right = nxt()
            left = (lambda op, a, b: lambda v: _arith(op, a(v), b(v)))(t[1], left, right)
        return left

    def concat(self) -> Callable[[Any], Any]:
        return self.binary("&", self.additive)

    def additive(self) -> Callable[[Any], Any]:
        return self.binary("+-", self.term)

    def term(self) -> Callable[[Any], Any]:
        return self.binary("*/", self.power)

    def power(self) -> Callable[[Any], Any]:
        return self.binary("^", self.unary)

    def unary(self) -> Callable[[Any], Any]:
        t = self.peek()
        if t and t[1] in ("-", "+"):
            self.take()
            inner = self.unary()
            if t[1] == "+":
                return inner
            return lambda v: _arith("-", 0.0, inner(v))
        node = self.atom()
        while (t := self.peek()) and t[1] == "%":
            self.take()
            node = (lambda a: lambda v: _arith("/", a(v), 100.0))(node)
        return node

    def atom(self) -> Callable[[Any], Any]:
        kind, text = self.take()
        if kind == "number":
            number = float(text)
            return lambda v: number
        if kind == "string":
            value = text[1:-1].replace('""', '"')
            return lambda v: value
        if kind == "ref":
            if "$" in text or (self.ref is not None and self.ref != text.upper()):
                raise Unsupported("absolute or second reference")
            self.ref = text.upper()
            return lambda v: v
        if kind == "name":
            name = text.upper()
            following = self.peek()
            if name in ("TRUE", "FALSE") and (following is None or following[1] != "("):
                return lambda v: name == "TRUE"
            fn = _FUNCTIONS.get(name)
            if fn is None:
                raise Unsupported(f"function {name}")
            self.take("(")
            args: list[Callable[[Any], Any]] = []
            if (token := self.peek()) and token[1] != ")":
                args.append(self.comparison())
                while (token := self.peek()) and token[1] == ",":
                    self.take()
                    args.append(self.comparison())
            self.take(")")
            return lambda v: fn(*(a(v) for a in args))
        if text == "(":
            inner = self.comparison()
            self.take(")")
            return inner
        raise Unsupported(f"token {text!r}")


def compile_condition(formula: str) -> Callable[[Any], bool] | None:
    """The condition ``value -> bool`` of a formula with at most one relative cell reference (the
    value), or None when the formula is outside the evaluated subset."""
    try:
        parser = _Parser(_tokens(formula))
        node = parser.parse()
    except (Unsupported, IndexError):
        return None

    def condition(value: Any) -> bool:
        try:
            return bool(node(value))
        except TypeError:  # a function called with the wrong number of arguments: OSWorld's call fails
            return False

    return condition


def constant(formula: str) -> tuple[bool, Any]:
    """(True, value) for a formula without references (a cellIs operand), else (False, None)."""
    try:
        parser = _Parser(_tokens(formula))
        node = parser.parse()
    except (Unsupported, IndexError):
        return False, None
    if parser.ref is not None:
        return False, None
    try:
        return True, node(None)
    except TypeError:
        return False, None
