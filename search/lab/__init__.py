"""The scheduler lab: record learning curves once, replay any search on a simulated clock.

A finished npas study is a curve table (:class:`CurveTable`); :func:`replay` runs the real
searcher, optimiser and scheduler on it with a simulated clock, and :mod:`search.lab._stats`
holds the statistics that compare many seeds of such replays.
"""

from search.lab._compare import (
    MAX_SEEDS,
    Arm,
    Comparison,
    Run,
    hv_at,
    hv_curve,
    reach_time,
    usable_jobs,
)
from search.lab._replay import SCHEDULER_ARMS, NearestRow, ReplayResult, ReplaySpec, replay
from search.lab._table import CurveRow, CurveTable
from search.lab._whatif import what_if

__all__ = [
    "MAX_SEEDS",
    "SCHEDULER_ARMS",
    "Arm",
    "Comparison",
    "CurveRow",
    "CurveTable",
    "NearestRow",
    "ReplayResult",
    "ReplaySpec",
    "Run",
    "hv_at",
    "hv_curve",
    "reach_time",
    "replay",
    "usable_jobs",
    "what_if",
]
