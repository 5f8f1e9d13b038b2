"""Running a search on Ray Tune: launch, the searcher over any optimiser, the trainable on the
workers, the progress view, limits, loggers and checkpoints. What it writes is the study
record (``search.record``); the schedulers it runs under are ``search.schedulers``.

Lazy (PEP 562): a Ray worker imports ``search.run._trainable``, which must stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces import lazy_exports

# What this package exports, each name once: type checkers and editors read these imports,
# and at run time `lazy_exports` reads the same block and loads each name when first used.
# `__all__` is the user API; the other names are for npas's other packages.
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


__all__ = [
    "launch",
]


__getattr__ = lazy_exports(__name__)
