"""The budget floor of a search: can any model its space builds meet the budget it is given?

A search whose ``budget`` range lies wholly below the minimum budget of its models records only
infeasible trials. Every point cannot be checked, so a cheap set of corners is: each
non-numeric choice of the dimensions that shape a model or its Shapeshifting (``family``,
``<family>.<hyper>``, ``ssn.<option>``), every number at its smallest (depth, width, stores,
templates) and ``budget`` at its largest; training options take one value. Each corner's
model is built once and its Shapeshifted network only planned
(:func:`spaces.ssn.minimum_budget`), and the check stops at the first corner that meets its
budget: milliseconds for the presets. It is a bound, not a proof (a larger number
can make a smaller model, e.g. a stride), which is why a launch warns rather than refuses.
``ssn.mapping: auto`` is sized as ``random`` with the same stores (its assignment needs
training).

The same corners, with every number at its smallest and then at its largest, give
:func:`trial_cost`, the range of parameters, weights and FLOPs of one trial that ``search check``
prints.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from torch import nn

from objectives.datasets import DATASETS
from search.config import TrialConfig
from search.screening._meta import (
    meta_counts,
    meta_model,
    minimum_of,
    planned_params,
    trainable,
    unmet_budget,
)
from search.screening._screen import COUNTED
from spaces import Categorical, Dimension, Fixed, Float, Int, Space

if TYPE_CHECKING:
    from search.config import SearchConfig

__all__ = [
    "TrialCost",
    "budget_above_warning",
    "budget_warning",
    "corners",
    "start_warnings",
    "trial_cost",
]

#: Which end of each numeric dimension a corner takes.
End = Literal["low", "high"]
ENDS: tuple[End, End] = ("low", "high")


def every(end: End) -> Callable[[str], End]:
    """:func:`corners`' ``end`` for the corner at ``end`` of every number."""
    return lambda _: end


def budget_warning(config: SearchConfig) -> str | None:
    """One line saying that every Shapeshifted trial the corners stand for is infeasible, with
    the smallest minimum budget found; None when a corner meets its budget, or none has one."""
    info = DATASETS.get(config.dataset)
    models: dict[str, nn.Module] = {}
    smallest: tuple[int, str] | None = None
    top = 0
    for point in corners(config.space, lambda name: "high" if name == "budget" else "low"):
        try:
            cfg = config.trial_config(point)
            if cfg.budget is None:  # the plain model: no budget to miss
                continue
            minimum = minimum_of(cfg, info, models)
        except Exception:  # such a trial fails on its own: a check never stops a launch,
            continue  # and this corner says nothing of the others
        if minimum <= cfg.budget:
            return None
        top = max(top, cfg.budget)
        if smallest is None or minimum < smallest[0]:
            smallest = (minimum, _describe(cfg))
    if smallest is None:
        return None
    minimum, model = smallest
    return (
        f"budget: at most {top} parameters, below the minimum budget of every model checked "
        f"(smallest: {minimum}, for {model}); every Shapeshifted trial is likely infeasible: "
        f"give budget a range reaching {minimum} or more"
    )


def budget_above_warning(config: SearchConfig) -> str | None:
    """One line saying that the smallest ``budget`` of the space exceeds the plain model's own
    trainable parameters at every corner (every number at its largest): Shapeshifting would
    then add parameters, not save them; None otherwise, or when no corner has a budget."""
    info = DATASETS.get(config.dataset)
    models: dict[str, nn.Module] = {}
    largest: tuple[int, str] | None = None
    low = None
    for point in corners(config.space, lambda name: "low" if name == "budget" else "high"):
        try:
            cfg = config.trial_config(point)
            if cfg.budget is None or cfg.ssn.get("mapping") == "none":
                continue
            params = trainable(meta_model(cfg, info, models))  # no FLOPs: they load torch._dynamo
        except Exception:  # such a trial fails on its own: a check never stops a launch
            continue
        if params >= cfg.budget:
            return None
        low = cfg.budget if low is None else min(low, cfg.budget)
        if largest is None or params > largest[0]:
            largest = (params, _describe(cfg))
    if largest is None:
        return None
    return (
        f"budget: at least {low} parameters, above the plain model's own size at every corner "
        f"checked (largest: {largest[0]:,}, {largest[1]}): Shapeshifting would add parameters "
        "rather than save them; give budget a range below the plain models' sizes, or search "
        "them plain (ssn.mapping: none)"
    )


@dataclass(frozen=True)
class TrialCost:
    """What one trial of a search costs, over the corners of its space (smallest and largest
    numbers, each choice of the model-shaping dimensions): a range, not a bound.

    Attributes:
        params: Trainable parameters of the unshared models, smallest and largest.
        weights: Effective weights of those models (each use of a shared module counted):
            what a trial deploys, Shapeshifted or not (its network materialises them).
        flops_infer: Forward FLOPs per sample of those models (Shapeshifting keeps them).
        budgets: The parameter budgets of the Shapeshifted trials (everything counted),
            smallest and largest; None when every trial trains the plain model.
        models: How many distinct models were built (on the meta device: no memory).
        failed: Corners whose model could not be built (such a trial fails on its own).
    """

    params: tuple[int, int]
    weights: tuple[int, int]
    flops_infer: tuple[int, int]
    budgets: tuple[int, int] | None
    models: int
    failed: int


def trial_cost(config: SearchConfig) -> TrialCost | None:
    """The cost range of the search's trials; None when no corner's model could be built."""
    info = DATASETS.get(config.dataset)
    models: dict[str, nn.Module] = {}
    counts: dict[nn.Module, dict[str, int]] = {}  # many corners share a model (a budget, a rate)
    params: list[int] = []
    weights: list[int] = []
    flops: list[int] = []
    budgets: list[int] = []
    failed = 0
    for end in ENDS:
        for point in corners(config.space, every(end)):
            try:
                cfg = config.trial_config(point)
                model = meta_model(cfg, info, models)
                if model not in counts:
                    counts[model] = meta_counts(model, info)
                counted = counts[model]
                params.append(counted["params"])
                weights.append(counted["weights"])
                flops.append(counted["flops_infer"])
            except Exception:  # such a trial fails on its own, with its message
                failed += 1
                continue
            if cfg.budget is not None and cfg.ssn.get("mapping") != "none":
                budgets.append(cfg.budget)
    if not params:
        return None
    return TrialCost(
        params=(min(params), max(params)),
        weights=(min(weights), max(weights)),
        flops_infer=(min(flops), max(flops)),
        budgets=(min(budgets), max(budgets)) if budgets else None,
        models=len(models),
        failed=failed,
    )


def start_warnings(config: SearchConfig) -> list[str]:
    """A line per start point that will be refused untrained, though the user meant it to
    train: a Shapeshifted point whose budget its model cannot meet (below the minimum, or more
    than its generator uses), or a point that misses a ``params``, ``weights`` or
    ``flops_infer`` constraint (counted on its model built on the meta device; a Shapeshifted
    point's params are its network's as planned, 90-100 % of its budget)."""
    from search.config import complete

    info = DATASETS.get(config.dataset)
    if info is None:
        return []
    bounded = [c for c in config.constraints if c.indicator in COUNTED]
    models: dict[str, nn.Module] = {}
    found = []
    for i, point in enumerate(config.start):
        try:
            cfg = config.trial_config(complete(config.space, point, {}))
            unmet = unmet_budget(cfg, info, models)
            counts = meta_counts(meta_model(cfg, info, models), info) if bounded else {}
        except Exception:  # such a trial fails on its own, with its message
            continue
        if unmet is not None:
            found.append(f"start[{i}]: {unmet} ({_describe(cfg)}): it will be refused "
                         "untrained")  # fmt: skip
            continue
        if cfg.budget is not None and bounded:  # what its network will have, not the budget
            counts["params"] = planned_params(cfg, info, models)
        missed = [f"{c} ({c.indicator} {counts[c.indicator]:,})" for c in bounded
                  if c.violation(counts) > 0]  # fmt: skip
        if missed:
            found.append(f"start[{i}]: misses {', '.join(missed)}: it will be refused "
                         "untrained, like any trial over a constraint")  # fmt: skip
    return found


def _describe(cfg: TrialConfig) -> str:
    hyper = ", ".join(f"{k}={v}" for k, v in cfg.hyper.items())
    ssn = cfg.ssn
    return (
        f"{cfg.family}({hyper}) with mapping={ssn['mapping']}, stores={ssn['stores']}, "
        f"generator={ssn['generator']}, upsampler={ssn['upsampler']}"
    )


def corners(space: Space, end: Callable[[str], End]) -> Iterator[dict[str, Any]]:
    """The points of ``space`` the check builds (see the module's docstring), active
    dimensions only, in declaration order; ``end(name)``: which end of each number."""
    names = space.names

    def walk(index: int, point: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if index == len(names):
            yield dict(point)
            return
        name = names[index]
        if not space.is_active(name, point):
            yield from walk(index + 1, point)
            return
        for value in _values(name, space[name], end(name)):
            point[name] = value
            yield from walk(index + 1, point)
        del point[name]

    yield from walk(0, {})


def _values(name: str, dim: Dimension, end: End) -> list[Any]:
    """The values of one dimension at the corners: numbers at their ``end``, each other choice
    of a dimension that shapes the model, one value otherwise."""
    head, _, rest = name.partition(".")
    if isinstance(dim, Fixed):
        return [dim.value]
    if isinstance(dim, Int):
        return [dim.top if end == "high" else dim.low]
    if isinstance(dim, Float):
        return [dim.high if end == "high" else dim.low]
    assert isinstance(dim, Categorical)
    choices = list(dim.choices)
    if head == "train" or rest.startswith("train."):  # training options shape no model
        return choices[:1]
    numeric: list[Any] = []
    others: list[Any] = []
    for choice in choices:
        real = isinstance(choice, numbers.Real) and not isinstance(choice, bool)
        (numeric if real else others).append(choice)
    if numeric:
        others.append(max(numeric) if end == "high" else min(numeric))
    return others
