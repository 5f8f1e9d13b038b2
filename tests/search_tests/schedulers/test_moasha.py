"""MOASHA: rung arithmetic, constrained-domination ranking, properties, and a real Ray run.

The unit tests drive ``on_trial_result`` directly with stand-in trials (the scheduler reads
only ``trial.trial_id``); the last test runs nine synthetic trials on a local Ray with two
workers and reads each trial's reported epochs from the result grid.
"""

from __future__ import annotations

import math
import pickle
import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import ray
import ray.cloudpickle
from hypothesis import given, settings
from hypothesis import strategies as st
from ray import tune
from ray.tune.schedulers import TrialScheduler

from search.schedulers._moasha import CHANCE_EVIDENCE, DIRECTIONS, MOASHA
from search.schedulers._ranking import rank_order
from spaces._errors import ConfigError

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers need not import it

CONTINUE, STOP = TrialScheduler.CONTINUE, TrialScheduler.STOP
ACC_COST = [("acc", "maximize"), ("cost", "minimize")]


def _trial(trial_id: str) -> SimpleNamespace:
    return SimpleNamespace(trial_id=trial_id)


def _report(
    sched: MOASHA, trial_id: str, epoch: int, acc: Any, cost: Any, viol=0.0, chance=False
) -> str:
    result = {"epoch": epoch, "acc": acc, "cost": cost, "npas_violation": viol}
    result["npas_at_chance"] = float(chance)
    return sched.on_trial_result(None, _trial(trial_id), result)


# ---------------------------------------------------------------- rungs and arguments


@pytest.mark.parametrize(
    ("grace", "rf", "max_epochs", "rungs"),
    [
        (1, 3, 27, (1, 3, 9)),
        (1, 3, 28, (1, 3, 9, 27)),
        (2, 2, 16, (2, 4, 8)),
        (1, 4, 100, (1, 4, 16, 64)),
        (2, 1.5, 8, (2, 3, 5, 7)),  # 2, 3, 4.5 and 6.75 rounded up to whole epochs
        (2, 1.2, 4, (2, 3)),  # 2, 2.4 and 2.88 both round up to 3: one rung
        (5, 3, 5, ()),
    ],
)
def test_rungs_are_grace_times_rf_powers_below_max(grace, rf, max_epochs, rungs):
    sched = MOASHA(ACC_COST, grace_epochs=grace, reduction_factor=rf, max_epochs=max_epochs)
    assert sched.rungs == rungs


@pytest.mark.parametrize(
    ("kwargs", "option", "value"),
    [
        ({"objectives": [("acc", "up")]}, "objectives[0] direction", "'up'"),
        ({"objectives": [("acc", "max")]}, "objectives[0] direction", "'max'"),
        ({"objectives": []}, "objectives", "[]"),
        ({"objectives": [("acc", "maximize"), ("acc", "minimize")]}, "objectives", "'acc'"),
        ({"grace_epochs": 0}, "grace_epochs", "0"),
        ({"grace_epochs": 1.5}, "grace_epochs", "1.5"),
        ({"reduction_factor": 1}, "reduction_factor", "1"),
        ({"reduction_factor": 0.5}, "reduction_factor", "0.5"),
        ({"reduction_factor": math.nan}, "reduction_factor", "nan"),
        ({"grace_epochs": 4, "max_epochs": 3}, "max_epochs", "3"),
    ],
)
def test_bad_arguments_raise_config_error_naming_option_value_and_allowed(kwargs, option, value):
    args = {"objectives": ACC_COST, "max_epochs": 9, **kwargs}
    with pytest.raises(ConfigError) as info:
        MOASHA(args.pop("objectives"), **args)
    message = str(info.value)
    assert message.startswith(f"MOASHA {option}: got ")
    assert value in message.split("; allowed: ")[0]
    assert "; allowed: " in message


# ---------------------------------------------------------------- decisions at a rung


def test_first_trial_at_a_rung_continues_and_between_rungs_continues():
    sched = MOASHA(ACC_COST, max_epochs=9)  # rungs (1, 3)
    assert _report(sched, "a", 1, 0.1, 5.0) == CONTINUE
    assert _report(sched, "a", 2, 0.1, 5.0) == CONTINUE  # between rungs: no decision
    assert _report(sched, "a", 3, 0.1, 5.0) == CONTINUE  # first at rung 3 as well
    assert [(d["trial_id"], d["rung"], d["outcome"], d["rank"]) for d in sched.decisions()] == [
        ("a", 1, "continue", 0),
        ("a", 3, "continue", 0),
    ]


def test_each_rung_is_decided_once_per_trial_and_skipped_rungs_are_entered():
    sched = MOASHA(ACC_COST, max_epochs=27)  # rungs (1, 3, 9)
    _report(sched, "a", 1, 0.5, 1.0)
    _report(sched, "a", 1, 0.5, 1.0)  # a repeated result at the same epoch
    assert len(sched.decisions()) == 1
    assert _report(sched, "b", 4, 0.9, 0.5) == CONTINUE  # jumped past rungs 1 and 3
    assert [(d["trial_id"], d["rung"]) for d in sched.decisions()[1:]] == [("b", 1), ("b", 3)]


def test_dominated_trial_is_stopped_once_enough_better_ones_are_recorded():
    sched = MOASHA(ACC_COST, reduction_factor=3, max_epochs=9)
    assert _report(sched, "good", 1, 0.9, 1.0) == CONTINUE
    assert _report(sched, "bad", 1, 0.5, 2.0) == STOP  # 1 better of 2: keep 1
    assert _report(sched, "worse", 1, 0.4, 3.0) == STOP
    # Dominated by one trial only: 1 above it, at most 4 / 3, so the quota lets it go on.
    assert _report(sched, "second", 1, 0.8, 1.5) == CONTINUE
    assert _report(sched, "worst", 1, 0.3, 4.0) == STOP
    ranks = {d["trial_id"]: d["rank"] for d in sched.decisions()}
    assert ranks == {"good": 0, "bad": 1, "worse": 2, "second": 1, "worst": 4}


def test_feasible_dominated_trial_ranks_ahead_of_infeasible_nondominated_one():
    sched = MOASHA(ACC_COST, reduction_factor=3, max_epochs=9)
    assert _report(sched, "ok", 1, 0.7, 1.0) == CONTINUE
    # Best on both objectives, but violates a constraint: behind the feasible trial (1 above
    # it, more than 2 / 3).
    assert _report(sched, "illegal", 1, 0.99, 0.01, viol=0.5) == STOP
    # Dominated by "ok" but feasible: rank 1, at most 3 / 3 above it, ahead of "illegal".
    assert _report(sched, "meh", 1, 0.3, 3.0, viol=0.0) == CONTINUE
    # Less violation ranks ahead among infeasible ones; 0 (and missing) is feasible.
    assert _report(sched, "nearly", 1, 0.1, 9.0, viol=0.1) == STOP  # rank 2 of 4, keep 2
    log = {d["trial_id"]: d for d in sched.decisions()}
    assert log["illegal"]["rank"] == 1
    assert log["meh"]["rank"] == 1
    assert log["nearly"]["rank"] == 2  # ahead of "illegal" (0.5), behind the feasible two
    missing = sched.on_trial_result(None, _trial("noviol"), {"epoch": 1, "acc": 0.8, "cost": 1})
    assert missing == CONTINUE and sched.decisions()[-1]["rank"] == 0  # missing -> feasible


def test_crowding_tie_break_keeps_the_boundary_points_of_a_front():
    # A front along acc = cost (higher accuracy costs more): every point is non-dominated.
    sched = MOASHA(ACC_COST, reduction_factor=3, max_epochs=9)
    for i, x in enumerate([0.5, 0.6, 0.4]):  # interior points arrive first
        _report(sched, f"mid{i}", 1, x, x)
    assert _report(sched, "top", 1, 0.9, 0.9) == CONTINUE  # boundary: rank 1 of 4, keep 2
    assert _report(sched, "inner", 1, 0.55, 0.55) == STOP  # same front, but crowded
    ranks = {d["trial_id"]: d["rank"] for d in sched.decisions()}
    assert ranks["top"] == 1 and ranks["inner"] >= 2
    # Directly: the two extremes lead, whatever the arrival order.
    F = np.array([[-0.5, 0.5], [-0.9, 0.9], [-0.6, 0.6], [-0.1, 0.1], [-0.3, 0.3]])
    assert set(rank_order(F, np.zeros(5))[:2]) == {1, 3}
    # Equal crowding (two extremes) goes to the trial that reached the rung first.
    assert rank_order(F[[1, 3]], np.zeros(2)) == [0, 1]
    assert rank_order(F[[3, 1]], np.zeros(2)) == [0, 1]


def test_nan_or_missing_objective_ranks_last_without_crashing():
    sched = MOASHA(ACC_COST, reduction_factor=2, max_epochs=9)
    assert _report(sched, "nan-first", 1, math.nan, 1.0) == CONTINUE  # first always continues
    assert _report(sched, "ok", 1, 0.1, 9.0) == CONTINUE  # ahead of the NaN one
    assert _report(sched, "bad", 1, 0.2, 5.0, viol=3.0) == CONTINUE  # rank 1 of 3, keep 2
    assert _report(sched, "missing", 1, None, 1.0) == STOP
    assert sched.on_trial_result(None, _trial("absent"), {"epoch": 1, "acc": 0.9}) == STOP
    assert _report(sched, "text", 1, "oops", 1.0) == STOP
    ranks = {d["trial_id"]: d["rank"] for d in sched.decisions()}
    assert ranks["nan-first"] == 0
    assert ranks["missing"] == 3 and ranks["absent"] == 4 and ranks["text"] == 5
    F = np.array([[np.nan, 0.0], [5.0, 5.0], [0.0, np.inf], [1.0, 1.0]])
    assert rank_order(F, np.array([0.0, 2.0, 0.0, 0.0])) == [3, 1, 0, 2]
    assert rank_order(np.ones((2, 2)), np.array([math.nan, 0.0])) == [1, 0]


def test_stop_beyond_max_epochs_and_continue_without_time_attr():
    sched = MOASHA(ACC_COST, max_epochs=9)
    assert _report(sched, "a", 9, 0.9, 1.0) == CONTINUE  # it ends on its own, complete
    assert _report(sched, "b", 12, 0.9, 1.0) == STOP
    assert sched.on_trial_result(None, _trial("c"), {"acc": 0.9, "cost": 1.0}) == CONTINUE
    assert MOASHA(ACC_COST, grace_epochs=3, max_epochs=3).rungs == ()
    assert _report(MOASHA(ACC_COST, grace_epochs=3, max_epochs=3), "d", 4, 0.1, 1) == STOP


def test_history_is_entered_at_every_rung_it_reached():
    sched = MOASHA(ACC_COST, reduction_factor=3, max_epochs=27)  # rungs (1, 3, 9)
    sched.add_history({1: [0.8, 1.0], 2: [0.85, 1.0], 4: [0.9, 1.0]})  # reached 1 and 3
    sched.add_history({1: [0.7, 1.0]}, violation=0.0)
    sched.add_history({1: [0.99, 0.1], 9: [0.99, 0.1]}, violation=2.0)  # infeasible
    assert [len(sched._recorded[r]) for r in sched.rungs] == [3, 2, 1]
    assert sched.decisions() == []  # history is evidence, not a decision
    # Behind both feasible history trials: rank 2 of 4 recorded, keep 2 -> stop.
    assert _report(sched, "new", 1, 0.6, 1.0) == STOP
    # At rung 3 the history trial's epoch-4 vector (first at or after 3) is the one ranked:
    # behind its 0.9 (its epoch-2 0.85 would put "late" first); 1 above it of 3, it goes on.
    assert _report(sched, "late", 3, 0.88, 1.0) == CONTINUE
    assert sched.decisions()[-1]["rank"] == 1
    with pytest.raises(ConfigError, match="one per objective"):
        sched.add_history({1: [0.5]})


def test_a_trial_at_chance_is_stopped_even_cheapest_and_ranks_behind_the_rest():
    sched = MOASHA(ACC_COST, reduction_factor=3, max_epochs=9)
    assert _report(sched, "a", 1, 0.6, 2.0) == CONTINUE  # a trial left chance at rung 1
    assert _report(sched, "stuck", 1, 0.11, 0.1, chance=True) == STOP  # the cheapest
    assert _report(sched, "b", 1, 0.5, 3.0) == CONTINUE  # behind a, ahead of stuck: keep 2 of 3
    assert _report(sched, "bad", 1, 0.9, 0.5, viol=1.0) == STOP
    ranks = {d["trial_id"]: d["rank"] for d in sched.decisions()}
    # Without the flag "stuck" would lead (the cheapest: a boundary of the first front).
    assert ranks == {"a": 0, "stuck": 1, "b": 1, "bad": 3}
    assert ranks["stuck"] < ranks["bad"]  # still a feasible trial: ahead of an infeasible one
    F = np.array([[-0.11, 0.1], [-0.6, 2.0], [-0.5, 3.0]])
    assert rank_order(F, np.zeros(3)) == [0, 1, 2]
    assert rank_order(F, np.zeros(3), np.array([True, False, False])) == [1, 2, 0]
    # A resumed search reads the epochs a trial was at chance from its history.
    resumed = MOASHA(ACC_COST, reduction_factor=3, max_epochs=9)
    resumed.add_history({1: [0.11, 0.1]}, at_chance={1})
    assert _report(resumed, "next", 1, 0.3, 5.0) == CONTINUE  # rank 0: ahead of the stuck one
    assert _report(resumed, "stuck2", 1, 0.1, 0.1, chance=True) == STOP  # "next" left chance


def test_chance_stops_no_trial_at_a_rung_where_none_has_left_it():
    """A rare class (nine rows in ten of the other): every net guesses the majority at its
    first rung, so chance there says nothing, and stopping it stopped every trial of a
    search. Once the first eight trials at a rung were all at chance, with none of the search
    out of it by that epoch, one at chance there goes on (its why says so) until a trial
    leaves chance by that epoch; a witness at a later rung does not count at an earlier one."""
    sched = MOASHA(ACC_COST, reduction_factor=3, max_epochs=9)
    for i in range(CHANCE_EVIDENCE - 1):  # seven at chance: stopped, as ever
        assert _report(sched, f"s{i}", 1, 0.9, 2.0, chance=True) == STOP
    for name in ("p", "q", "t"):  # the eighth on: no trial left chance in eight
        assert _report(sched, name, 1, 0.9, 2.0, chance=True) == CONTINUE
    assert _report(sched, "p", 3, 0.95, 2.0) == CONTINUE  # "p" left chance by epoch 3
    assert _report(sched, "q", 3, 0.9, 2.0, chance=True) == STOP  # under eight at rung 3
    assert _report(sched, "u", 1, 0.93, 1.0) == CONTINUE  # rung 1's first witness
    assert _report(sched, "v", 1, 0.9, 0.5, chance=True) == STOP
    why = {(d["trial_id"], d["rung"]): d.get("why") for d in sched.decisions()}
    assert why[("t", 1)] == ("at chance, as every trial at the rung (8 or more), and none of the "
                             "search has left chance by epoch 1 yet")  # fmt: skip
    assert why[("s0", 1)] is None and why[("u", 1)] is None
    # A trial that left chance by epoch 1 is a witness at rung 3 too.
    early = MOASHA(ACC_COST, reduction_factor=3, max_epochs=9)
    for i in range(CHANCE_EVIDENCE):
        assert _report(early, f"c{i}", 1, 0.1, 1.0, chance=True) == (
            STOP if i < CHANCE_EVIDENCE - 1 else CONTINUE)  # fmt: skip
    for i in range(CHANCE_EVIDENCE):  # eight recorded at rung 3, all at chance
        early._recorded[3].add(f"r{i}", np.array([-0.1, 1.0]), 0.0, True)
    assert _report(early, "w", 1, 0.5, 1.0) == CONTINUE  # it left chance by epoch 1
    assert _report(early, f"c{CHANCE_EVIDENCE - 1}", 3, 0.1, 1.0, chance=True) == STOP
    # NaN is not leaving chance.
    nan = MOASHA(ACC_COST, reduction_factor=3, max_epochs=9)
    assert _report(nan, "n", 1, float("nan"), 1.0) == CONTINUE
    for i in range(CHANCE_EVIDENCE - 1):
        _report(nan, f"c{i}", 1, 0.1, 1.0, chance=True)
    assert _report(nan, "last", 1, 0.1, 1.0, chance=True) == CONTINUE  # eight: n and seven


def test_a_trial_at_chance_before_chance_from_goes_on_ranked_last_then_is_stopped():
    """``chance_from``: a slow starter at chance at rung 1 goes on (ranked last there, so it
    takes no other trial's place), and is stopped at a later rung if still at chance."""
    sched = MOASHA(ACC_COST, reduction_factor=3, max_epochs=9, chance_from=3)
    assert sched.chance_from == 3 and MOASHA(ACC_COST, max_epochs=9).chance_from == 1
    assert _report(sched, "a", 1, 0.6, 2.0) == CONTINUE
    assert _report(sched, "slow", 1, 0.1, 0.1, chance=True) == CONTINUE  # given until epoch 3
    assert _report(sched, "b", 1, 0.5, 3.0) == CONTINUE  # "slow" ranks behind it: 2 of 3 on
    assert _report(sched, "a", 3, 0.7, 2.0) == CONTINUE  # rung 3's witness
    assert _report(sched, "slow", 3, 0.1, 0.1, chance=True) == STOP  # still at chance
    assert _report(sched, "late", 1, 0.11, 0.1, chance=True) == CONTINUE
    assert _report(sched, "late", 3, 0.7, 0.1) == CONTINUE  # it learned: ranked on merit
    ranks = {(d["trial_id"], d["rung"]): (d["rank"], d["outcome"]) for d in sched.decisions()}
    assert ranks[("slow", 1)] == (1, "continue") and ranks[("b", 1)] == (1, "continue")  # last
    (given,) = [d for d in sched.decisions() if (d["trial_id"], d["rung"]) == ("slow", 1)]
    assert given["why"] == "at chance before epoch 3 (scheduler.chance_from)"


def test_promotion_lets_a_trial_at_chance_before_chance_from_go_on() -> None:
    from search.schedulers._moasha import PromotionMOASHA

    sched = PromotionMOASHA(ACC_COST, reduction_factor=3, max_epochs=9, chance_from=3)
    sched.limit(slots=2, total=None)
    trial = SimpleNamespace(trial_id="slow", config={"number": 0}, status="RUNNING")
    sched.on_trial_add(None, trial)
    result = {"epoch": 1, "acc": 0.1, "cost": 0.1, "npas_violation": 0.0, "npas_at_chance": 1.0}
    assert sched.on_trial_result(None, trial, result) == CONTINUE
    (decision,) = sched.decisions()
    assert decision["outcome"] == "promote" and "chance_from" in decision["why"]
    assert sched.on_trial_result(None, trial, {**result, "epoch": 3}) == STOP


def test_scheduler_ignores_tunes_single_metric_and_pickles():
    sched = MOASHA(ACC_COST, max_epochs=9)
    assert sched.set_search_properties("acc", "max") is True
    assert sched.metric is None  # Tune must not demand one metric in every result
    _report(sched, "a", 1, 0.5, 1.0)
    copy = pickle.loads(pickle.dumps(sched))
    assert copy.decisions() == sched.decisions() and copy.rungs == sched.rungs
    assert "MOASHA" in sched.debug_string()


# ---------------------------------------------------------------- properties at one rung

_VALUES = st.one_of(
    st.sampled_from([0.0, 1.0, 2.0, 3.0, 0.5, math.nan, None]),
    st.floats(-100, 100, allow_nan=False),
)
_VIOLATIONS = st.sampled_from([0.0, 0.0, 0.0, -1.0, 0.25, 1.0, 2.0, math.nan])
_CHANCE = st.sampled_from([False, False, True])


def _minimised(values: list[Any], directions: list[str]) -> np.ndarray | None:
    """The objective vector as minimised, or None when any value is NaN or missing."""
    if any(v is None or math.isnan(v) for v in values):
        return None
    return np.array(
        [-v if d == "maximize" else v for v, d in zip(values, directions, strict=True)]
    )


def _better(a: tuple, b: tuple) -> bool:
    """a strictly better than b under constrained domination, a feasible trial at chance
    behind every feasible one that is not (oracle, independent of pymoo)."""
    (fa, va, ca), (fb, vb, cb) = a, b
    a_ok, b_ok = fa is not None and not math.isnan(va), fb is not None and not math.isnan(vb)
    if not a_ok or not b_ok:
        return a_ok and not b_ok
    if (va <= 0) != (vb <= 0):
        return va <= 0
    if va > 0:
        return va < vb
    if ca != cb:
        return cb
    return bool(np.all(fa <= fb) and np.any(fa < fb))


@settings(max_examples=150, deadline=None, database=None)
@given(
    directions=st.lists(st.sampled_from(DIRECTIONS), min_size=1, max_size=3),
    rf=st.sampled_from([1.5, 2, 3, 4]),
    data=st.data(),
)
def test_rung_decisions_respect_the_quota_domination_and_feasibility(directions, rf, data):
    n_obj = len(directions)
    arrivals = data.draw(
        st.lists(
            st.tuples(
                st.lists(_VALUES, min_size=n_obj, max_size=n_obj), _VIOLATIONS, _CHANCE
            ),
            min_size=1,
            max_size=20,
        )
    )
    names = [f"m{i}" for i in range(n_obj)]
    sched = MOASHA(list(zip(names, directions, strict=True)), reduction_factor=rf, max_epochs=9)
    seen: list[tuple] = []
    for i, (values, violation, chance) in enumerate(arrivals):
        result = {"epoch": 1, "npas_violation": violation, "npas_at_chance": float(chance)}
        result.update({m: v for m, v in zip(names, values, strict=True) if v is not None})
        decision = sched.on_trial_result(None, _trial(f"t{i}"), result)
        me = (_minimised(values, directions), violation, chance)
        n, quota = i + 1, math.floor((i + 1) / rf + 1e-9) + 1  # at most n / rf above it
        log = sched.decisions()[-1]
        assert (log["trial_id"], log["n"]) == (f"t{i}", n)
        kept = log["outcome"] == "continue"
        # at chance: stopped, unless eight or more have arrived and none left chance
        witnessed = any(not c and all(v is not None and math.isfinite(v) for v in vs)
                        for vs, _, c in arrivals[: i + 1])  # fmt: skip
        suspended = n >= CHANCE_EVIDENCE and not witnessed
        ruled = suspended if chance else log["rank"] < quota
        assert (decision == CONTINUE) == kept == ruled
        # (a) kept only within the quota: fewer than `quota` recorded trials beat it (a
        # trial at chance where none has left it goes on whatever its rank).
        if sum(_better(other, me) for other in seen) >= quota and not (chance and suspended):
            assert decision == STOP
        # (b) a feasible trial dominating every trial recorded so far is kept.
        ok = me[0] is not None and not math.isnan(violation) and violation <= 0 and not chance
        if ok and all(_better(me, other) for other in seen):
            assert decision == CONTINUE
        # (c) an infeasible trial is kept only while feasible ones fill less than the quota.
        feasible = sum(f is not None and not math.isnan(v) and v <= 0 for f, v, _ in seen)
        if me[0] is not None and violation > 0 and decision == CONTINUE:
            assert feasible < quota
        if me[0] is None or math.isnan(violation):  # NaN/missing: behind everyone so far
            assert log["rank"] == n - 1
        seen.append(me)


@settings(max_examples=150, deadline=None, database=None)
@given(
    rows=st.lists(
        st.tuples(st.lists(_VALUES, min_size=2, max_size=2), _VIOLATIONS, _CHANCE),
        min_size=1,
        max_size=15,
    )
)
def test_rank_order_never_puts_a_trial_ahead_of_one_that_beats_it(rows):
    F = np.array([[math.nan if v is None else v for v in values] for values, _, _ in rows])
    violation = np.array([v for _, v, _ in rows])
    chance = np.array([c for _, _, c in rows])
    order = rank_order(F, violation, chance)
    assert sorted(order) == list(range(len(rows)))
    minimised = [_minimised(list(F[i]), ["minimize"] * 2) for i in range(len(rows))]
    entries = [(minimised[i], violation[i], chance[i]) for i in order]
    for ahead in range(len(entries)):
        for behind in range(ahead + 1, len(entries)):
            assert not _better(entries[behind], entries[ahead])


# ---------------------------------------------------------------- a real Ray run

E = 9  # max_epochs; rungs (1, 3) with grace 1, rf 3
# i: (accuracy at epochs 1-2, accuracy from epoch 3, cost, violation). Trials run one at a
# time in grid order, so every rung sees them arrive in that order (two at a time, a loaded
# machine could let a later trial reach a rung first, and the outcome then depended on it).
CURVES = {
    0: (0.80, 0.90, 1.0, 0.0),  # dominates every other feasible trial at every epoch
    1: (0.50, 0.85, 2.0, 0.0),  # a late bloomer, dominated at rung 1 by trial 0
    2: (0.45, 0.50, 2.0, 0.0),  # dominated at rung 1 by trials 0 and 1
    3: (0.40, 0.84, 2.0, 0.0),  # a late bloomer, dominated at rung 1 by all before it
    4: (0.35, 0.40, 2.0, 0.0),
    5: (0.30, 0.35, 2.0, 0.0),
    6: (0.20, 0.30, 0.5, 0.0),  # cheapest: a boundary point of the front despite accuracy
    7: (0.78, 0.55, 1.0, 0.0),  # fast starter, weak finisher
    8: (0.95, 0.99, 0.1, 1.0),  # best on both objectives, but infeasible
}


def curve_trainable(config: dict[str, Any]) -> None:
    early, late, cost, violation = CURVES[config["i"]]
    for epoch in range(1, E + 1):
        acc = early if epoch < 3 else late
        tune.report({"epoch": epoch, "acc": acc, "cost": cost, "npas_violation": violation})


def test_moasha_on_ray_stops_dominated_and_infeasible_trials_at_the_right_rung(
    local_ray, tmp_path
):
    sched = MOASHA(ACC_COST, grace_epochs=1, reduction_factor=3, max_epochs=E)
    assert sched.rungs == (1, 3)
    tuner = tune.Tuner(
        curve_trainable,
        param_space={"i": tune.grid_search(list(CURVES))},
        tune_config=tune.TuneConfig(scheduler=sched, num_samples=1, max_concurrent_trials=1),
        run_config=tune.RunConfig(storage_path=str(tmp_path), name="moasha", verbose=0),
    )
    grid = tuner.fit()
    assert not grid.errors
    epochs = {r.config["i"]: int(r.metrics["epoch"]) for r in grid}
    reported = {r.config["i"]: len(r.metrics_dataframe) for r in grid}
    assert epochs == reported
    # A rung keeps the top floor(n / 3) + 1 of the n recorded there, in arrival order.
    assert epochs == {
        0: E,  # dominates every feasible trial at every rung
        1: 1, 2: 1, 3: 1, 4: 1, 5: 1,  # dominated at rung 1 by enough trials before them
        6: 3,  # the cheapest: a front boundary at rung 1 (kept), second of two at rung 3
        7: 3,  # second on the front at rung 1 (top 3 of 8); behind 0 and 6 at rung 3
        8: 1,  # best on both objectives but infeasible: ranked below every feasible trial
    }  # fmt: skip
    ids = {r.metrics["trial_id"]: r.config["i"] for r in grid}
    log = sched.decisions()
    assert [ids[d["trial_id"]] for d in log if d["rung"] == 1] == list(CURVES)
    # The grid shows exactly what the scheduler decided...
    stops = {ids[d["trial_id"]]: d["rung"] for d in log if d["outcome"] == "stop"}
    assert epochs == {i: stops.get(i, E) for i in CURVES}
    # ...and replaying the arrivals it saw into a fresh scheduler decides the same.
    replay = MOASHA(ACC_COST, grace_epochs=1, reduction_factor=3, max_epochs=E)
    for d in log:
        early, late, cost, violation = CURVES[ids[d["trial_id"]]]
        acc = early if d["rung"] < 3 else late
        _report(replay, d["trial_id"], d["rung"], acc, cost, viol=violation)
    assert replay.decisions() == log


def test_hypervolume_within_front_stops_the_cheapest_net_that_adds_little():
    """The test above, ordered by hypervolume contribution: the cheapest net (0.30 at 300
    params), kept by crowding as a boundary point, is stopped when a net 20 params larger is
    far more accurate; a bad value of the option is refused."""
    rows = [("cheap", 0.30, 300.0), ("good", 0.90, 320.0), ("big", 0.95, 2000.0),
            ("mid", 0.50, 1000.0)]  # fmt: skip
    kept = {}
    for within in ("crowding", "hypervolume"):
        sched = MOASHA(ACC_COST, reduction_factor=3, max_epochs=9, within_front=within)
        for trial_id, acc, cost in rows:
            _report(sched, trial_id, 1, acc, cost)
        late = _report(sched, "late", 1, 0.91, 330.0)  # 5 at the rung: the top 2 go on
        kept[within] = ({d["trial_id"]: d["rank"] for d in sched.decisions()}, late)
    assert kept["crowding"][0]["late"] >= 2 and kept["crowding"][1] == STOP
    assert kept["hypervolume"][0]["late"] <= 1 and kept["hypervolume"][1] == CONTINUE
    with pytest.raises(ConfigError, match="within_front: got 'hv'"):
        MOASHA(ACC_COST, max_epochs=9, within_front="hv")
