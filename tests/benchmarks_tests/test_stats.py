"""The benchmarks' statistics (benchmarks/stats.py) on figures computed by hand: the mean's t
interval, Welch's comparison of two arms, and the paired comparison of arms on the same seeds."""

from __future__ import annotations

import math

import pytest

from tests._support.bundles import load_benchmark


def test_the_interval_and_welch_s_test_on_figures_computed_by_hand():
    bench = load_benchmark("stats")
    mean, std, half = bench.mean_ci([1.0, 2.0, 3.0])
    assert (mean, std) == (2.0, 1.0) and half == pytest.approx(4.3027 / 3**0.5, abs=1e-4)
    # 1, 2, 3 against 4, 5, 6: t = -3 / sqrt(2/3) = -3.674 on 4 degrees of freedom.
    diff, half, p = bench.welch([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert diff == -3.0 and half == pytest.approx(2.7764 * (2 / 3) ** 0.5, abs=1e-4)
    assert p == pytest.approx(0.02131, abs=1e-4)


def test_the_paired_difference_on_figures_computed_by_hand():
    """Differences 0.1, 0.2, 0.3: mean 0.2, standard error 0.1 / √3, t = 2√3 on 2 degrees of
    freedom, whose two-sided p is 1 - t / √(t² + 2) = 1 - √(12/14) = 0.07418."""
    bench = load_benchmark("stats")
    mean, half, p = bench.paired([0.6, 0.7, 0.8], [0.5, 0.5, 0.5])
    assert mean == pytest.approx(0.2) and half == pytest.approx(4.3027 * 0.1 / 3**0.5, abs=1e-4)
    assert p == pytest.approx(1 - (12 / 14) ** 0.5, abs=1e-5)
    assert bench.paired([0.75, 0.5], [0.5, 0.25]) == (0.25, 0.0, 0.0)  # the same on every seed


def test_welch_of_two_arms_without_spread_says_so():
    """[1, 1] against [0, 0]: no variance, so no interval, and the gap is certain (p 0)."""
    bench = load_benchmark("stats")
    assert bench.welch([1.0, 1.0], [0.0, 0.0]) == (1.0, 0.0, 0.0)
    assert bench.welch([1.0, 1.0], [1.0, 1.0]) == (0.0, 0.0, 1.0)
    mean, std, half = bench.mean_ci([0.5])
    assert mean == 0.5 and math.isnan(std) and math.isnan(half)


def test_a_timing_tables_ratio_of_medians_and_95th_percentile():
    """Medians 2 and 2 (the slow 100 s repeat does not move the base): 1.0; medians 3 and 2:
    1.5. Of 1..20, the 95th percentile sits at (20 + 1) · 19/20 = 19.95 of the sorted values:
    19 + 0.95 · (20 − 19)."""
    bench = load_benchmark("stats")
    assert bench.median_ratio([3.0, 1.0, 2.0], [1.0, 2.0, 100.0]) == 1.0
    assert bench.median_ratio([2.0, 4.0], [1.0, 3.0]) == 1.5
    assert bench.p95([float(v) for v in range(1, 21)]) == pytest.approx(19.95)
