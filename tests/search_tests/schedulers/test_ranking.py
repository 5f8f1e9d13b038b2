"""The rung ranking against a brute-force oracle written here, independent of pymoo and moocore.

The oracle peels fronts by pairwise constrained domination (Deb) and computes NSGA-II crowding
distance in exact rational arithmetic, so a tie is a tie and goes to the lower row index; it
follows pymoo's "cd" (pymoo.operators.survival.rank_and_crowding.metrics.calc_crowding_distance):
duplicates are not filtered out, each objective is sorted stably (ties by row index), only the
first and last of that sort are boundary points, and a constant objective adds 0 to every
member, its boundary points included.
"""

from __future__ import annotations

import math
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from moocore import pareto_rank

from search.schedulers._moasha import CHANCE_EVIDENCE, MOASHA
from search.schedulers._ranking import _contribution, _groups, rank_order, top_k

# Few distinct values, so that duplicates and equal crowding distances are common; ranges of
# 3, 5 and 7 make exact ties that floating point can miss (1/5 + 2/5 != 3/5 in doubles).
_FINITE = [-2.0, 0.0, 0.5, 1.0, 2.0, 3.0, 5.0]
_BROKEN = [None] * 6 + [math.nan, math.inf, -math.inf]  # None: the row keeps finite values
_VIOLATION = [0.0] * 4 + [-0.5, 0.25, 1.0, 1.0, math.inf, math.nan]
_CHANCE = [False] * 4 + [True]

INF = math.inf


def _dominates(a: list[float], b: list[float]) -> bool:
    return all(x <= y for x, y in zip(a, b, strict=True)) and a != b


def _crowding(F: np.ndarray, members: list[int]) -> dict[int, Fraction | float]:
    """NSGA-II crowding distance of each member, exact; inf for boundary points."""
    if len(members) <= 2:
        return dict.fromkeys(members, INF)
    distance: dict[int, Fraction | float] = dict.fromkeys(members, Fraction(0))
    for j in range(F.shape[1]):
        ranked = sorted(members, key=lambda i: (F[i, j], i))
        lo, hi = Fraction(F[ranked[0], j]), Fraction(F[ranked[-1], j])
        if lo == hi:
            continue
        distance[ranked[0]] = distance[ranked[-1]] = INF
        for prev, i, nxt in zip(ranked, ranked[1:], ranked[2:], strict=False):
            if distance[i] != INF:
                step = (Fraction(F[nxt, j]) - Fraction(F[prev, j])) / (hi - lo)
                distance[i] += step
    return distance


def _feasible_order(F: np.ndarray, rows: list[int]) -> list[int]:
    """Fronts peeled pairwise, each by crowding (largest first), then row index."""
    order: list[int] = []
    left = list(rows)
    while left:
        front = [i for i in left if not any(_dominates(list(F[o]), list(F[i])) for o in left)]
        distance = _crowding(F, front)
        order.extend(sorted(front, key=lambda i: (-distance[i], i)))
        left = [i for i in left if i not in front]
    return order


def oracle(F: np.ndarray, violation: np.ndarray, at_chance: np.ndarray) -> list[int]:
    rows = range(len(F))
    valid = [i for i in rows if np.isfinite(F[i]).all() and not math.isnan(violation[i])]
    feasible = [i for i in valid if violation[i] <= 0]
    infeasible = sorted((i for i in valid if violation[i] > 0), key=lambda i: (violation[i], i))
    return (
        _feasible_order(F, [i for i in feasible if not at_chance[i]])
        + _feasible_order(F, [i for i in feasible if at_chance[i]])
        + infeasible
        + [i for i in rows if i not in valid]
    )


@st.composite
def trials(draw: st.DrawFn, max_size: int = 24) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Objective matrix (1-4 columns, ties, some non-finite rows), violations, at-chance flags."""
    n_obj = draw(st.integers(1, 4))
    n = draw(st.integers(0, max_size))
    F = np.array(
        draw(
            st.lists(
                st.lists(st.sampled_from(_FINITE), min_size=n_obj, max_size=n_obj),
                min_size=n,
                max_size=n,
            )
        ),
        dtype=float,
    ).reshape(n, n_obj)
    for i in range(n):
        broken = draw(st.sampled_from(_BROKEN))
        if broken is not None:
            F[i, draw(st.integers(0, n_obj - 1))] = broken
    violation = np.array(draw(st.lists(st.sampled_from(_VIOLATION), min_size=n, max_size=n)))
    chance = np.array(draw(st.lists(st.sampled_from(_CHANCE), min_size=n, max_size=n)), bool)
    return F, violation, chance


@pytest.mark.slow  # many hypothesis examples against a brute-force oracle
@settings(max_examples=600, deadline=None, database=None)
@given(data=trials())
def test_rank_order_matches_the_brute_force_oracle(data):
    F, violation, chance = data
    assert rank_order(F, violation, chance) == oracle(F, violation, chance)


@settings(max_examples=100, deadline=None, database=None)
@given(data=trials())
def test_no_at_chance_flags_means_none_at_chance(data):
    F, violation, _ = data
    assert rank_order(F, violation) == oracle(F, violation, np.zeros(len(F), bool))


@pytest.mark.slow  # many hypothesis examples against a brute-force oracle
@settings(max_examples=400, deadline=None, database=None)
@given(data=trials(), k=st.integers(0, 26))
def test_top_k_is_the_head_of_rank_order(data, k):
    F, violation, chance = data
    assert top_k(F, violation, chance, k) == rank_order(F, violation, chance)[:k]


def test_crowding_keeps_duplicates_as_pymoo_does():
    """Rows 1 and 2 are equal: objective 0 gives row 1 (1 - 0) / 4 and row 2 (3 - 1) / 4,
    objective 1 row 1 (1 - 0.5) / 4 and row 2 (4 - 1) / 4, so row 2 (5/4) is ahead of row 4
    (3/4 + 1/4) and row 1 (3/8). Filtering duplicates out (pymoo's "pcd") would put row 2 last.
    """
    F = np.array([[0.0, 4.0], [1.0, 1.0], [1.0, 1.0], [4.0, 0.0], [3.0, 0.5]])
    assert rank_order(F, np.zeros(5)) == [0, 3, 2, 4, 1] == oracle(F, np.zeros(5), [0] * 5)


def test_a_constant_objective_adds_nothing_not_even_inf_at_its_ends():
    """Objective 2 is constant; row 0, first in its stable sort, stays interior (distance 2)."""
    F = np.array([[1.0, 1.0, 7.0], [0.0, 2.0, 7.0], [2.0, 0.0, 7.0]])
    assert rank_order(F, np.zeros(3)) == [1, 2, 0] == oracle(F, np.zeros(3), [0] * 3)


def test_exact_ties_in_crowding_go_to_the_lower_row_not_to_rounding():
    """Rows 1 and 2 are equally crowded in exact arithmetic (a sum of fifths, thirds and
    sevenths), but not in doubles, where row 2 came out ahead before crowding was rounded."""
    F = np.array(
        [[3.0, -2.0, 3.0], [2.0, 1.0, 0.0], [1.0, 1.0, 2.0], [3.0, 2.0, 5.0], [-2.0, 3.0, -2.0]]
    )
    distance = _crowding(F, [0, 1, 2, 4])
    assert distance[1] == distance[2] != INF
    assert rank_order(F, np.zeros(5)) == [0, 4, 1, 2, 3] == oracle(F, np.zeros(5), [0] * 5)


def test_a_decision_reads_the_position_of_a_row_not_the_row_at_that_position():
    """The arriving trial is row 2 and best: its rank is 0, whereas ``order[2]`` (the index
    the sort put third, which Syne Tune's MOASHA reads as a rank) is 1, i.e. stop."""
    rows = [("mid", 0.5, 2.0), ("worst", 0.4, 3.0), ("best", 0.9, 1.0)]
    F = np.array([[-acc, cost] for _, acc, cost in rows])
    order = rank_order(F, np.zeros(3))
    assert order == [2, 0, 1]
    assert order.index(2) == 0 and order[2] == 1  # rank and index differ here
    sched = MOASHA([("acc", "maximize"), ("cost", "minimize")], reduction_factor=3, max_epochs=9)
    for trial_id, acc, cost in rows:
        result = {"epoch": 1, "acc": acc, "cost": cost, "npas_violation": 0.0}
        sched.on_trial_result(None, SimpleNamespace(trial_id=trial_id), result)
    last = sched.decisions()[-1]
    assert (last["trial_id"], last["rank"], last["n"]) == ("best", 0, 3)
    assert last["outcome"] == "continue"


@settings(max_examples=60, deadline=None, database=None)
@given(data=trials(max_size=12))
def test_each_decision_uses_the_arriving_trials_position_in_the_oracle_order(data):
    F, violation, chance = data
    names = [f"m{j}" for j in range(F.shape[1])]
    sched = MOASHA([(m, "minimize") for m in names], reduction_factor=3, max_epochs=9)
    for i in range(len(F)):
        result = {"epoch": 1, "npas_violation": violation[i], "npas_at_chance": float(chance[i])}
        result.update(zip(names, F[i], strict=True))
        sched.on_trial_result(None, SimpleNamespace(trial_id=f"t{i}"), result)
        log = sched.decisions()[-1]
        rank = oracle(F[: i + 1], violation[: i + 1], chance[: i + 1]).index(i)
        # at most n / 3 rank above it; at chance, stopped unless eight or more have arrived
        # and none left chance
        witnessed = any(not chance[j] and np.isfinite(F[j]).all() for j in range(i + 1))
        suspended = i + 1 >= CHANCE_EVIDENCE and not witnessed
        kept = suspended if chance[i] else rank <= (i + 1) / 3
        assert (log["rank"], log["outcome"]) == (rank, "continue" if kept else "stop")


# ---------------------------------------------------------------- hypervolume contribution


def test_hypervolume_keeps_the_point_that_adds_most_where_crowding_keeps_the_cheapest():
    """(accuracy, params) minimised as (-acc, params) on a rung normalised to [0, 1] (acc
    0.3..0.95, params 300..2000), reference 1.1. Row 0 (0.30 at 300 params) is the cheapest
    end of the front: crowding gives it an infinite distance. Its own slab is
    (320 - 300) / 1700 wide and 1.1 - 1 high (its accuracy is the rung's worst, 1 once
    normalised): 0.00118. Row 1 (0.90 at 320): width (2000 - 320) / 1700, height
    (0.90 - 0.30) / 0.65: 0.912. Row 2 (0.95 at 2000): width 1.1 - 1, height
    (0.95 - 0.90) / 0.65: 0.00769. Row 3 is dominated (front 1)."""
    F = np.array([[-0.30, 300.0], [-0.90, 320.0], [-0.95, 2000.0], [-0.5, 1000.0]])
    assert rank_order(F, np.zeros(4)) == [0, 2, 1, 3]
    assert rank_order(F, np.zeros(4), within="hypervolume") == [1, 2, 0, 3]
    # the contributions themselves, by hand (see the docstring)
    scaled = (F[:3] - [-0.95, 300.0]) / [0.65, 1700.0]
    got = _contribution(scaled, np.zeros(3, int))
    assert got == pytest.approx([20 / 1700 * 0.1, 1680 / 1700 * 0.6 / 0.65, 0.1 * 0.05 / 0.65])


def test_duplicates_cover_nothing_alone_and_tie_by_arrival():
    F = np.array([[-0.9, 500.0], [-0.9, 500.0], [-0.5, 300.0]])
    order = rank_order(F, np.zeros(3), within="hypervolume")
    assert order.index(0) < order.index(1)


def test_an_unknown_within_front_rule_is_refused():
    with pytest.raises(ValueError, match="within: got 'hv'"):
        rank_order(np.zeros((2, 2)), np.zeros(2), within="hv")


@pytest.mark.slow  # many hypothesis examples
@settings(max_examples=200, deadline=None, database=None)
@given(data=trials(), k=st.integers(0, 26))
def test_hypervolume_ranking_keeps_fronts_groups_and_its_head(data, k):
    """Only the order inside a front changes: the same fronts and groups, in the same order
    as under crowding, and ``top_k`` is still the head of ``rank_order``."""
    F, violation, chance = data
    by_hv = rank_order(F, violation, chance, within="hypervolume")
    by_crowding = rank_order(F, violation, chance)
    assert sorted(by_hv) == list(range(len(F)))
    assert top_k(F, violation, chance, k, "hypervolume") == by_hv[:k]
    fronts = oracle_fronts(F, violation, chance)
    assert [fronts[i] for i in by_hv] == [fronts[i] for i in by_crowding]


def oracle_fronts(F: np.ndarray, violation: np.ndarray, chance: np.ndarray) -> list[tuple]:
    """Each row's place in the order up to ties inside a front: (group, front)."""
    group = _groups(F, violation, chance)
    place: list[tuple] = [()] * len(F)
    for g in np.unique(group):
        rows = np.flatnonzero(group == g)
        if g <= 1:
            front = pareto_rank(F[rows])
            for r, f in zip(rows, front, strict=True):
                place[r] = (int(g), int(f))
        else:
            key = violation if g == 2 else np.zeros(len(F))
            for r in rows:
                place[r] = (int(g), float(key[r]))
    return place
