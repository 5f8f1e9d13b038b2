"""Running a search on Ray Tune: launch, the searcher over any optimiser, the trainable on the
workers, the progress view, limits, loggers and checkpoints. What it writes is the study
record (``search.record``); the schedulers it runs under are ``search.schedulers``.

Lazy (PEP 562): a Ray worker imports ``search.run._trainable``, which must stay light.
"""

from __future__ import annotations

from spaces._lazy import lazy_getattr

_EXPORTS = {
    "launch": "search.run._launch",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
