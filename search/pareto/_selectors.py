"""Selectors: the rules that pick one trial of a study's frame (a knee, a PePR argmax, an
ε-constraint, ...), and the one-string specs that name them (``--select``).

A selector's public ``do`` builds the candidates (completed, feasible trials that are finite in
every objective), normalises the objectives and marks the front; its ``_do`` only chooses. A
selector may return None (nothing qualifies, e.g. no trial under an ε limit) and then the
caller says so. Every :class:`Selection` carries a sentence saying why that trial was chosen.
A new selector is one registered class: its ``forms`` (the spec forms it accepts, shown in
errors and the CLI's help) and ``parse`` (spec body → options) live on it.
"""

from __future__ import annotations

import re
import warnings
from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from pymoo.decomposition.asf import ASF
from pymoo.mcdm.high_tradeoff import HighTradeoffPoints
from pymoo.mcdm.pseudo_weights import PseudoWeights

from search._directions import minimisation_sign
from search._format import format_value
from search.pareto._frame import direction_of, usable, values
from search.pareto._front import non_dominated, normalise
from search.pareto._study_front import (
    Objectives,
    duplicates,
    resolve_objectives,
    said_duplicates,
)
from search.record import Column, Metric, StudyAttr
from spaces import ConfigError, Registry, did_you_mean

__all__ = [
    "SELECTORS",
    "Candidates",
    "Selection",
    "Selector",
    "forms",
    "parse_spec",
    "select",
]


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
        feasible = self.frame[Column.FEASIBLE].to_numpy(dtype=bool)
        return non_dominated(values(self.frame, self.names), self.directions, feasible)

    def pick(self, position: int, selector: str, reason: str, **scores: float) -> Selection:
        """The Selection of the candidate at ``position`` (0-based row position)."""
        row = self.frame.iloc[position]
        number = int(row[Column.NUMBER])
        return Selection(number, self.frame.index[position], selector, reason, scores)

    def describe(self, position: int, columns: Sequence[str] | None = None) -> str:
        """``trial 7 (accuracy=0.91, params=3012)`` for reasons."""
        row = self.frame.iloc[position]
        shown = ", ".join(f"{c}={format_value(row[c], digits=4)}" for c in (columns or self.names))
        return f"trial {int(row[Column.NUMBER])} ({shown})"


class Selector(ABC):
    """Chooses one trial of a study frame; subclasses implement :meth:`_do`."""

    name: ClassVar[str]
    #: The spec forms it accepts, as shown in errors and the CLI's help.
    forms: ClassVar[tuple[str, ...]]
    #: False for selectors that may pick an infeasible (but completed) trial on request.
    feasible_only: ClassVar[bool] = True
    #: Whether trials with the same config and objective values are one candidate (the first
    #: stands for the others, and the reason says so); False for a choice by trial number.
    collapses: ClassVar[bool] = True

    def do(self, frame: pd.DataFrame, objectives: Objectives, **options: Any) -> Selection | None:
        """Selects a trial, or returns None when no trial qualifies.

        Args:
            frame: A study frame (:func:`search.pareto._frame.trials_frame`).
            objectives: The objectives the front is taken on.
            **options: The selector's own options (see its class docstring).
        """
        pairs = resolve_objectives(frame, objectives)
        names = [n for n, _ in pairs]
        ok = usable(frame, names, feasible_only=self.feasible_only)
        if not ok.any():
            return None
        candidates = frame[ok]
        extra = [n for n in self.reads(**options) if n not in names and n in frame.columns]
        read = [*names, *extra]
        repeats = duplicates(candidates, read) if self.collapses else {}
        hidden = [n for rest in repeats.values() for n in rest]
        chosen = self._do(Candidates(candidates[~candidates[Column.NUMBER].isin(hidden)], pairs),
                          **options)  # fmt: skip
        if chosen is None or chosen.number not in repeats:
            return chosen
        return replace(chosen, reason=chosen.reason + said_duplicates(repeats[chosen.number]))

    # Each subclass declares its own keyword options; mypy accepts any override of a method
    # taking `*args: Any, **options: Any`. Callers pass the options by keyword.

    @abstractmethod
    def _do(self, cand: Candidates, *args: Any, **options: Any) -> Selection | None:
        """Chooses among ``cand`` (never empty)."""

    def reads(self, **options: Any) -> list[str]:
        """The metrics the choice reads besides the objectives: trials the same on the
        objectives but not on these are different candidates."""
        return []

    def why_none(self, frame: pd.DataFrame, *args: Any, **options: Any) -> str | None:
        """Why :meth:`do` chose no trial, beyond an empty front (None: nothing more to say)."""
        return None

    def parse(self, spec: str, body: str) -> dict[str, Any]:
        """The options of a spec ``<name>:<body>``; a selector without options takes none."""
        if body:
            raise _bad(spec, f"{self.name!r} takes no options")
        return {}


SELECTORS: Registry[Selector] = Registry("selector")


def _register(cls: type[Selector]) -> type[Selector]:
    """Registers one instance of a selector class under its ``name``."""
    SELECTORS.add(cls.name, cls())
    return cls


def _closest_to_ideal(points: np.ndarray) -> int:
    return int(np.argmin(np.linalg.norm(points, axis=1)))


def _tradeoff_points(F: np.ndarray) -> tuple[np.ndarray | None, str]:
    """pymoo's HighTradeoffPoints on the distinct points of ``F`` (equal points have no
    trade-off between them: 66 equal ones made it fail with "zero-size array to reduction
    operation maximum"), its warnings contained; positions in ``F`` (the first of equal
    ones), or None with the reason it found none."""
    distinct, first = np.unique(F, axis=0, return_index=True)
    if len(distinct) < 3:  # trade-offs are measured against neighbours: two points have none
        return None, (f"a front of {len(distinct)} distinct point(s) is too small for "
                      "HighTradeoffPoints")  # fmt: skip
    with warnings.catch_warnings():  # pymoo silences warnings globally otherwise
        warnings.simplefilter("ignore")
        try:
            found = HighTradeoffPoints().do(distinct)
        except (ValueError, IndexError, ZeroDivisionError) as err:
            return None, f"HighTradeoffPoints failed on {len(distinct)} front point(s) ({err})"
    if found is None or len(found) == 0:
        return None, f"HighTradeoffPoints found no high trade-off point among {len(distinct)}"
    return first[np.asarray(found, dtype=int)], ""


@_register
class TradeoffSelector(Selector):
    """pymoo HighTradeoffPoints on the normalised feasible front.

    The front point whose least improvement per unit deterioration towards its neighbours is
    an outlier is the knee. When pymoo finds none (small or evenly spread fronts), the front
    point closest to the ideal point (Euclidean distance in normalised objectives) is chosen,
    and the reason says so. With several high trade-off points, the one closest to the ideal.
    """

    name = "tradeoff"
    forms = ("knee", "tradeoff")

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
        numbers = [int(cand.frame.iloc[positions[i]][Column.NUMBER]) for i in found]
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


class _WeightedSelector(Selector):
    """A selector over the normalised front with one user weight per objective."""

    def parse(self, spec: str, body: str) -> dict[str, Any]:
        return _parse_weights(spec, body)

    def _weighted_front(
        self, cand: Candidates, weights: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(weights normalised to sum 1, front positions, the front normalised)``."""
        w = _weights(self.name, weights, len(cand.names), cand.names)
        return (w, *cand.front_normalised)


@_register
class AsfSelector(_WeightedSelector):
    """pymoo ASF decomposition on the normalised front with user weights.

    Chooses the front point minimising ``max_i F_i / w_i`` (utopian point 0): the point on the
    ray through the weight vector. A larger weight tolerates more loss in that objective
    (pymoo's convention). Options: ``weights`` (one per objective, >= 0; normalised to sum 1).
    """

    name = "asf"
    forms = ("asf:<w1>,<w2>,...",)

    def _do(self, cand: Candidates, *, weights: Any) -> Selection:
        w, positions, F = self._weighted_front(cand, weights)
        scores = ASF().do(F, w)
        best = int(np.argmin(scores))
        reason = (
            "smallest achievement scalarisation max_i F_i/w_i = "
            f"{format_value(scores[best], digits=4)} with weights "
            f"{dict(zip(cand.names, np.round(w, 4).tolist(), strict=True))} on the normalised "
            f"feasible front: {cand.describe(positions[best])}"
        )
        return cand.pick(positions[best], self.name, reason, asf=float(scores[best]))


@_register
class PseudoWeightSelector(_WeightedSelector):
    """pymoo PseudoWeights on the front: the point whose pseudo-weights match the user's.

    A point's pseudo-weight for an objective is its normalised distance from the worst front
    value, so weights say how much each objective matters (the reverse of ASF's convention).
    Options: ``weights`` (one per objective, >= 0; normalised to sum 1).
    """

    name = "pseudo"
    forms = ("pseudo:<w1>,<w2>,...",)

    def _do(self, cand: Candidates, *, weights: Any) -> Selection:
        w, positions, F = self._weighted_front(cand, weights)
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


def recorded_metrics(frame: pd.DataFrame) -> list[str]:
    """The metrics a study frame holds: its numeric columns but the trial's own fields, the
    sampled parameters and the measurement conditions (not ``artifact`` or
    ``energy_source``, which are text)."""
    return sorted(
        str(c)
        for c in frame.columns
        if c not in Column.FIXED
        and not str(c).startswith((Column.PARAMS_PREFIX, Metric.CONDITION_PREFIX))
        and pd.to_numeric(frame[c], errors="coerce").notna().any()
    )


def _require(frame: pd.DataFrame, names: Sequence[str]) -> None:
    """Names the first metric of ``names`` this search did not record, and what it did."""
    for name in names:
        if name not in frame.columns:
            recorded = recorded_metrics(frame)
            raise ConfigError(
                f"metric {name!r} was not recorded by this search"
                f"{did_you_mean(name, recorded)}; recorded: {', '.join(recorded) or 'none'}"
            )


def _column(cand: Candidates, name: str) -> np.ndarray:
    _require(cand.frame, [name])
    return values(cand.frame, [name])[:, 0]


#: The validation metrics a selection chooses on instead.
_VALIDATION = "accuracy, val_loss"


def _chosen_on_test(spec: str, names: Sequence[str]) -> None:
    """Refuses a spec that chooses on a test-set metric (recorded per trial only with
    ``report_test``): a trial chosen on it would report an optimistic test accuracy."""
    from search.config import REPORTED_ONLY  # the indicator registry: torch

    for name in names:
        if name in REPORTED_ONLY:
            raise _bad(
                spec,
                f"{name!r} is measured on the test set, which is never chosen on (a trial "
                "picked by its test score would report an optimistic test score; search "
                f"export reads it once for the chosen model); choose on validation "
                f"({_VALIDATION})",
            )


def _first_best(keys: list[np.ndarray]) -> int:
    """Position of the lexicographic minimum of ``keys`` (first key most important)."""
    order = np.lexsort(tuple(reversed(keys)))
    return int(order[0])


@_register
class PeprSelector(Selector):
    """Argmax of PePR = P / (1 + Σ w_i R_i / α) over the feasible trials (objectives.pepr).

    Costs are normalised over the feasible trials (``minmax`` unless ``normalize`` says
    otherwise), so the argmax lies on the (max P, min cost) front (pepr.txt §4). Ties go to
    the higher performance, then the lower weighted cost, then the lower trial number.

    Options: ``indicators`` (a name, a list of names with equal weights, or a mapping name →
    weight; each a minimised metric), ``alpha`` (default 1), ``normalize`` (default
    ``"minmax"``), ``performance`` (default ``"accuracy"``, in ``[0, 1]``).
    """

    name = "pepr"
    forms = (
        "pepr:<indicator>[+<indicator>...][:alpha=<a>][:normalize=minmax|max]",
        "pepr:<w>*<indicator>+<w>*<indicator>",
    )

    def parse(self, spec: str, body: str) -> dict[str, Any]:
        head, *opts = body.split(":")
        weights: dict[str, float] = {}
        for term in head.split("+"):
            match = _TERM.match(term.strip())
            if not match:
                raise _bad(spec, f"{term!r} is not an indicator name or <weight>*<name>")
            w, name = match.groups()
            weights[name] = _number(spec, w, "a weight") if w is not None else 1.0
        _chosen_on_test(spec, list(weights))
        options: dict[str, Any] = {"indicators": weights}
        for opt in opts:
            key, sep, value = opt.partition("=")
            if key == "alpha" and sep:
                options["alpha"] = _number(spec, value, "alpha")
            elif key == "normalize" and value in ("minmax", "max"):
                options["normalize"] = value
            else:
                raise _bad(spec, f"unknown pepr option {opt!r} (alpha=<a>, normalize=minmax|max)")
        return options

    def reads(self, **options: Any) -> list[str]:
        return [options.get("performance", "accuracy"), *_indicator_weights(options["indicators"])]

    def _do(
        self,
        cand: Candidates,
        *,
        indicators: str | Sequence[str] | Mapping[str, float],
        alpha: float = 1.0,
        normalize: Any = "minmax",
        performance: str = "accuracy",
    ) -> Selection | None:
        from objectives.pepr import normalize as normalize_cost  # objectives: torch
        from objectives.pepr import pepr, pepr_weighted

        weights = _indicator_weights(indicators)
        _require(cand.frame, [performance, *weights])
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
        best = _first_best([-score, -p, np.asarray(combined), sub.frame[Column.NUMBER].to_numpy()])
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
class EpsilonSelector(Selector):
    """ε-constraint: the best performance among feasible trials whose indicator is within X.

    Options: ``indicator``, ``limit`` (a number), ``op`` (``"<="`` default, or ``">="`` for
    maximised indicators such as throughput), ``performance`` (default ``"accuracy"``).
    Ties go to the better indicator value, then the lower trial number. None when no trial is
    within the limit.
    """

    name = "epsilon"
    forms = ("epsilon:<indicator><=<x>", "epsilon:<indicator>>=<x>")

    def parse(self, spec: str, body: str) -> dict[str, Any]:
        match = _EPSILON.match(body.strip())
        if not match:
            raise _bad(spec, "epsilon needs <indicator><=<x> or <indicator>>=<x>")
        name, op, limit = match.groups()
        _chosen_on_test(spec, [name])
        return {"indicator": name, "op": op, "limit": _number(spec, limit, "the limit")}

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
        sign_p = minimisation_sign(direction_of(performance, list(cand.objectives)))
        sign_i = 1.0 if op == "<=" else -1.0
        best = pos[_first_best([sign_p * perf[pos], sign_i * ind[pos], pos])]
        reason = (
            f"best {performance} among the {len(pos)} feasible trial(s) with {indicator} "
            f"{op} {limit:g}: {cand.describe(best, [performance, indicator])}"
        )
        return cand.pick(best, self.name, reason)

    def why_none(self, frame: pd.DataFrame, *, indicator: str, limit: float, op: str = "<=",
                 **options: Any) -> str | None:  # fmt: skip
        """No feasible trial within the limit: the closest value found, so the user sees how
        far the limit is (``epsilon:params<=100`` when the smallest is 905)."""
        ok = usable(frame, [indicator])
        if indicator not in frame.columns or not ok.any():
            return None
        found = values(frame[ok], [indicator])[:, 0]
        closest = np.nanmin(found) if op == "<=" else np.nanmax(found)
        nearest = "smallest" if op == "<=" else "largest"
        return (
            f"no feasible trial has {indicator} {op} {limit:g}; the {nearest} found is "
            f"{format_value(closest, digits=4)}"
        )


@_register
class BestSelector(Selector):
    """The feasible trial with the best value of one metric (its direction from the study's
    objectives or the indicator registry). Ties go to front trials, then the lower number.
    Option: ``metric``.
    """

    name = "best"
    forms = ("best:<metric>",)

    def parse(self, spec: str, body: str) -> dict[str, Any]:
        if not re.fullmatch(_NAME, body.strip()):
            raise _bad(spec, f"best needs a metric name, got {body!r}")
        _chosen_on_test(spec, [body.strip()])
        return {"metric": body.strip()}

    def _do(self, cand: Candidates, *, metric: str) -> Selection | None:
        column = _column(cand, metric)
        finite = np.isfinite(column)
        if not finite.any():
            return None
        sign = minimisation_sign(direction_of(metric, list(cand.objectives)))
        key = np.where(finite, sign * column, np.inf)
        best = _first_best([key, ~cand.front, np.arange(len(key))])
        reason = f"best {metric} among the feasible trials: {cand.describe(best, [metric])}"
        return cand.pick(best, self.name, reason)


@_register
class TrialSelector(Selector):
    """The trial with a given number, if it completed (feasible or not: the reason says).

    Option: ``number``.
    """

    name = "trial"
    forms = ("trial:<number>",)
    feasible_only = False
    collapses = False

    def parse(self, spec: str, body: str) -> dict[str, Any]:
        if not body.strip().isdigit():
            raise _bad(spec, f"trial number must be a non-negative integer, got {body!r}")
        return {Column.NUMBER: int(body)}

    def _do(self, cand: Candidates, *, number: int) -> Selection:
        hits = np.flatnonzero(cand.frame[Column.NUMBER].to_numpy() == number)
        if not hits.size:
            raise ConfigError(
                f"trial {number} is not a completed trial with finite objectives; "
                f"completed: {sorted(int(n) for n in cand.frame[Column.NUMBER])}"
            )
        pos = int(hits[0])
        status = Column.FEASIBLE if bool(cand.frame.iloc[pos][Column.FEASIBLE]) else "INFEASIBLE"
        on_front = " on the front" if cand.front[pos] and status == "feasible" else ""
        reason = f"requested by number: {cand.describe(pos)}, {status}{on_front}"
        return cand.pick(pos, self.name, reason)


@_register
class RecommendedSelector(Selector):
    """The search's recommendation: the finalist with the best mean validation accuracy over
    fresh seeds, within the constraints (``finalists`` in the config); the default of
    ``search export`` when the search has one."""

    name = "recommended"
    forms = ("recommended",)
    collapses = False

    def _do(self, cand: Candidates) -> Selection | None:
        found = cand.frame.attrs.get(StudyAttr.RECOMMENDATION)
        if not found:
            return None
        hits = np.flatnonzero(cand.frame[Column.NUMBER].to_numpy() == found["trial"])
        if not hits.size:
            return None
        scores = {"mean_val_accuracy": float(found["mean"]), "seeds": float(found["n"])}
        origin = f"; the net: {found['origin']}" if found.get("origin") else ""
        return cand.pick(int(hits[0]), self.name, f"{found['reason']}{origin}", **scores)

    def why_none(self, frame: pd.DataFrame, *args: Any, **options: Any) -> str | None:
        if frame.attrs.get(StudyAttr.RECOMMENDATION):
            return "its recommended trial is no longer a completed, feasible trial"
        return ("the search recorded no recommendation (no finalists key in its config, or "
                "launched before npas recorded one)")  # fmt: skip


# -- specs ------------------------------------------------------------------------------------

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_EPSILON = re.compile(rf"^({_NAME})\s*(<=|>=)\s*(\S+)$")
_TERM = re.compile(rf"^(?:(\S+?)\*)?({_NAME})$")
#: ``knee``, the default spec, means the tradeoff selector.
_ALIASES = {"knee": "tradeoff"}


def forms() -> list[str]:
    """Every spec form of every registered selector, in registry order."""
    return [form for name in SELECTORS.names() for form in SELECTORS.get(name).forms]


def _bad(spec: str, why: str) -> ConfigError:
    return ConfigError(f"bad selection {spec!r}: {why}; allowed forms: {', '.join(forms())}")


def _number(spec: str, text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _bad(spec, f"{what} must be a number, got {text!r}") from None
    if not np.isfinite(value):
        raise _bad(spec, f"{what} must be finite, got {text!r}")
    return value


def _parse_weights(spec: str, body: str) -> dict[str, Any]:
    parts = body.split(",")
    if not body or any(not p.strip() for p in parts):
        raise _bad(spec, "weights must be a comma-separated list of numbers")
    return {"weights": [_number(spec, p, "a weight") for p in parts]}


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``(selector name, options)`` for a selection spec; ConfigError on a bad one."""
    if not isinstance(spec, str) or not spec.strip():
        raise _bad(str(spec), "empty selection")
    kind, _, body = spec.strip().partition(":")
    kind = _ALIASES.get(kind, kind)
    if kind not in SELECTORS:
        raise _bad(spec, f"unknown selector {kind!r}{did_you_mean(kind, [*SELECTORS, *_ALIASES])}")
    return kind, SELECTORS.get(kind).parse(spec, body)


def why_none(frame: pd.DataFrame, spec: str) -> str | None:
    """Why the selector of ``spec`` chose no trial of ``frame``, when it can say more than
    that nothing qualifies (an ε limit: the closest value found)."""
    name, options = parse_spec(spec)
    return SELECTORS.get(name).why_none(frame, **options)


def select(frame: pd.DataFrame, spec: str, objectives: Objectives) -> Selection | None:
    """Chooses a trial of a study frame by a selection spec (e.g. ``"knee"``,
    ``"pepr:latency_ms:alpha=2"``, ``"epsilon:params<=1000"``).

    Args:
        frame: A study frame (:func:`search.pareto.trials_frame`).
        spec: The selection spec.
        objectives: The objectives the front is taken on (``[(name, direction), ...]``).

    Returns:
        The :class:`Selection` (its ``selector`` is the spec as given, and ``knee`` says that
        it means ``tradeoff``), or None when no trial qualifies: the caller says so.
    """
    name, options = parse_spec(spec)
    chosen = SELECTORS.get(name).do(frame, objectives, **options)
    if chosen is None:
        return None
    reason = chosen.reason
    if spec.strip() in _ALIASES:
        reason = f"{spec.strip()} (= the {name} selector): {reason}"
    return replace(chosen, selector=spec.strip(), reason=reason)
