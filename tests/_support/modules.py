"""Modules made unimportable for a test, as on an install without the extra that brings them."""

from __future__ import annotations

import sys

import pytest


def block(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    """Makes ``module`` (and its loaded submodules) unimportable until the test ends."""
    for name in [n for n in sys.modules if n == module or n.startswith(f"{module}.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)
