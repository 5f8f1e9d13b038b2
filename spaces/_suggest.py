"""The one "did you mean" of npas: every unknown name (a config key, a registry entry, a
preset, a selector, a metric) is answered with the same hint, written here once."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]


def did_you_mean(name: object, known: Iterable[object]) -> str:
    """`` (did you mean 'mlp'?)`` for the known name closest to ``name`` (difflib's ratio >=
    0.6), else the one known name that starts with it (``acc`` → ``accuracy``), or ``""``;
    a hint to append to an error message."""
    text, names = str(name), [str(k) for k in known]
    close = difflib.get_close_matches(text, names, n=1)
    if not close and text:
        close = [k for k in names if k.startswith(text)]
    return f" (did you mean {close[0]!r}?)" if len(close) == 1 else ""
