"""The multi-fidelity schedulers a search runs under (``scheduler.name``): MOASHA (stopping
and promotion types) as Ray Tune ``TrialScheduler`` objects, its rung ranking, and what a
sampler learns from a multi-fidelity search (every trial at one epoch).

Read by ``search.run`` (a launch) and ``search.lab`` (a replay on a simulated clock); they
read the record (``search.record``) and never write it. Light to import: Ray loads when a
scheduler is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces import lazy_getattr

# What the lazy map below exports, for type checkers and editors (tests/test_static_exports.py
# keeps the two the same); at run time each name still loads when first used.
if TYPE_CHECKING:
    from search.schedulers._defaults import GRACE_EPOCHS as GRACE_EPOCHS
    from search.schedulers._defaults import REDUCTION_FACTOR as REDUCTION_FACTOR
    from search.schedulers._moasha import MOASHA as MOASHA
    from search.schedulers._moasha import PromotionMOASHA as PromotionMOASHA
    from search.schedulers._moasha import milestones as milestones
    from search.schedulers._named import SCHEDULER_TYPES as SCHEDULER_TYPES
    from search.schedulers._named import SCHEDULERS as SCHEDULERS
    from search.schedulers._ranking import WITHIN_FRONT as WITHIN_FRONT
    from search.schedulers._rungview import RungView as RungView


_EXPORTS = {
    "SCHEDULERS": "search.schedulers._named",
    "SCHEDULER_TYPES": "search.schedulers._named",
    "MOASHA": "search.schedulers._moasha",
    "PromotionMOASHA": "search.schedulers._moasha",
}

#: Names npas's other packages import from here: not the user API (not in ``__all__``),
#: free to change with them.
_SHARED = {
    "GRACE_EPOCHS": "search.schedulers._defaults",
    "REDUCTION_FACTOR": "search.schedulers._defaults",
    "RungView": "search.schedulers._rungview",
    "WITHIN_FRONT": "search.schedulers._ranking",
    "milestones": "search.schedulers._moasha",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS, shared=_SHARED)
