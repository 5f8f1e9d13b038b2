"""Running a search on Ray Tune: launch, the searcher over any optimiser, the trainable on the
workers, the progress view, limits, loggers and checkpoints. What it writes is the study
record (``search.record``); the schedulers it runs under are ``search.schedulers``.

Lazy (PEP 562): a Ray worker imports ``search.run._trainable``, which must stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces._lazy import lazy_getattr

# What the lazy map below exports, for type checkers and editors (tests/test_static_exports.py
# keeps the two the same); at run time each name still loads when first used.
if TYPE_CHECKING:
    from search.run._launch import launch as launch


_EXPORTS = {
    "launch": "search.run._launch",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
