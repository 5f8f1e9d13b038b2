"""The multi-fidelity schedulers a search runs under (``scheduler.name``): MOASHA (stopping
and promotion types) as Ray Tune ``TrialScheduler`` objects, its rung ranking, and what a
sampler learns from a multi-fidelity search (every trial at one epoch).

Read by ``search.run`` (a launch) and ``search.lab`` (a replay on a simulated clock); they
read the record (``search.record``) and never write it. Light to import: Ray loads when a
scheduler is built.
"""

from __future__ import annotations

from spaces._lazy import lazy_getattr

_EXPORTS = {
    "SCHEDULERS": "search.schedulers._named",
    "SCHEDULER_TYPES": "search.schedulers._named",
    "MOASHA": "search.schedulers._moasha",
    "PromotionMOASHA": "search.schedulers._moasha",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
