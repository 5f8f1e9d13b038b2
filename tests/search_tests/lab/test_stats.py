"""The lab's statistics: known answers computed by hand, and rules that hold for any sample."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from search.lab._compare import hv_at, hv_curve, reach_time
from search.lab._stats import bootstrap_ci, iqm, median, paired_p, summarise

INF = math.inf


def test_known_answers():
    assert iqm([1, 2, 3, 4, 5, 6, 7, 8]) == 4.5  # the middle four: 3, 4, 5, 6
    assert iqm([10, 1, 2, 3, 100]) == 5.0  # sorted 1 2 3 10 100, one cut each end: 2, 3, 10
    assert iqm([1, 2, 3, INF]) == 2.5  # 2, 3 kept: a seed that never reached is cut
    assert iqm([1, INF, INF, INF]) == INF
    assert median([3, 1, 2]) == 2 and median([1, 2, 3, 4]) == 2.5
    assert median([1, 2, INF, INF]) == INF and median([1, 2, 3, INF]) == 2.5
    assert paired_p([1, 2, 3], [1, 2, 3]) == 1.0
    # ten pairs all shifted the same way: the exact two-sided p is 2 / 2**10
    assert paired_p(range(10), np.arange(10) + 1) == pytest.approx(2 / 1024)
    # the same shift within each pair's tolerance (the decisions' clock): ties, p 1
    assert paired_p(range(10), np.arange(10) + 1e-6, [2e-6] * 10) == 1.0
    assert paired_p(range(10), np.arange(10) + 1, [2e-6] * 10) == pytest.approx(2 / 1024)
    assert summarise([INF] * 4).text() == "never / never [never, never]"
    assert summarise([0.5, 0.5, 1.0, INF]).text(1).startswith("0.8 / 0.8 [0.5, ")


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0, 10) | st.just(INF), min_size=1, max_size=30))
def test_the_figures_lie_within_the_sample_and_the_interval_is_ordered(values):
    lo, hi = min(values) - 1e-9, max(values) + 1e-9  # a mean of equal floats may move 1 ulp
    assert lo <= median(values) <= hi and lo <= iqm(values) <= hi
    ci = bootstrap_ci(values, resamples=200)
    assert lo <= ci[0] <= ci[1] <= hi


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0, 10) | st.just(INF), min_size=1, max_size=30))
def test_the_iqm_interval_in_one_call_is_the_one_of_each_resample_alone(values):
    """The IQM's bootstrap runs on all resamples at once; any other statistic one at a time:
    both read the same resamples, so the IQM's ends are the one-at-a-time path's."""
    one_by_one = bootstrap_ci(values, lambda v: iqm(v), resamples=200)
    assert bootstrap_ci(values, resamples=200) == pytest.approx(one_by_one, rel=1e-12)


def test_hypervolume_curve_reach_and_value_at_a_moment(table):
    """Two points on bounds accuracy 0.5-1, params 0-1000 (flops 0-1, always 0): hand-made."""
    bounds = {"accuracy": (0.5, 1.0), "params": (0.0, 1000.0), "flops_infer": (0.0, 1.0)}
    completed = [(10.0, [0.95, 500.0, 0.0], True), (4.0, [0.75, 100.0, 0.0], True),
                 (20.0, [0.99, 100.0, 0.0], False)]  # fmt: skip
    curve = hv_curve(completed, table, bounds)
    # normalised (0.5, 0.1, 0) then (0.1, 0.5, 0); ref 1.1: 0.6*1.0*1.1 = 0.66, then the
    # union of two such boxes: 0.66 + 0.66 - their overlap 0.6*0.6*1.1 = 0.924
    assert [t for t, _ in curve] == [4.0, 10.0, 20.0]
    assert curve[0][1] == pytest.approx(0.66) and curve[1][1] == pytest.approx(0.924)
    assert curve[2][1] == curve[1][1]  # the infeasible point adds nothing
    assert hv_at(curve, 3.9) == 0.0 and hv_at(curve, 10.0) == pytest.approx(0.924)
    assert reach_time(curve, 0.7) == 10.0 and reach_time(curve, 0.93) == INF
