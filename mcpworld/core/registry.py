"""Named implementations chosen by a config value (a provider kind, an env backend, a profile).

A registry is filled three ways: by a decorator where each built-in is defined; by another installed
package, through the registry's entry-point group (its ``pyproject.toml`` declares
``[project.entry-points."mcpworld.providers"] mine = "my_pkg.provider:build"``); and by the config
value itself when it is a ``package.module:Name`` reference, imported when first asked for. Research
code thus lives in its own repository and is used by name. A lookup that fails is one error naming
the config key, the value, and every known name or what went wrong in the import.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar, cast

from mcpworld.core.errors import UserError

T = TypeVar("T")

# package.module:Name (the Name may be dotted: module:Class.builder), as lm-eval and Hydra's _target_ spell it
REFERENCE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
HOW_TO_EXTEND = "or name your own as package.module:Name, or install a package with an entry point in"


def is_reference(value: object) -> bool:
    """Whether a config value is a ``package.module:Name`` reference rather than a registered name."""
    return isinstance(value, str) and REFERENCE.match(value) is not None


def load_reference(key: str, value: str) -> object:
    """Import ``package.module:Name`` and return the object; one UserError naming the key, the value
    and the failure (the module cannot be imported, or it has no such name)."""
    module_name, _, attribute = value.partition(":")
    try:
        found: object = importlib.import_module(module_name)
    except Exception as exc:  # a missing module, or one that fails while importing: either way, say which
        raise UserError(f"{key}={value!r}: cannot import {module_name!r} ({type(exc).__name__}: {exc})") from exc
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise UserError(f"{key}={value!r}: {module_name!r} has no {attribute!r}") from None
    return found


def group_entries(group: str) -> dict[str, EntryPoint]:
    """The entry points other installed packages declare in ``group``, by name (not yet loaded)."""
    return {ep.name: ep for ep in entry_points(group=group)}


def load_entry(key: str, group: str, entry: EntryPoint) -> object:
    """An entry point's object; one UserError naming the key, the name, its package and the failure."""
    try:
        return entry.load()
    except Exception as exc:
        owner = f" (from {entry.dist.name})" if entry.dist is not None else ""
        raise UserError(
            f"{key}={entry.name!r}: the entry point {group}:{entry.name} = {entry.value!r}{owner} "
            f"cannot be loaded ({type(exc).__name__}: {exc})"
        ) from exc


def load_group(key: str, group: str) -> None:
    """Import every entry point of ``group``: for registries filled by a decorator on import (task
    formats, metrics) whose other packages' entries are all wanted, not looked up by name."""
    for entry in group_entries(group).values():
        load_entry(key, group, entry)


class Registry(Generic[T]):
    """Entries by name for the config key ``key``; ``group``: the entry-point group other packages
    add entries through (read on the first lookup of a name not registered here, and by ``names``)."""

    def __init__(self, key: str, group: str | None = None) -> None:
        self.key = key  # the config key whose value names an entry, for the error
        self.group = group
        self._entries: dict[str, T] = {}
        self._outside: dict[str, EntryPoint] | None = None  # the group's entry points, once read

    def register(self, *names: str) -> Callable[[T], T]:
        def add(entry: T) -> T:
            for name in names:
                if name in self._entries:
                    raise ValueError(f"{self.key}: {name!r} is registered twice")
                self._entries[name] = entry
            return entry

        return add

    def get(self, name: str) -> T:
        name = str(name)
        if name in self._entries:
            return self._entries[name]
        if is_reference(name):
            found = cast(T, load_reference(self.key, name))
        elif name in self._from_group():
            assert self.group is not None
            found = cast(T, load_entry(self.key, self.group, self._from_group()[name]))
        else:
            raise UserError(self.unknown(name))
        self._entries[name] = found  # imported once
        return found

    def unknown(self, name: object) -> str:
        """The one-line error for a value that names no entry: the key, the value, the known names."""
        where = f"; {HOW_TO_EXTEND} {self.group}" if self.group else ""
        return f"{self.key}={str(name)!r} is unknown; known: {', '.join(self.names())}{where}"

    def check(self, name: object) -> None:
        """Raise ``unknown``'s error unless ``name`` is known or a reference (not imported here)."""
        if not (is_reference(name) or name in self):
            raise UserError(self.unknown(name))

    def _from_group(self) -> dict[str, EntryPoint]:
        if self._outside is None:
            self._outside = group_entries(self.group) if self.group else {}
        return self._outside

    def names(self) -> list[str]:
        return sorted({*self._entries, *self._from_group()} - {n for n in self._entries if is_reference(n)})

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._from_group()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
