"""Statistics of many seeds of one comparison, as Syne Tune's multi-fidelity comparison states
them: the median, the interquartile mean (IQM: the mean of the middle half, robust to the
seeds that never reach a target) and a percentile bootstrap confidence interval, and a paired
test between two arms run on the same seeds.

Values may be infinite (a seed whose search never reached the target within the time): the
median and the bootstrap are read with order statistics (no interpolation), so an infinite
value counts as larger than every finite one instead of turning the figures into NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import trim_mean, wilcoxon

__all__ = ["Summary", "bootstrap_ci", "iqm", "median", "paired_p", "summarise"]


def _array(values: Sequence[float]) -> np.ndarray:
    arr = np.sort(np.asarray(values, dtype=float))
    if arr.ndim != 1 or arr.size == 0 or np.isnan(arr).any():
        raise ValueError(f"need one or more numbers, none NaN; got {values!r}")
    return arr


def median(values: Sequence[float]) -> float:
    """The median; of an even count, the mean of the middle two (inf when either is)."""
    arr = _array(values)
    n = arr.size
    lo, hi = arr[(n - 1) // 2], arr[n // 2]
    return float(hi if math.isinf(hi) else (lo + hi) / 2)


def iqm(values: Sequence[float]) -> float:
    """The interquartile mean: the mean left once a quarter of the values (rounded down) is
    cut from each end (``scipy.stats.trim_mean``, as rliable and Syne Tune compute it)."""
    return float(trim_mean(_array(values), 0.25))


def bootstrap_ci(
    values: Sequence[float],
    statistic: Callable[[Sequence[float]], float] = iqm,
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """A percentile bootstrap interval of ``statistic`` over the seeds (resampled with
    replacement), its ends order statistics of the resampled values."""
    arr = _array(values)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, arr.size, size=(resamples, arr.size))
    if statistic is iqm:  # all resamples in one call: 2,000 calls took 0.7 s a summary
        stats = np.sort(trim_mean(np.sort(arr[picks], axis=1), 0.25, axis=1))
    else:
        stats = np.sort([statistic(arr[row]) for row in picks])
    alpha = (1 - level) / 2
    lo = stats[math.floor(alpha * (resamples - 1))]
    hi = stats[math.ceil((1 - alpha) * (resamples - 1))]
    return float(lo), float(hi)


def paired_p(a: Sequence[float], b: Sequence[float],
             tolerance: Sequence[float] | None = None) -> float:  # fmt: skip
    """Two-sided Wilcoxon signed-rank p-value of ``a`` against ``b`` paired by seed (1.0 when
    every pair is equal). Infinite values are ranked above every finite one. A pair closer
    than its ``tolerance`` is a tie: two replays that make every decision alike still differ
    by their decisions' CPU seconds, which the replay's clock charges, and a test that ranks
    those microseconds read a rule that made the same decisions in 40 of 50 replays 'later'
    at p 0.0002."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"paired samples must have one value per seed each; got {x.shape}, "
                         f"{y.shape}")  # fmt: skip
    if tolerance is not None:
        with np.errstate(invalid="ignore"):  # inf - inf: equal only if both never reached
            close = (x == y) | (np.abs(x - y) <= np.asarray(tolerance, dtype=float))
        y = np.where(close, x, y)
    big = np.nanmax(np.abs(np.concatenate([x, y])[np.isfinite(np.concatenate([x, y]))]),
                    initial=1.0) * 10  # fmt: skip
    x, y = np.where(np.isinf(x), np.sign(x) * big, x), np.where(np.isinf(y), np.sign(y) * big, y)
    if np.all(x == y):
        return 1.0
    return float(wilcoxon(x, y).pvalue)


def clock_ties(a: Sequence[Mapping[str, float]], b: Sequence[Mapping[str, float]],
               horizon_s: float) -> list[float]:  # fmt: skip
    """Per seed, the reach difference :func:`paired_p` counts as a tie: where the two replays
    made the same decisions (every count alike but the decisions' CPU seconds), the
    difference of those seconds over the horizon, all that the replay's clock can have
    charged one and not the other; 0 where their decisions differ."""
    def alike(x: Mapping[str, float], y: Mapping[str, float]) -> bool:
        keys = (set(x) | set(y)) - {"decision_s"}
        return all(x.get(k) == y.get(k) for k in keys)

    return [abs(x.get("decision_s", 0.0) - y.get("decision_s", 0.0)) / horizon_s
            if alike(x, y) else 0.0 for x, y in zip(a, b, strict=True)]  # fmt: skip


@dataclass(frozen=True)
class Summary:
    """One arm's figure over the seeds."""

    n: int
    median: float
    iqm: float
    ci: tuple[float, float]

    def text(self, digits: int = 2) -> str:
        """``median / IQM [lo, hi]``, as the lab's tables write it."""

        def f(x: float) -> str:
            return "never" if math.isinf(x) else f"{x:.{digits}f}"

        return f"{f(self.median)} / {f(self.iqm)} [{f(self.ci[0])}, {f(self.ci[1])}]"


def summarise(values: Sequence[float], *, seed: int = 0) -> Summary:
    """Median, IQM and the IQM's bootstrap 95 % interval."""
    return Summary(len(values), median(values), iqm(values), bootstrap_ci(values, seed=seed))
