"""A name → object registry shared by families, indicators, datasets, optimisers and selectors."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from spaces._errors import NpasError, UnknownNameError
from spaces._suggest import did_you_mean

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to entries; a duplicate name raises, an unknown one lists the known names.

    Args:
        kind: What the entries are ("family", "indicator", ...), used in error messages.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        """Registers ``entry`` under ``name``; names are case-insensitive."""
        key = name.lower()
        if key in self._entries:
            raise NpasError(f"{self.kind} {name!r} is already registered")
        self._entries[key] = entry
        return entry

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of :meth:`add`."""

        def decorator(entry: T) -> T:
            return self.add(name, entry)

        return decorator

    def get(self, name: str) -> T:
        """Returns the entry for ``name`` or raises UnknownNameError listing valid ones."""
        try:
            return self._entries[name.lower()]
        except (KeyError, AttributeError):
            known = ", ".join(sorted(self._entries))
            hint = did_you_mean(name, self._entries)
            raise UnknownNameError(f"unknown {self.kind} {name!r}{hint}; known: {known}") from None

    def name_of(self, entry: object) -> str:
        """The name ``entry`` is registered under (the reverse of :meth:`get`), so an entry
        need not repeat its name."""
        for name, known in self._entries.items():
            if known is entry:
                return name
        raise NpasError(f"{entry!r} is not a registered {self.kind}")

    def names(self, pattern: str = "*") -> list[str]:
        """Sorted names matching a shell-style wildcard pattern."""
        return sorted(n for n in self._entries if fnmatch.fnmatch(n, pattern.lower()))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)
