"""search.pareto._frame: the table a study's trials become follows the storage conventions, and
the study's objectives are read back from its user attr."""

from __future__ import annotations

import math

from search.pareto._frame import objectives_of
from tests.search_tests.studies import ACC_PARAMS, ROWS, npas_frame, npas_study


def test_trials_frame_follows_the_storage_conventions():
    frame = npas_frame(ROWS)
    assert frame["number"].tolist() == list(range(6))
    assert frame["state"].tolist() == ["COMPLETE"] * 4 + ["FAIL", "COMPLETE"]
    assert frame["feasible"].tolist() == [True, True, True, False, False, True]
    assert frame.loc[4, "error"].startswith("NonFiniteLossError")
    assert math.isnan(frame.loc[4, "accuracy"])
    assert {"params_width", "latency_ms", "cond_device", "datetime_complete"} <= set(frame)


def test_objectives_of_reads_the_study_attr():
    assert objectives_of(npas_study(ROWS)) == list(ACC_PARAMS)
