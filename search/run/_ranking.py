"""The rung ranking of MOASHA: constrained domination (Deb), then crowding, then arrival.

Kept apart from the scheduler so that its one rule is tested against a brute-force oracle
(tests/search_tests/run/test_ranking.py) and its cost measured alone
(benchmarks/scheduler_scale.py).
A rung of 10^4 trials is re-ranked at every arrival, so nothing here loops over fronts in
Python: fronts come from moocore's ``pareto_rank`` (what pymoo's ``NonDominatedSorting`` calls:
O(n log n) for two objectives, one front at a time for more), crowding for all fronts at once.
"""

from __future__ import annotations

import numpy as np
from moocore import pareto_rank

__all__ = ["rank_order", "top_k"]

# Crowding distances (sums of ranges normalised to 1) are rounded to this many decimals, so
# that two equal in exact arithmetic (1/5 + 2/5 and 3/5) are a tie, broken by arrival, rather
# than ordered by the last bit of floating point.
_DECIMALS = 12
# Rows in the order they are ranked: feasible, feasible at chance, infeasible, invalid.
_FEASIBLE, _AT_CHANCE, _INFEASIBLE, _INVALID = range(4)


def rank_order(
    F: np.ndarray, violation: np.ndarray, at_chance: np.ndarray | None = None
) -> list[int]:
    """Row indices best first under constrained domination (F minimised, one row a trial).

    Feasible rows by front, then crowding distance (largest first), those ``at_chance`` after
    the others; infeasible rows by violation; rows with a non-finite objective or NaN
    violation last. Remaining ties go to the lower row index, i.e. the trial that reached the
    rung first.
    """
    return top_k(F, violation, at_chance, len(F))


def top_k(F: np.ndarray, violation: np.ndarray, at_chance: np.ndarray | None, k: int) -> list[int]:
    """``rank_order(F, violation, at_chance)[:k]``, without ranking what cannot be in it.

    A promotion decision needs only the best ``k`` of a rung: fronts past the one holding the
    k-th row get no crowding, and groups past it (at chance, infeasible, invalid) no sorting.
    """
    F = np.asarray(F, dtype=float)
    violation = np.asarray(violation, dtype=float)
    group = _groups(F, violation, at_chance)
    best: list[np.ndarray] = []
    left = max(0, k)
    for g in (_FEASIBLE, _AT_CHANCE, _INFEASIBLE, _INVALID):
        if left == 0:
            break
        rows = np.flatnonzero(group == g)
        if g in (_FEASIBLE, _AT_CHANCE) and len(rows):
            front = pareto_rank(F[rows])
            if len(rows) > left:  # whole fronts up to the one holding the last row wanted
                cut = np.searchsorted(np.cumsum(np.bincount(front)), left)
                rows, front = rows[front <= cut], front[front <= cut]
            crowding = _crowding(F[rows], front)
            rows = rows[np.lexsort((-crowding, front))]  # stable: ties by row
        elif g == _INFEASIBLE:
            rows = rows[np.argsort(violation[rows], kind="stable")]
        best.append(rows[:left])
        left -= len(best[-1])
    return np.concatenate(best, dtype=int).tolist() if best else []


def _groups(F: np.ndarray, violation: np.ndarray, at_chance: np.ndarray | None) -> np.ndarray:
    """Each row's group, in ranking order: feasible, feasible at chance, infeasible, invalid."""
    chance = np.zeros(len(F), bool) if at_chance is None else np.asarray(at_chance, bool)
    valid = np.isfinite(F).all(axis=1) & ~np.isnan(violation)
    group = np.full(len(F), _INVALID)
    group[valid & (violation > 0)] = _INFEASIBLE
    group[valid & (violation <= 0) & chance] = _AT_CHANCE
    group[valid & (violation <= 0) & ~chance] = _FEASIBLE
    return group


def _crowding(F: np.ndarray, front: np.ndarray) -> np.ndarray:
    """NSGA-II crowding distance of each row within its front, as pymoo's "cd" computes it.

    Per objective, each front is sorted stably (ties by row); its first and last rows get inf,
    the others (next - previous) / (max - min); a constant objective adds 0, inf included.
    Duplicates are kept, so of two equal rows only one can be a boundary point. A front of
    at most two rows is all inf. pymoo's mean over objectives is a sum here: same order.
    """
    n, n_obj = F.shape
    distance = np.zeros(n)
    for j in range(n_obj):
        by_value = np.lexsort((F[:, j], front))  # stable: ties by row
        value, where = F[by_value, j], front[by_value]
        first = np.r_[True, where[1:] != where[:-1]]
        last = np.r_[where[1:] != where[:-1], True]
        size = np.flatnonzero(last) - np.flatnonzero(first) + 1
        span = np.repeat(value[last] - value[first], size)
        gap = np.where(span > 0, np.inf, 0.0)
        inner = np.flatnonzero(~(first | last) & (span > 0))
        gap[inner] = (value[inner + 1] - value[inner - 1]) / span[inner]
        distance[by_value] += gap
    distance[np.bincount(front)[front] <= 2] = np.inf
    return np.round(distance, _DECIMALS)
