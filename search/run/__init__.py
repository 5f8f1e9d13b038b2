"""Running a search on Ray Tune: launch, the searcher over any optimiser, the trainable on the
workers, the progress view, limits, loggers and checkpoints. What it writes is the study
record (``search.record``); the schedulers it runs under are ``search.schedulers``.

Lazy (PEP 562): a Ray worker imports ``search.run._trainable``, which must stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces import lazy_getattr

# What the lazy map below exports, for type checkers and editors (tests/test_static_exports.py
# keeps the two the same); at run time each name still loads when first used.
if TYPE_CHECKING:
    from search.run._bound import bound_optimiser as bound_optimiser
    from search.run._bound import constraint_keys as constraint_keys
    from search.run._launch import launch as launch
    from search.run._loggers import LOGGERS as LOGGERS
    from search.run._outcome import OutcomeReader as OutcomeReader
    from search.run._ray_session import start_ray as start_ray
    from search.run._ray_session import starting as starting
    from search.run._ray_session import stop_ray as stop_ray
    from search.run._searcher import NpasSearcher as NpasSearcher
    from search.run._stages import Stage as Stage
    from search.run._stages import count_from as count_from


_EXPORTS = {
    "launch": "search.run._launch",
}

#: Names npas's other packages import from here: not the user API (not in ``__all__``),
#: free to change with them.
_SHARED = {
    "OutcomeReader": "search.run._outcome",
    "LOGGERS": "search.run._loggers",
    "NpasSearcher": "search.run._searcher",
    "Stage": "search.run._stages",
    "bound_optimiser": "search.run._bound",
    "constraint_keys": "search.run._bound",
    "count_from": "search.run._stages",
    "start_ray": "search.run._ray_session",
    "starting": "search.run._ray_session",
    "stop_ray": "search.run._ray_session",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS, shared=_SHARED)
