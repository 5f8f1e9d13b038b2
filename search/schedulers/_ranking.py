"""The rung ranking of MOASHA: constrained domination (Deb), then a front's own order, then
arrival.

Inside a front, rows are ordered by one of ``search.config.WITHIN_FRONT``: ``hypervolume``
(largest exclusive hypervolume contribution first, on the rung's range normalised to [0, 1]
with the reference point at 1.1, as Optuna's and the lab's hypervolume) or ``crowding``
(NSGA-II crowding distance). Crowding gives both ends of a front an infinite distance, so the
cheapest net at a rung went on however poor its accuracy; its hypervolume contribution is the
slab only it covers, small when a slightly larger net is much more accurate. The hypervolume is
what a search is judged by (the report's and the lab's figure), so the rung keeps what adds
most to it.

Kept apart from the scheduler so that its one rule is tested against a brute-force oracle
(tests/search_tests/schedulers/test_ranking.py) and its cost measured alone
(benchmarks/scheduler_scale.py).
A rung of 10^4 trials is re-ranked at every arrival, so nothing here loops over fronts in
Python: fronts come from moocore's ``pareto_rank`` (what pymoo's ``NonDominatedSorting`` calls:
O(n log n) for two objectives, one front at a time for more), crowding for all fronts at once.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from moocore import hv_contributions, pareto_rank

from search.config import WITHIN_FRONT

__all__ = ["rank_order", "top_k"]

# Crowding distances and hypervolume contributions (on ranges normalised to 1) are rounded to
# this many decimals, so that two equal in exact arithmetic (1/5 + 2/5 and 3/5) are a tie,
# broken by arrival, rather than ordered by the last bit of floating point.
_DECIMALS = 12
# Rows in the order they are ranked: feasible, feasible at chance, infeasible, invalid.
_FEASIBLE, _AT_CHANCE, _INFEASIBLE, _INVALID = range(4)
# The reference point of a contribution, per normalised objective.
_REFERENCE = 1.1


def rank_order(
    F: np.ndarray,
    violation: np.ndarray,
    at_chance: np.ndarray | None = None,
    within: str = "crowding",
) -> list[int]:
    """Row indices best first under constrained domination (F minimised, one row a trial).

    Feasible rows by front, then by ``within`` (``WITHIN_FRONT``, largest first), those
    ``at_chance`` after the others; infeasible rows by violation; rows with a non-finite
    objective or NaN violation last. Remaining ties go to the lower row index, i.e. the trial
    that reached the rung first.
    """
    return top_k(F, violation, at_chance, len(F), within)


def top_k(
    F: np.ndarray,
    violation: np.ndarray,
    at_chance: np.ndarray | None,
    k: int,
    within: str = "crowding",
) -> list[int]:
    """``rank_order(F, violation, at_chance)[:k]``, without ranking what cannot be in it.

    A promotion decision needs only the best ``k`` of a rung: fronts past the one holding the
    k-th row get no crowding, and groups past it (at chance, infeasible, invalid) no sorting.
    """
    if within not in WITHIN_FRONT:
        raise ValueError(f"within: got {within!r}; allowed: {WITHIN_FRONT}")
    F = np.asarray(F, dtype=float)
    violation = np.asarray(violation, dtype=float)
    group = _groups(F, violation, at_chance)
    scale = _scale(F[group <= _AT_CHANCE])
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
            if within == "crowding":
                merit = _crowding(F[rows], front)
            else:
                merit = _contribution(scale(F[rows]), front)
            rows = rows[np.lexsort((-merit, front))]  # stable: ties by row
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


def _scale(F: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Maps rows onto [0, 1] per objective by the range of ``F`` (a constant one onto 0)."""
    if not len(F):
        return lambda rows: rows
    lo, hi = F.min(axis=0), F.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return lambda rows: (rows - lo) / span


def _contribution(F: np.ndarray, front: np.ndarray) -> np.ndarray:
    """Each row's exclusive hypervolume contribution within its front (reference point 1.1 on
    the normalised range). Of duplicates none covers anything alone: all get 0; so do the
    members of a one-objective front, which are all equal."""
    merit = np.zeros(len(F))
    if F.shape[1] < 2:
        return merit
    for f in np.unique(front):
        members = np.flatnonzero(front == f)
        merit[members] = hv_contributions(F[members], ref=_REFERENCE)
    return np.round(merit, _DECIMALS)


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
