"""Lazy package attributes (PEP 562), declared once: a package's ``if TYPE_CHECKING:`` block
imports each name it exports from the module that holds it; type checkers and editors read
that block, and :func:`lazy_exports` reads the same block at run time to load a name's module
only when the name is first used, as Optuna loads its heavy parts."""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def exported_names(init: Path) -> dict[str, str]:
    """Each name imported under the top-level ``if TYPE_CHECKING:`` of the package ``init``
    (an ``__init__.py``), with the module it is imported from.

    Raises:
        ImportError: the block holds anything but absolute ``from module import name``.
    """
    names: dict[str, str] = {}
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if not (isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"):
            continue
        for line in node.body:
            if not isinstance(line, ast.ImportFrom) or line.level or not line.module:
                raise ImportError(f"{init}, line {line.lineno}: under TYPE_CHECKING, only "
                                  "`from package.module import name as name`")  # fmt: skip
            names.update({alias.asname or alias.name: line.module for alias in line.names})
    return names


def lazy_exports(package: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that loads each name of its ``if
    TYPE_CHECKING:`` block when first asked for; a name imported from ``package`` itself is a
    submodule, imported as such. The block is read once, at the first name asked for."""
    sources: dict[str, str] = {}

    def __getattr__(name: str) -> Any:
        if not sources:
            sources.update(exported_names(Path(str(sys.modules[package].__file__))))
        source = sources.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if source == package:
            return importlib.import_module(f"{package}.{name}")
        return getattr(importlib.import_module(source), name)

    return __getattr__
