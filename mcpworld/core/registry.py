"""Named implementations chosen by a config value (a provider kind, an env backend, a tool family).

A registry is filled by a decorator where each implementation is defined, and a lookup of an
unknown name is one error naming the config key, the value and every known name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from mcpworld.core.errors import UserError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, key: str) -> None:
        self.key = key  # the config key whose value names an entry, for the error
        self._entries: dict[str, T] = {}

    def register(self, *names: str) -> Callable[[T], T]:
        def add(entry: T) -> T:
            for name in names:
                if name in self._entries:
                    raise ValueError(f"{self.key}: {name!r} is registered twice")
                self._entries[name] = entry
            return entry

        return add

    def get(self, name: str) -> T:
        try:
            return self._entries[str(name)]
        except KeyError:
            raise UserError(f"{self.key}={name!r} is unknown; known: {', '.join(self.names())}") from None

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
