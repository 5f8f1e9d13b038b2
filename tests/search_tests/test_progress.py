"""The progress view counts every kind of ending and measures the front as search.pareto does."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from search._searcher import Progress
from search._trainable import report_of
from search.pareto import hypervolume, non_dominated

OBJECTIVES = [("accuracy", "maximize"), ("params", "minimize")]
NAMES = [n for n, _ in OBJECTIVES]
DIRECTIONS = [d for _, d in OBJECTIVES]

trials = st.lists(
    st.tuples(st.floats(0, 1), st.floats(10, 1e6), st.booleans(), st.booleans()),
    min_size=1,
    max_size=30,
)  # (accuracy, params, feasible, failed)


@settings(max_examples=60, deadline=None)
@given(trials)
def test_line_counts_and_front_agree_with_pareto(seq):
    view = Progress(OBJECTIVES, total=len(seq), enabled=False)
    for accuracy, params, feasible, failed in seq:
        metrics = {"accuracy": accuracy, "params": params, "feasible": float(feasible)}
        view._add(report_of(None, NAMES, error="boom") if failed else report_of(metrics, NAMES))
    done = [t for t in seq if not t[3]]
    line = view.line()
    infeasible = sum(not t[2] for t in done)
    assert line.startswith(
        f"{len(seq)}/{len(seq)} done, 0 running, {len(seq) - len(done)} failed, "
        f"{infeasible} infeasible"
    )
    ok = [t[2] for t in done]
    if not any(ok):
        assert "front" not in line
        return
    values = np.array([t[:2] for t in done], dtype=float)
    front = int(non_dominated(values, DIRECTIONS, ok).sum())
    hv = hypervolume(values, DIRECTIONS, feasible=ok).value
    match = re.search(r"front (\d+), hypervolume ([0-9.]+)$", line)
    assert match and int(match[1]) == front and abs(float(match[2]) - hv) < 1e-4
