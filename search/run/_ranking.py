"""The rung ranking of MOASHA: constrained domination (Deb), then crowding, then arrival.

Kept apart from the scheduler so that its one rule is tested against a brute-force oracle
(tests/search_tests/test_ranking.py) and its cost measured alone (benchmarks/scheduler_scale.py).
"""

from __future__ import annotations

import numpy as np
from pymoo.operators.survival.rank_and_crowding.metrics import get_crowding_function
from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

__all__ = ["rank_order"]

_CROWDING = get_crowding_function("cd")  # NSGA-II crowding; fronts of <= 2 get inf


def rank_order(
    F: np.ndarray, violation: np.ndarray, at_chance: np.ndarray | None = None
) -> list[int]:
    """Row indices best first under constrained domination (F minimised, one row a trial).

    Feasible rows by front, then crowding distance (largest first), those ``at_chance`` after
    the others; infeasible rows by violation; rows with a non-finite objective or NaN
    violation last. Remaining ties go to the lower row index, i.e. the trial that reached the
    rung first.
    """
    rows = np.arange(len(F))
    chance = np.zeros(len(F), bool) if at_chance is None else np.asarray(at_chance, bool)
    valid = np.isfinite(F).all(axis=1) & ~np.isnan(violation)
    feasible = valid & (violation <= 0)
    infeasible = rows[valid & (violation > 0)]
    order: list[int] = []
    for group in (rows[feasible & ~chance], rows[feasible & chance]):
        if not len(group):
            continue
        for front in NonDominatedSorting().do(F[group]):
            members = group[front]
            crowding = _CROWDING.do(F[members])
            order.extend(int(i) for i in members[np.lexsort((members, -crowding))])
    order.extend(int(i) for i in infeasible[np.lexsort((infeasible, violation[infeasible]))])
    order.extend(int(i) for i in rows[~valid])
    return order
