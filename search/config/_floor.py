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
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from objectives.datasets import DATASETS, DatasetInfo
from search.config._trial import TrialConfig
from spaces._build import build_model
from spaces._dsl import Categorical, Dimension, Fixed, Float, Int, Space
from spaces.ssn import minimum_budget

if TYPE_CHECKING:
    from search.config._search import SearchConfig

__all__ = ["budget_warning"]


def budget_warning(config: SearchConfig) -> str | None:
    """One line saying that every Shapeshifted trial the corners stand for is infeasible, with
    the smallest minimum budget found; None when a corner meets its budget, or none has one."""
    info = DATASETS.get(config.dataset)
    models: dict[str, nn.Module] = {}
    smallest: tuple[int, str] | None = None
    top = 0
    for point in _corners(config.space):
        try:
            cfg = config.trial_config(point)
            if cfg.budget is None:  # the plain model: no budget to miss
                continue
            minimum = _minimum(cfg, info, models)
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


def _minimum(cfg: TrialConfig, info: DatasetInfo, models: dict[str, nn.Module]) -> int:
    """The minimum budget of a trial's model with its SSN options (each model built once)."""
    key = f"{cfg.family}{sorted(cfg.hyper.items())}"
    if key not in models:
        # On the meta device: shapes without memory (a WRN-28-10 corner took 3.4 GB built for
        # real); the caller's random stream is not drawn from.
        with torch.random.fork_rng(devices=[]), torch.device("meta"):
            models[key] = build_model(cfg.family, info.in_shape, info.num_classes, **cfg.hyper)
    mapping = cfg.ssn["mapping"]
    return minimum_budget(
        models[key], **cfg.ssn_options(mapping="random" if mapping == "auto" else mapping)
    )


def _describe(cfg: TrialConfig) -> str:
    hyper = ", ".join(f"{k}={v}" for k, v in cfg.hyper.items())
    ssn = cfg.ssn
    return (
        f"{cfg.family}({hyper}) with mapping={ssn['mapping']}, stores={ssn['stores']}, "
        f"generator={ssn['generator']}, upsampler={ssn['upsampler']}"
    )


def _corners(space: Space) -> Iterator[dict[str, Any]]:
    """The points of ``space`` the check builds (see the module's docstring), active
    dimensions only, in declaration order."""
    names = space.names

    def walk(index: int, point: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if index == len(names):
            yield dict(point)
            return
        name = names[index]
        if not space.is_active(name, point):
            yield from walk(index + 1, point)
            return
        for value in _values(name, space[name]):
            point[name] = value
            yield from walk(index + 1, point)
        del point[name]

    yield from walk(0, {})


def _values(name: str, dim: Dimension) -> list[Any]:
    """The values of one dimension at the corners: numbers at their smallest (``budget`` at its
    largest), each other choice of a dimension that shapes the model, one value otherwise."""
    head, _, rest = name.partition(".")
    if isinstance(dim, Fixed):
        return [dim.value]
    if isinstance(dim, Int):
        return [dim.top if name == "budget" else dim.low]
    if isinstance(dim, Float):
        return [dim.low]
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
        others.append(max(numeric) if name == "budget" else min(numeric))
    return others
