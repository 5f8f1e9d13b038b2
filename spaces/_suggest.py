"""The one "did you mean" of npas: every unknown name (a config key, a registry entry, a
preset, a selector, a metric) is answered with the same hint, written here once."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]


def did_you_mean(name: object, known: Iterable[object]) -> str:
    """`` (did you mean 'mlp'?)`` for the known name closest to ``name``, or ``""`` when none
    is close (difflib's ratio >= 0.6); a hint to append to an error message."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
