"""Fronts of a study's frame and the knee selectors that pick one trial from it.

A selector's public ``do`` builds the candidates (completed, feasible trials that are finite in
every objective), normalises the objectives and marks the front; its ``_do`` only chooses. A
selector may return None (nothing qualifies, e.g. no trial under an ε limit) and then the
caller says so. Every :class:`Selection` carries a sentence saying why that trial was chosen.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from pymoo.decomposition.asf import ASF
from pymoo.mcdm.high_tradeoff import HighTradeoffPoints
from pymoo.mcdm.pseudo_weights import PseudoWeights

from objectives.pepr import normalize as normalize_cost
from objectives.pepr import pepr, pepr_weighted
from search._frame import direction_of, usable, values
from search._front import HVResult, hypervolume_history, non_dominated, normalise
from spaces._errors import ConfigError
from spaces._registry import Registry

__all__ = [
    "SELECTORS",
    "Candidates",
    "Front",
    "KneeSelector",
    "Objectives",
    "Selection",
    "front_of",
    "hypervolume_by_trial",
    "resolve_objectives",
    "why_empty",
]

#: Objectives as ``[(name, "minimize" | "maximize"), ...]``, or names whose direction is known.
Objectives = Sequence[tuple[str, str] | str]


def resolve_objectives(frame: pd.DataFrame, objectives: Objectives) -> tuple[tuple[str, str], ...]:
    """Validates objective names against the frame and fills in missing directions."""
    if isinstance(objectives, str) or not objectives:
        raise ConfigError(
            f"objectives must be a non-empty list of names or (name, direction), got "
            f"{objectives!r}"
        )
    pairs = []
    for item in objectives:
        name, direction = (item, None) if isinstance(item, str) else tuple(item)
        if name not in frame.columns:
            recorded = sorted(c for c in frame.columns if not str(c).startswith("params_"))
            raise ConfigError(f"objective {name!r} is not recorded; recorded: {recorded}")
        pairs.append((name, direction or direction_of(name)))
    return tuple(pairs)


@dataclass(frozen=True)
class Front:
    """The feasible Pareto front of a frame on some objectives.

    Attributes:
        objectives: The ``(name, direction)`` pairs sorted on.
        mask: Boolean Series aligned with the frame: True on the front.
        numbers: Trial numbers on the front, ascending.
        message: None, or why the front is empty (no completed or no feasible trial).
    """

    objectives: tuple[tuple[str, str], ...]
    mask: pd.Series
    numbers: list[int]
    message: str | None


def why_empty(frame: pd.DataFrame, names: list[str]) -> str:
    """Why no trial of ``frame`` can be compared on ``names``, in words."""
    complete = frame["state"] == "COMPLETE"
    if not complete.any():
        return f"no completed trial among {len(frame)} trial(s)"
    if not (complete & frame["feasible"]).any():
        return f"no feasible trial: all {int(complete.sum())} completed trial(s) are infeasible"
    return f"no feasible trial has finite values for {names}"


def front_of(frame: pd.DataFrame, objectives: Objectives) -> Front:
    """Non-dominated feasible trials of ``frame`` on ``objectives`` (any subset of metrics)."""
    pairs = resolve_objectives(frame, objectives)
    names = [n for n, _ in pairs]
    ok = usable(frame, names).to_numpy()
    mask = non_dominated(values(frame, names), [d for _, d in pairs], ok)
    series = pd.Series(mask, index=frame.index)
    numbers = sorted(int(n) for n in frame.loc[series, "number"])
    return Front(pairs, series, numbers, None if numbers else why_empty(frame, names))


def hypervolume_by_trial(
    frame: pd.DataFrame,
    objectives: Objectives,
    *,
    bounds: Any = None,
    ref: Any = None,
) -> tuple[pd.DataFrame, HVResult]:
    """Hypervolume of the feasible front after each completed trial, in completion order.

    Bounds come from all feasible trials (unless given) and stay fixed, so the curve never
    decreases. Returns a frame with ``number``, ``datetime_complete``, ``hypervolume`` and the
    final :class:`HVResult`, which states the bounds and reference point.
    """
    pairs = resolve_objectives(frame, objectives)
    names = [n for n, _ in pairs]
    done = frame[frame["state"] == "COMPLETE"]
    done = done.sort_values(["datetime_complete", "number"], kind="stable", na_position="last")
    ok = usable(done, names).to_numpy()
    history, final = hypervolume_history(
        values(done, names), [d for _, d in pairs], feasible=ok, bounds=bounds, ref=ref
    )
    table = done[["number", "datetime_complete"]].reset_index(drop=True)
    table["hypervolume"] = history
    return table, final


@dataclass(frozen=True)
class Selection:
    """One chosen trial and why.

    Attributes:
        number: The Optuna trial number.
        index: The row label of the trial in the frame it was chosen from.
        selector: Name of the selector (or the spec) that chose it.
        reason: A sentence a user can read: the rule, the score and the runner-up context.
        scores: The numbers behind the choice (e.g. ``{"pepr": 0.83}``).
    """

    number: int
    index: Hashable
    selector: str
    reason: str
    scores: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Candidates:
    """What a selector chooses from: usable trials, their normalised objectives and front."""

    frame: pd.DataFrame
    objectives: tuple[tuple[str, str], ...]

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.objectives]

    @property
    def directions(self) -> list[str]:
        return [d for _, d in self.objectives]

    @cached_property
    def front_normalised(self) -> tuple[np.ndarray, np.ndarray]:
        """``(positions of the front, its objectives normalised over the front itself)``:
        0 = the front's ideal point, 1 = its nadir, as pymoo's decision makers expect."""
        positions = np.flatnonzero(self.front)
        points = values(self.frame.iloc[positions], self.names)
        return positions, normalise(points, self.directions)[0]

    @cached_property
    def front(self) -> np.ndarray:
        """Feasible non-dominated candidates on the objectives."""
        feasible = self.frame["feasible"].to_numpy(dtype=bool)
        return non_dominated(values(self.frame, self.names), self.directions, feasible)

    def pick(self, position: int, selector: str, reason: str, **scores: float) -> Selection:
        """The Selection of the candidate at ``position`` (0-based row position)."""
        row = self.frame.iloc[position]
        return Selection(int(row["number"]), self.frame.index[position], selector, reason, scores)

    def describe(self, position: int, columns: Sequence[str] | None = None) -> str:
        """``trial 7 (accuracy=0.91, params=3012)`` for reasons."""
        row = self.frame.iloc[position]
        shown = ", ".join(f"{c}={_fmt(row[c])}" for c in (columns or self.names))
        return f"trial {int(row['number'])} ({shown})"


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float | np.floating) else str(value)


class KneeSelector(ABC):
    """Chooses one trial of a study frame; subclasses implement :meth:`_do`."""

    name: ClassVar[str]
    #: False for selectors that may pick an infeasible (but completed) trial on request.
    feasible_only: ClassVar[bool] = True

    def do(self, frame: pd.DataFrame, objectives: Objectives, **options: Any) -> Selection | None:
        """Selects a trial, or returns None when no trial qualifies.

        Args:
            frame: A study frame (:func:`search._frame.trials_frame`).
            objectives: The objectives the front is taken on.
            **options: The selector's own options (see its class docstring).
        """
        pairs = resolve_objectives(frame, objectives)
        ok = usable(frame, [n for n, _ in pairs], feasible_only=self.feasible_only)
        if not ok.any():
            return None
        return self._do(Candidates(frame[ok], pairs), **options)

    @abstractmethod
    def _do(self, cand: Candidates, **options: Any) -> Selection | None:
        """Chooses among ``cand`` (never empty)."""


SELECTORS: Registry[KneeSelector] = Registry("knee selector")


def _register(cls: type[KneeSelector]) -> type[KneeSelector]:
    """Registers one instance of a selector class under its ``name``."""
    SELECTORS.add(cls.name, cls())
    return cls


def _closest_to_ideal(points: np.ndarray) -> int:
    return int(np.argmin(np.linalg.norm(points, axis=1)))


def _tradeoff_points(F: np.ndarray) -> tuple[np.ndarray | None, str]:
    """pymoo's HighTradeoffPoints, its warnings contained; None with the reason it failed."""
    if len(F) < 3:  # trade-offs are measured against neighbours: two points have none inside
        return None, f"a front of {len(F)} point(s) is too small for HighTradeoffPoints"
    with warnings.catch_warnings():  # pymoo silences warnings globally otherwise
        warnings.simplefilter("ignore")
        try:
            found = HighTradeoffPoints().do(F)
        except (ValueError, IndexError, ZeroDivisionError) as err:
            return None, f"HighTradeoffPoints failed on {len(F)} front point(s) ({err})"
    if found is None or len(found) == 0:
        return None, f"HighTradeoffPoints found no high trade-off point among {len(F)}"
    return np.asarray(found, dtype=int), ""


@_register
class TradeoffSelector(KneeSelector):
    """pymoo HighTradeoffPoints on the normalised feasible front.

    The front point whose least improvement per unit deterioration towards its neighbours is
    an outlier is the knee. When pymoo finds none (small or evenly spread fronts), the front
    point closest to the ideal point (Euclidean distance in normalised objectives) is chosen,
    and the reason says so. With several high trade-off points, the one closest to the ideal.
    """

    name = "tradeoff"

    def _do(self, cand: Candidates, **options: Any) -> Selection:
        _no_options(self.name, options)
        positions, F = cand.front_normalised
        dist = np.linalg.norm(F, axis=1)
        if F.shape[1] < 2:
            best = positions[int(np.argmin(F[:, 0]))]
            return cand.pick(best, self.name, f"best {cand.describe(best)}: one objective")
        found, why = _tradeoff_points(F)
        if found is None:
            best = positions[_closest_to_ideal(F)]
            reason = (
                f"{why}; fell back to the front point closest to the ideal point in "
                f"normalised objectives: {cand.describe(best)}"
            )
            return cand.pick(best, self.name, reason, distance_to_ideal=float(dist.min()))
        chosen = found[_closest_to_ideal(F[found])]
        numbers = [int(cand.frame.iloc[positions[i]]["number"]) for i in found]
        reason = f"high trade-off point of the feasible front: {cand.describe(positions[chosen])}"
        if len(found) > 1:
            reason += f" (closest to the ideal point of the trade-off trials {numbers})"
        return cand.pick(
            positions[chosen], self.name, reason, distance_to_ideal=float(dist[chosen])
        )


def _no_options(name: str, options: Mapping[str, Any]) -> None:
    if options:
        raise ConfigError(f"selector {name!r} takes no options, got {sorted(options)}")


def _weights(name: str, weights: Any, m: int, labels: Sequence[str]) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.shape[0] != m or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ConfigError(
            f"selector {name!r}: weights must be {m} numbers >= 0, not all 0, one per "
            f"objective {list(labels)}, got {weights!r}"
        )
    return w / w.sum()


@_register
class AsfSelector(KneeSelector):
    """pymoo ASF decomposition on the normalised front with user weights.

    Chooses the front point minimising ``max_i F_i / w_i`` (utopian point 0): the point on the
    ray through the weight vector. A larger weight tolerates more loss in that objective
    (pymoo's convention). Options: ``weights`` (one per objective, >= 0; normalised to sum 1).
    """

    name = "asf"

    def _do(self, cand: Candidates, *, weights: Any) -> Selection:
        w = _weights(self.name, weights, len(cand.names), cand.names)
        positions, F = cand.front_normalised
        scores = ASF().do(F, w)
        best = int(np.argmin(scores))
        reason = (
            f"smallest achievement scalarisation max_i F_i/w_i = {scores[best]:.4g} with "
            f"weights {dict(zip(cand.names, np.round(w, 4).tolist(), strict=True))} on the "
            f"normalised feasible front: {cand.describe(positions[best])}"
        )
        return cand.pick(positions[best], self.name, reason, asf=float(scores[best]))


@_register
class PseudoWeightSelector(KneeSelector):
    """pymoo PseudoWeights on the front: the point whose pseudo-weights match the user's.

    A point's pseudo-weight for an objective is its normalised distance from the worst front
    value, so weights say how much each objective matters (the reverse of ASF's convention).
    Options: ``weights`` (one per objective, >= 0; normalised to sum 1).
    """

    name = "pseudo"

    def _do(self, cand: Candidates, *, weights: Any) -> Selection:
        w = _weights(self.name, weights, len(cand.names), cand.names)
        positions, F = cand.front_normalised
        if len(positions) == 1:
            reason = f"the only feasible front point: {cand.describe(positions[0])}"
            return cand.pick(positions[0], self.name, reason)
        with np.errstate(divide="ignore", invalid="ignore"):
            best, pseudo = PseudoWeights(w).do(F, return_pseudo_weights=True)
        best = int(best)
        shown = dict(zip(cand.names, np.round(pseudo[best], 3).tolist(), strict=True))
        reason = (
            f"pseudo-weights {shown} closest to the requested "
            f"{dict(zip(cand.names, np.round(w, 3).tolist(), strict=True))}: "
            f"{cand.describe(positions[best])}"
        )
        return cand.pick(positions[best], self.name, reason)


def _column(cand: Candidates, name: str) -> np.ndarray:
    if name not in cand.frame.columns:
        recorded = sorted(c for c in cand.frame.columns if not str(c).startswith("params_"))
        raise ConfigError(f"metric {name!r} is not recorded; recorded: {recorded}")
    return values(cand.frame, [name])[:, 0]


def _first_best(keys: list[np.ndarray]) -> int:
    """Position of the lexicographic minimum of ``keys`` (first key most important)."""
    order = np.lexsort(tuple(reversed(keys)))
    return int(order[0])


@_register
class PeprSelector(KneeSelector):
    """Argmax of PePR = P / (1 + Σ w_i R_i / α) over the feasible trials (objectives.pepr).

    Costs are normalised over the feasible trials (``minmax`` unless ``normalize`` says
    otherwise), so the argmax lies on the (max P, min cost) front (pepr.txt §4). Ties go to
    the higher performance, then the lower weighted cost, then the lower trial number.

    Options: ``indicators`` (a name, a list of names with equal weights, or a mapping name →
    weight; each a minimised metric), ``alpha`` (default 1), ``normalize`` (default
    ``"minmax"``), ``performance`` (default ``"accuracy"``, in ``[0, 1]``).
    """

    name = "pepr"

    def _do(
        self,
        cand: Candidates,
        *,
        indicators: str | Sequence[str] | Mapping[str, float],
        alpha: float = 1.0,
        normalize: Any = "minmax",
        performance: str = "accuracy",
    ) -> Selection | None:
        weights = _indicator_weights(indicators)
        for name in weights:
            if direction_of(name, list(cand.objectives)) != "minimize":
                raise ConfigError(f"pepr needs costs (minimised metrics), {name!r} is maximised")
        ok = usable(cand.frame, [performance, *weights]).to_numpy()
        if not ok.any():
            return None
        sub = Candidates(cand.frame[ok], cand.objectives)
        p = _column(sub, performance)
        costs = {n: _column(sub, n) for n in weights}
        if len(weights) == 1:
            score = pepr(p, next(iter(costs.values())), normalize=normalize, alpha=alpha)
        else:
            score = pepr_weighted(p, costs, weights, normalize=normalize, alpha=alpha)
        combined = sum(w * normalize_cost(costs[n], normalize) for n, w in weights.items())
        best = _first_best([-score, -p, np.asarray(combined), sub.frame["number"].to_numpy()])
        label = "+".join(f"{w:g}*{n}" if len(weights) > 1 else n for n, w in weights.items())
        reason = (
            f"highest PePR_{label} (α={alpha:g}, {normalize} normalisation over the "
            f"{len(p)} feasible trial(s)) = {score[best]:.4f}: "
            f"{sub.describe(best, [performance, *weights])}"
        )
        return sub.pick(best, self.name, reason, pepr=float(score[best]))


def _indicator_weights(indicators: Any) -> dict[str, float]:
    if isinstance(indicators, str):
        return {indicators: 1.0}
    if isinstance(indicators, Mapping):
        total = sum(indicators.values())
        if not indicators or total <= 0 or min(indicators.values()) < 0:
            raise ConfigError(f"pepr weights must be >= 0 and not all 0, got {indicators!r}")
        return {str(n): float(w) / total for n, w in indicators.items()}
    names = list(indicators)
    if not names:
        raise ConfigError("pepr needs at least one indicator, got none")
    return {str(n): 1.0 / len(names) for n in names}


@_register
class EpsilonSelector(KneeSelector):
    """ε-constraint: the best performance among feasible trials whose indicator is within X.

    Options: ``indicator``, ``limit`` (a number), ``op`` (``"<="`` default, or ``">="`` for
    maximised indicators such as throughput), ``performance`` (default ``"accuracy"``).
    Ties go to the better indicator value, then the lower trial number. None when no trial is
    within the limit.
    """

    name = "epsilon"

    def _do(
        self,
        cand: Candidates,
        *,
        indicator: str,
        limit: float,
        op: str = "<=",
        performance: str = "accuracy",
    ) -> Selection | None:
        if op not in ("<=", ">="):
            raise ConfigError(f"epsilon op must be '<=' or '>=', got {op!r}")
        ind = _column(cand, indicator)
        perf = _column(cand, performance)
        within = (ind <= limit) if op == "<=" else (ind >= limit)
        within &= np.isfinite(perf)
        if not within.any():
            return None
        pos = np.flatnonzero(within)
        sign_p = -1.0 if direction_of(performance, list(cand.objectives)) == "maximize" else 1.0
        sign_i = 1.0 if op == "<=" else -1.0
        best = pos[_first_best([sign_p * perf[pos], sign_i * ind[pos], pos])]
        reason = (
            f"best {performance} among the {len(pos)} feasible trial(s) with {indicator} "
            f"{op} {limit:g}: {cand.describe(best, [performance, indicator])}"
        )
        return cand.pick(best, self.name, reason)


@_register
class BestSelector(KneeSelector):
    """The feasible trial with the best value of one metric (its direction from the study's
    objectives or the indicator registry). Ties go to front trials, then the lower number.
    Option: ``metric``.
    """

    name = "best"

    def _do(self, cand: Candidates, *, metric: str) -> Selection | None:
        column = _column(cand, metric)
        finite = np.isfinite(column)
        if not finite.any():
            return None
        sign = -1.0 if direction_of(metric, list(cand.objectives)) == "maximize" else 1.0
        key = np.where(finite, sign * column, np.inf)
        best = _first_best([key, ~cand.front, np.arange(len(key))])
        reason = f"best {metric} among the feasible trials: {cand.describe(best, [metric])}"
        return cand.pick(best, self.name, reason)


@_register
class TrialSelector(KneeSelector):
    """The trial with a given number, if it completed (feasible or not: the reason says).

    Option: ``number``.
    """

    name = "trial"
    feasible_only = False

    def _do(self, cand: Candidates, *, number: int) -> Selection:
        hits = np.flatnonzero(cand.frame["number"].to_numpy() == number)
        if not hits.size:
            raise ConfigError(
                f"trial {number} is not a completed trial with finite objectives; "
                f"completed: {sorted(int(n) for n in cand.frame['number'])}"
            )
        pos = int(hits[0])
        status = "feasible" if bool(cand.frame.iloc[pos]["feasible"]) else "INFEASIBLE"
        on_front = " on the front" if cand.front[pos] and status == "feasible" else ""
        reason = f"requested by number: {cand.describe(pos)}, {status}{on_front}"
        return cand.pick(pos, self.name, reason)
