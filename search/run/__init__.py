"""Running a search on Ray Tune: launch, the searcher over any optimiser, the trainable on the
workers, the progress view, and the Optuna storage every trial is written to.

Lazy (PEP 562): a Ray worker imports ``search.run._trainable``, which must stay light.
"""

from __future__ import annotations

from spaces._lazy import lazy_getattr

_EXPORTS = {
    "launch": "search.run._launch",
    "trials_counted": "search.run._counting",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
