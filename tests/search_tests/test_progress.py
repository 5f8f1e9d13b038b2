"""The progress view's hypervolume never goes down as trials arrive, whatever they score."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from search._searcher import Progress
from search._trainable import report_of

OBJECTIVES = [("accuracy", "maximize"), ("params", "minimize")]

trials = st.lists(
    st.tuples(
        st.floats(0, 1),
        st.floats(10, 1e6),
        st.booleans(),  # feasible
        st.booleans(),  # failed
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(trials)
def test_hypervolume_never_decreases(seq):
    view = Progress(OBJECTIVES, enabled=False)
    last = 0.0
    for accuracy, params, feasible, failed in seq:
        metrics = {"accuracy": accuracy, "params": params, "feasible": float(feasible)}
        view._add(report_of(None, ["accuracy", "params"], error="boom") if failed
                  else report_of(metrics, ["accuracy", "params"]))  # fmt: skip
        hv = view.hypervolume()
        assert math.isfinite(hv) and hv >= last - 1e-12
        last = hv
    done = len(seq)
    failed = sum(f for *_, f in seq)
    assert view.line().startswith(f"{done} done, 0 running, {failed} failed")


def test_the_line_counts_and_measures():
    view = Progress(OBJECTIVES, total=4, enabled=False)
    for accuracy, params in [(0.5, 100.0), (0.9, 1000.0), (0.4, 500.0)]:
        view._add(report_of({"accuracy": accuracy, "params": params}, ["accuracy", "params"]))
    view._add(report_of(None, ["accuracy", "params"], error="ValueError: x"))
    line = view.line()
    assert line.startswith("4/4 done, 0 running, 1 failed, 0 infeasible, front 2, hypervolume")
    assert view.hypervolume() > 0
