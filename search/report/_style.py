"""What the report's PNG and interactive figures share: the colours of each kind of trial and
the axis rules, so both renderings mark a trial the same way."""

from __future__ import annotations

import numpy as np

__all__ = ["FEASIBLE", "FRONT", "INFEASIBLE", "KNEE", "LIMIT", "feasible_floor", "log_scale"]

FEASIBLE = "#1f77b4"
INFEASIBLE = "#9a9a9a"
FRONT = "#d62728"
KNEE = "#ffbf00"
LIMIT = "#555555"


def log_scale(x: np.ndarray) -> bool:
    """Log axis when every value is positive and they span more than 50×."""
    x = x[np.isfinite(x)]
    return bool(x.size and x.min() > 0 and x.max() / x.min() > 50)


def feasible_floor(perf: np.ndarray) -> float:
    """Lower y limit: just under the worst feasible trial, so gated trials (recorded with
    accuracy 0, never trained) do not squash the axis; -inf when nothing is feasible."""
    perf = perf[np.isfinite(perf)]
    if not perf.size:
        return -np.inf
    span = perf.max() - perf.min()
    return float(perf.min() - 0.08 * (span if span > 0 else max(abs(perf.min()), 1.0)))
