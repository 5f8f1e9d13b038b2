"""A name → object registry shared by families, indicators, datasets, optimisers and selectors."""

from __future__ import annotations

import fnmatch
import importlib
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
        self._declared: dict[str, str] = {}

    def declare(self, name: str, module: str) -> None:
        """Names an entry that ``module`` registers when it is imported, so that a low module
        (the config's checks) knows the name without importing the module, as a package's
        entry points do; :meth:`get` imports it on first use."""
        key = name.lower()
        if key in self._entries or key in self._declared:
            raise NpasError(f"{self.kind} {name!r} is already registered")
        self._declared[key] = module

    def add(self, name: str, entry: T) -> T:
        """Registers ``entry`` under ``name``; names are case-insensitive. A name declared
        with :meth:`declare` is filled in by its module, and by no other."""
        key = name.lower()
        declared_by = self._declared.get(key)
        if key in self._entries or declared_by not in (None, getattr(entry, "__module__", None)):
            raise NpasError(f"{self.kind} {name!r} is already registered")
        self._declared.pop(key, None)
        self._entries[key] = entry
        return entry

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of :meth:`add`."""

        def decorator(entry: T) -> T:
            return self.add(name, entry)

        return decorator

    def get(self, name: str) -> T:
        """Returns the entry for ``name`` or raises UnknownNameError listing valid ones."""
        key = name.lower() if isinstance(name, str) else None  # not a name: unknown
        if key in self._declared:
            module = self._declared[key]
            importlib.import_module(module)
            if key not in self._entries:
                raise NpasError(f"{self.kind} {name!r}: {module} does not register it")
        try:
            return self._entries[key]
        except KeyError:
            known = ", ".join(self.names())
            hint = did_you_mean(name, self.names())
            raise UnknownNameError(f"unknown {self.kind} {name!r}{hint}; known: {known}") from None

    def name_of(self, entry: object) -> str:
        """The name ``entry`` is registered under (the reverse of :meth:`get`), so an entry
        need not repeat its name."""
        for name in list(self._declared):
            self.get(name)
        for name, known in self._entries.items():
            if known is entry:
                return name
        raise NpasError(f"{entry!r} is not a registered {self.kind}")

    def names(self, pattern: str = "*") -> list[str]:
        """Sorted names matching a shell-style wildcard pattern."""
        every = {*self._entries, *self._declared}
        return sorted(n for n in every if fnmatch.fnmatch(n, pattern.lower()))

    def __contains__(self, name: object) -> bool:
        key = name.lower() if isinstance(name, str) else None
        return key in self._entries or key in self._declared

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries) + len(self._declared)
