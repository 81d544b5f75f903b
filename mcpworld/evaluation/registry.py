"""Name → function tables for getters and metrics, filled by decorators.

Task files name getters (``result.type``) and metrics (``func``) by string. These two dicts are
the only place such strings are resolved, so an unknown name fails in one place, listing the
names that do exist.

- Getter: ``(env, cfg: dict) -> value`` (``cfg`` is the whole config dict, ``type`` included).
- Metric: ``(result, expected=None, **options) -> float | bool | int`` in [0, 1] (plus ``env=`` when
  registered with ``needs_env``).

A name not registered here is looked up outside the package: ``package.module:function`` is imported,
and other installed packages add names through the entry-point groups ``mcpworld.getters`` and
``mcpworld.metrics`` (core/registry.py; docs/ARCHITECTURE.md "Extending from your own package").
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any, TypeVar, cast

from mcpworld.core.errors import UserError
from mcpworld.core.registry import group_entries, is_reference, load_entry, load_reference

Getter = Callable[..., Any]
Metric = Callable[..., Any]
F = TypeVar("F", bound=Callable[..., Any])

GETTERS: dict[str, Getter] = {}
METRICS: dict[str, Metric] = {}
# the entry-point group other packages add each kind through, and the task-file key that names one
GROUPS = {"getter": "mcpworld.getters", "metric": "mcpworld.metrics"}
KEYS = {"getter": "type", "metric": "func"}


def _register(table: dict[str, Callable[..., Any]], kind: str, name: str) -> Callable[[F], F]:
    def decorate(fn: F) -> F:
        old = table.get(name)
        # Re-registering the same function (a module reload) is fine; two different ones is a bug.
        if old is not None and (old.__module__, old.__qualname__) != (fn.__module__, fn.__qualname__):
            raise ValueError(f"{kind} {name!r} registered twice ({old.__module__} and {fn.__module__})")
        table[name] = fn
        return fn

    return decorate


def getter(name: str) -> Callable[[F], F]:
    """Register a getter under the ``type`` name task files use."""
    return _register(GETTERS, "getter", name)


def metric(name: str, *, needs_env: bool = False) -> Callable[[F], F]:
    """Register a metric under the ``func`` name task files use. ``needs_env``: the evaluator also
    passes the Environment as the keyword ``env`` (a metric that must run something in the desktop)."""
    register = _register(METRICS, "metric", name)

    def decorate(fn: F) -> F:
        fn.needs_env = needs_env  # type: ignore[attr-defined]
        return register(fn)

    return decorate


def metric_needs_env(fn: Metric) -> bool:
    """Whether the metric takes the Environment as the keyword ``env`` (see ``metric``)."""
    return bool(getattr(fn, "needs_env", False))


def _load_builtins() -> None:
    # Imported here, not at module level: those modules import this one to register themselves.
    import mcpworld.evaluation.getters
    import mcpworld.evaluation.metrics  # noqa: F401


def _lookup(table: dict[str, Callable[..., Any]], kind: str, name: str) -> Callable[..., Any]:
    _load_builtins()
    fn = table.get(name) if isinstance(name, str) else None
    if fn is None and isinstance(name, str):
        fn = _outside(table, kind, name)
    if fn is None:
        close = difflib.get_close_matches(str(name), list(table), n=5, cutoff=0.6)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise UserError(
            f"unknown {kind} {name!r}; {hint}`python -m mcpworld.evaluation --list` shows all {len(table)} {kind}s "
            "(or name your own as package.module:function)"
        )
    return fn


def _outside(table: dict[str, Callable[..., Any]], kind: str, name: str) -> Callable[..., Any] | None:
    """``name`` from outside the package (a ``module:function`` reference or another package's entry
    point), kept in ``table`` once imported; None when neither names it."""
    if is_reference(name):
        fn = cast(Callable[..., Any], load_reference(KEYS[kind], name))
    elif name in (entries := group_entries(GROUPS[kind])):
        fn = cast(Callable[..., Any], load_entry(KEYS[kind], GROUPS[kind], entries[name]))
    else:
        return None
    table.setdefault(name, fn)  # a function decorated with @metric(name) registered itself on import
    return table[name]


def _names(table: dict[str, Callable[..., Any]], kind: str) -> list[str]:
    _load_builtins()
    return sorted({*(n for n in table if not is_reference(n)), *group_entries(GROUPS[kind])})


def get_getter(name: str) -> Getter:
    """The getter registered as ``name``; UserError listing the known ones otherwise."""
    return _lookup(GETTERS, "getter", name)


def get_metric(name: str) -> Metric:
    """The metric registered as ``name``; UserError listing the known ones otherwise."""
    return _lookup(METRICS, "metric", name)


def getter_names() -> list[str]:
    """Every getter's name: the built-ins and other installed packages' (``mcpworld.getters``)."""
    return _names(GETTERS, "getter")


def metric_names() -> list[str]:
    """Every metric's name: the built-ins and other installed packages' (``mcpworld.metrics``)."""
    return _names(METRICS, "metric")


def describe() -> list[tuple[str, str, str]]:
    """(kind, name, first docstring line) of every getter and metric: what each expects."""
    _load_builtins()
    rows = []
    for kind, table in (("getter", GETTERS), ("metric", METRICS)):
        for name in group_entries(GROUPS[kind]):  # other installed packages' too
            _outside(table, kind, name)
        for name in sorted(n for n in table if not is_reference(n)):
            doc = (table[name].__doc__ or "").strip().splitlines()
            rows.append((kind, name, doc[0] if doc else ""))
    return rows
