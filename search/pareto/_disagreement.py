"""How far the cost indicators disagree: the "efficiency misnomer" made measurable.

Dehghani et al. show that parameters, FLOPs, latency and throughput can rank the same models
differently, so a model "efficient" by one is not by another. Over a study's feasible trials
this module gives, for every pair of cost indicators, Kendall's τ between their rankings and
the overlap (Jaccard index) of the accuracy-vs-indicator Pareto sets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from search._directions import minimisation_sign
from search.pareto._frame import cost_indicators, direction_of, usable, values
from search.pareto._front import non_dominated
from search.record import Column

__all__ = ["Disagreement", "disagreement", "jaccard"]


@dataclass(frozen=True)
class Disagreement:
    """Pairwise agreement of cost indicators over a study's feasible trials.

    Attributes:
        indicators: The indicators compared, in order.
        tau: Kendall τ-b between each pair, both oriented as costs (maximised indicators
            negated), over the trials where both are finite. 1 = the same ranking; NaN when
            an indicator is constant or fewer than two trials have both.
        overlap: Jaccard index of the two accuracy-vs-indicator Pareto sets (trial numbers);
            NaN when both sets are empty.
        fronts: Trial numbers on each accuracy-vs-indicator front.
        n_trials: Feasible completed trials considered.
    """

    indicators: list[str]
    tau: pd.DataFrame
    overlap: pd.DataFrame
    fronts: dict[str, list[int]]
    n_trials: int


def jaccard(a: Sequence[int], b: Sequence[int]) -> float:
    """``|A ∩ B| / |A ∪ B|``; NaN when both are empty."""
    sa, sb = set(a), set(b)
    union = sa | sb
    return len(sa & sb) / len(union) if union else float("nan")


def _front(frame: pd.DataFrame, performance: str, indicator: str) -> list[int]:
    ok = usable(frame, [performance, indicator])
    sub = frame[ok]
    dirs = [direction_of(performance), direction_of(indicator)]
    mask = non_dominated(values(sub, [performance, indicator]), dirs)
    return sorted(int(n) for n in sub.loc[mask, Column.NUMBER])


def disagreement(
    frame: pd.DataFrame,
    indicators: Sequence[str] | None = None,
    *,
    performance: str = "accuracy",
) -> Disagreement:
    """Kendall τ and Pareto-set overlap for every pair of cost indicators.

    Args:
        frame: A study frame (:func:`search.pareto._frame.trials_frame`).
        indicators: Indicators to compare; None takes every registered indicator recorded with
            a finite value. Names not recorded are dropped.
        performance: The metric the Pareto sets trade against (maximised).
    """
    names = (
        cost_indicators(frame)
        if indicators is None
        else [n for n in indicators if n in frame.columns]
    )
    feasible = frame[usable(frame, [])]
    oriented = pd.DataFrame(
        {n: values(feasible, [n])[:, 0] * minimisation_sign(direction_of(n)) for n in names}
    )
    oriented = oriented.replace([np.inf, -np.inf], np.nan)
    tau = oriented.corr(method="kendall", min_periods=2) if names else pd.DataFrame()
    constant = [n for n in names if oriented[n].nunique(dropna=True) < 2]
    tau.loc[constant, :] = np.nan
    tau.loc[:, constant] = np.nan
    fronts = {n: _front(frame, performance, n) for n in names} if performance in frame else {}
    overlap = pd.DataFrame(
        [[jaccard(fronts.get(a, []), fronts.get(b, [])) for b in names] for a in names],
        index=names,
        columns=names,
        dtype=float,
    )
    return Disagreement(
        list(names), tau.reindex(index=names, columns=names), overlap, fronts, len(feasible)
    )
