"""The statistics every benchmark table states, in one place: a mean with its 95 % t interval,
Welch's two-arm comparison (unequal variances), the paired comparison of arms run on the
same seeds, and a timing table's ratio of medians and 95th percentile. Each is checked on
figures computed by hand (tests/benchmarks_tests/test_stats.py), so a table that quotes one is
only as right as these."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

__all__ = ["mean_ci", "median_ratio", "p95", "paired", "welch", "welch_p"]


def mean_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean, sample standard deviation and the half-width of the mean's 95 % t interval (NaN
    for the last two below two values)."""
    from scipy.stats import t

    n = len(values)
    mean = statistics.fmean(values)
    if n < 2:
        return mean, math.nan, math.nan
    std = statistics.stdev(values)
    return mean, std, t.ppf(0.975, n - 1) * std / math.sqrt(n)


def welch(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """Mean of ``a`` less mean of ``b``, the 95 % Welch interval's half-width, and the two-sided
    Welch p (two arms without spread: no interval, and p 0 when their means differ)."""
    from scipy.stats import t

    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = statistics.fmean(a) - statistics.fmean(b)
    if va + vb == 0:
        return diff, 0.0, 0.0 if diff else 1.0
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = t.ppf(0.975, df) * math.sqrt(va + vb)
    return diff, half, welch_p(a, b)


def welch_p(a: Sequence[float], b: Sequence[float]) -> float:
    """The two-sided p of Welch's t-test: how likely a gap this large is between two arms that
    do not differ (unequal variances)."""
    from scipy.stats import ttest_ind

    return float(ttest_ind(a, b, equal_var=False).pvalue)


def paired(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """Mean of ``a - b`` paired by seed, its 95 % t interval's half-width, and the two-sided
    paired t-test's p (arms run on the same seeds share each seed's split and start)."""
    from scipy.stats import ttest_rel

    diffs = [x - y for x, y in zip(a, b, strict=True)]
    mean, _, half = mean_ci(diffs)
    if len(diffs) < 2 or all(d == diffs[0] for d in diffs):
        return mean, 0.0 if len(diffs) > 1 else math.nan, (0.0 if mean else 1.0)
    return mean, half, float(ttest_rel(a, b).pvalue)


def median_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """The median of ``a`` over the median of ``b``: the overhead or speed-up a timing table
    reports (medians, since a shared machine makes the odd repeat slow)."""
    return statistics.median(a) / statistics.median(b)


def p95(values: Sequence[float]) -> float:
    """The 95th percentile (``statistics.quantiles``' default, exclusive method)."""
    return statistics.quantiles(values, n=20)[-1]
