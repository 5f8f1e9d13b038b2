"""search.pareto._disagreement: Kendall τ between indicators and the overlap of their fronts on
a hand-made table; Jaccard."""

from __future__ import annotations

import math

import pytest

from search.pareto import disagreement, jaccard
from tests.search_tests.studies import npas_frame


def test_kendall_tau_and_front_overlap_on_a_hand_made_table():
    rows = [
        {
            "accuracy": 0.6,
            "params": 1.0,
            "flops_infer": 5.0,
            "latency_ms": 1.0,
            "throughput": 100.0,
            "peak_mem_infer_mb": 7.0,
        },
        {
            "accuracy": 0.7,
            "params": 2.0,
            "flops_infer": 4.0,
            "latency_ms": 2.0,
            "throughput": 50.0,
            "peak_mem_infer_mb": 7.0,
        },
        {
            "accuracy": 0.8,
            "params": 3.0,
            "flops_infer": 3.0,
            "latency_ms": 4.0,
            "throughput": 25.0,
            "peak_mem_infer_mb": 7.0,
        },
        {
            "accuracy": 0.9,
            "params": 4.0,
            "flops_infer": 2.0,
            "latency_ms": 8.0,
            "throughput": 12.5,
            "peak_mem_infer_mb": 7.0,
        },
        {
            "accuracy": 0.5,
            "params": 5.0,
            "flops_infer": 1.0,
            "latency_ms": 16.0,
            "throughput": 6.25,
            "feasible": False,
            "peak_mem_infer_mb": 7.0,
        },
    ]
    d = disagreement(npas_frame(rows))
    assert d.n_trials == 4  # the infeasible trial is left out
    assert d.tau.loc["params", "latency_ms"] == pytest.approx(1.0)
    assert d.tau.loc["params", "flops_infer"] == pytest.approx(-1.0)
    # throughput is maximised: oriented as a cost it ranks like latency
    assert d.tau.loc["latency_ms", "throughput"] == pytest.approx(1.0)
    assert d.tau["peak_mem_infer_mb"].isna().all()  # constant: cannot rank
    assert d.fronts["params"] == [0, 1, 2, 3]
    assert d.fronts["flops_infer"] == [3]  # most accurate is also the cheapest by FLOPs
    assert d.overlap.loc["params", "flops_infer"] == pytest.approx(0.25)
    assert d.overlap.loc["params", "latency_ms"] == pytest.approx(1.0)


def test_jaccard():
    assert jaccard([1, 2, 3], [2, 3, 4]) == pytest.approx(0.5)
    assert math.isnan(jaccard([], []))
