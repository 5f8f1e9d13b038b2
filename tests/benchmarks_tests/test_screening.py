"""The screening benchmark: a row's figures on a run whose counts are known, and a short real
run of the searcher with narrowing on the ≤ 697 space (every narrowed trial within the
limit, counted among those sent to training)."""

from __future__ import annotations

from collections import Counter

from tests._support.bundles import load_benchmark


def test_a_row_is_the_arms_counts_and_the_screens_times() -> None:
    bench = load_benchmark("screening")
    found = {"ms": [900.0, 10.0, 30.0, 20.0, 40.0], "trained": 3, "screened": 1,
             "narrowed": 2, "limit_share": [0.9, 0.95], "best": 0.975, "wall": 1.25,
             "reasons": Counter()}  # fmt: skip
    # by hand: 4 proposals, 1 refused (25 %); the first call left out: median of 10, 20, 30,
    # 40 = 25.0, p90 at index int(0.9 * 3) = 2: 30.0; 5 calls for 4 proposals = 1.25
    assert bench._row("p", True, found) == (
        "| p | on | 4 | 1 (25 %) | 3 | 2 | 92 % | 97.50 % | 25.0 | 30.0 | 1.25 | 1.2 |")


def test_narrowed_trials_are_trained_within_the_params_limit() -> None:
    bench = load_benchmark("screening")
    found = bench.run(20, 0, "mnist-record-697", True)
    assert found["trained"] + found["screened"] >= 20
    assert found["narrowed"] <= found["trained"]
    assert len(found["limit_share"]) == found["narrowed"]
    assert all(0 < share <= 1 for share in found["limit_share"])  # params <= 697
    assert len(found["ms"]) >= found["trained"] + found["screened"]  # narrowing screens too
