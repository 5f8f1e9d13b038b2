"""The multi-fidelity schedulers a search runs under (``scheduler.name``): MOASHA (stopping
and promotion types) as Ray Tune ``TrialScheduler`` objects, its rung ranking, and what a
sampler learns from a multi-fidelity search (every trial at one epoch).

Read by ``search.run`` (a launch) and ``search.lab`` (a replay on a simulated clock); they
read the record (``search.record``) and never write it. Light to import: Ray loads when a
scheduler is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces import lazy_exports

# What this package exports, each name once: type checkers and editors read these imports,
# and at run time `lazy_exports` reads the same block and loads each name when first used.
# `__all__` is the user API; the other names are for npas's other packages.
if TYPE_CHECKING:
    from search.config import GRACE_EPOCHS as GRACE_EPOCHS
    from search.config import REDUCTION_FACTOR as REDUCTION_FACTOR
    from search.config import SCHEDULER_TYPES as SCHEDULER_TYPES
    from search.config import SCHEDULERS as SCHEDULERS
    from search.config import WITHIN_FRONT as WITHIN_FRONT
    from search.schedulers._contract import Decides as Decides
    from search.schedulers._contract import Gate as Gate
    from search.schedulers._contract import attach as attach
    from search.schedulers._milestones import milestones as milestones
    from search.schedulers._moasha import MOASHA as MOASHA
    from search.schedulers._moasha import PromotionMOASHA as PromotionMOASHA
    from search.schedulers._rungview import RungView as RungView


__all__ = [
    "MOASHA",
    "SCHEDULERS",
    "SCHEDULER_TYPES",
    "Decides",
    "Gate",
    "PromotionMOASHA",
]


__getattr__ = lazy_exports(__name__)
