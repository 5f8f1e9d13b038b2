"""lab_pairs: an arm against another, paired by seed, on figures worked out by hand."""

from __future__ import annotations

import math

import pytest

from tests._support.bundles import load_benchmark


def test_an_arm_against_another_on_figures_worked_out_by_hand():
    pairs = load_benchmark("lab_pairs")
    reach = [0.2, 0.3, math.inf, 0.4, 0.5, 0.6]
    same = {"started": 9, "completed": 4}  # the same decisions, clocks 1 s apart of 100 s
    clock = [{**same, "decision_s": 1.5}] * 6, [{**same, "decision_s": 0.5}] * 6
    blocks = {"tpe-W2": {"horizon_s": 100.0, "arms": {
        "new": {"regret@1": [1, 2, 3, 4, 5, 6], "reach": reach, "counts": clock[0]},
        "fifo": {"regret@1": [2, 4, 6, 8, 10, 12], "reach": reach, "counts": clock[1]},
    }}}  # fmt: skip
    (row,) = pairs.pairs(blocks, "new", ["fifo"])
    # IQM of six: one cut from each end, the mean of the middle four: 3.5 and 7.0
    assert row["regret"] == pytest.approx((3.5, 7.0))
    # six differences, all one way and untied: the exact two-sided p is 2 / 2**6
    assert row["regret_p"] == pytest.approx(2 / 64)
    # sorted 0.2, 0.3, 0.4, 0.5, 0.6, never: the middle two's mean; equal pairs: p 1
    assert row["reach"] == pytest.approx((0.45, 0.45)) and row["reach_p"] == 1.0
    assert pairs.line(row).startswith("tpe-W2: new vs fifo: regret@100 % IQM 3.5000 vs 7.0000")
    # every reach later by 0.005 of the horizon: within the clocks' 0.01, ties (p 1); by
    # 0.05: five differences all one way ('never' equals 'never'): p 2 / 2**5
    arms = blocks["tpe-W2"]["arms"]
    arms["fifo"]["reach"] = [r - 0.005 for r in reach]
    assert pairs.pairs(blocks, "new", ["fifo"])[0]["reach_p"] == 1.0
    arms["fifo"]["reach"] = [r - 0.05 for r in reach]
    assert pairs.pairs(blocks, "new", ["fifo"])[0]["reach_p"] == pytest.approx(2 / 32)
    # other decisions (one more trial started): no tie, whatever the clocks
    arms["fifo"]["reach"] = [r - 0.005 for r in reach]
    arms["fifo"]["counts"] = [{**same, "started": 10, "decision_s": 0.5}] * 6
    assert pairs.pairs(blocks, "new", ["fifo"])[0]["reach_p"] == pytest.approx(2 / 32)
