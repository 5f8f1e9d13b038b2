"""search.pareto._study_front: a study frame's front is constraint-aware and says when it is
empty, unknown objectives list what was recorded, and hypervolume grows in completion order."""

from __future__ import annotations

import numpy as np
import pytest

from search.pareto import front_of, hypervolume_by_trial, select
from spaces._errors import ConfigError
from tests.search_tests.studies import ACC_PARAMS, ROWS, npas_frame


def test_front_is_constraint_aware():
    frame = npas_frame(ROWS)
    front = front_of(frame, ACC_PARAMS)
    assert front.numbers == [0, 1, 5] and front.message is None
    # on a subset of objectives: the latency front is the same set here
    assert front_of(frame, ["accuracy", "latency_ms"]).numbers == [0, 1, 5]
    assert front_of(frame, ["accuracy"]).numbers == [0]


def test_no_feasible_trial_is_said():
    frame = npas_frame([{**r, "feasible": False} for r in ROWS if "state" not in r])
    front = front_of(frame, ACC_PARAMS)
    assert front.numbers == [] and "no feasible trial" in front.message
    for spec in ("knee", "pepr:params", "best:accuracy", "asf:1,1", "epsilon:params<=1e9"):
        assert select(frame, spec, ACC_PARAMS) is None


def test_unknown_objective_lists_what_was_recorded():
    with pytest.raises(ConfigError, match=r"'energy_j' is not recorded.*latency_ms"):
        front_of(npas_frame(ROWS), ["accuracy", "energy_j"])


def test_hypervolume_by_trial_follows_completion_order():
    frame = npas_frame(ROWS)
    table, final = hypervolume_by_trial(frame, ACC_PARAMS)
    assert table["number"].tolist() == [0, 1, 2, 3, 5]  # completed only
    hv = table["hypervolume"].to_numpy()
    assert np.all(np.diff(hv) >= 0) and hv[2] == hv[1] and hv[3] == hv[2]  # 2, 3 add nothing
    assert hv[-1] == pytest.approx(final.value) and hv[-1] > hv[1]
