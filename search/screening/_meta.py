"""A trial's model on the meta device: shapes without memory, counted before anything trains.

The budget floor (:mod:`search.screening._floor`) and the screen (:mod:`search.screening._screen`)
both build a trial's unshared model here, once per family and hyper-parameters, and ask
Shapeshifting what it would make of the trial's budget without building the network.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch
from torch import nn

from search.config import TrialConfig
from spaces import BudgetError, build_model
from spaces.ssn import check_budget, minimum_budget

__all__ = [
    "Shape",
    "meta_counts",
    "meta_model",
    "minimum_of",
    "planned",
    "planned_params",
    "trainable",
    "unmet_budget",
]


class Shape(Protocol):
    """What a model is built for: a built-in's :class:`objectives.datasets.DatasetInfo`, or a
    user's dataset in the registry (its shape read from its data)."""

    @property
    def in_shape(self) -> tuple[int, ...]: ...

    @property
    def num_classes(self) -> int: ...


def meta_counts(model: nn.Module, info: Shape, *, flops: bool = True) -> dict[str, int]:
    """The trainable parameters, effective weights (the deployed model's: each use of a shared
    module counted) and, with ``flops`` (they load torch._dynamo), forward FLOPs per sample of
    a model on the meta device."""
    example = torch.zeros(1, *info.in_shape, device="meta")
    if not flops:
        from objectives import count_weights

        return {"params": trainable(model), "weights": count_weights(model, example)}
    from objectives import count_weights_and_flops

    weights, flops_infer = count_weights_and_flops(model, example)
    return {"params": trainable(model), "weights": weights, "flops_infer": flops_infer}


def trainable(model: nn.Module) -> int:
    """Trainable parameters, as the ``params`` indicator counts them."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def meta_model(cfg: TrialConfig, info: Shape, models: dict[str, nn.Module]) -> nn.Module:
    """A trial's unshared model on the meta device, each built once (``models``: the cache)."""
    key = f"{cfg.family}{sorted(cfg.hyper.items())}"
    if key not in models:
        # On the meta device: shapes without memory (a WRN-28-10 corner took 3.4 GB built for
        # real); the caller's random stream is not drawn from.
        with torch.random.fork_rng(devices=[]), torch.device("meta"):
            models[key] = build_model(cfg.family, info.in_shape, info.num_classes, **cfg.hyper)
    return models[key]


def minimum_of(cfg: TrialConfig, info: Shape, models: dict[str, nn.Module]) -> int:
    """The minimum budget of a trial's model with its SSN options (each model built once)."""
    return minimum_budget(meta_model(cfg, info, models), **planned(cfg))


def planned(cfg: TrialConfig) -> dict[str, Any]:
    """A trial's SSN options as planned before training: ``auto`` sized as ``random`` with
    the same stores (its assignment needs training)."""
    mapping = cfg.ssn["mapping"]
    return cfg.ssn_options(mapping="random" if mapping == "auto" else mapping)


def planned_params(cfg: TrialConfig, info: Shape, models: dict[str, nn.Module]) -> int:
    """The trainable parameters of a Shapeshifted trial's network as planned (90-100 % of its
    budget, what the trial's ``params`` will be; ``auto`` sized as ``random``).

    Raises:
        BudgetError: Shapeshifting cannot meet the budget (see :func:`unmet_budget`).
    """
    assert cfg.budget is not None  # a plain trial has no network to plan
    model = meta_model(cfg, info, models)
    if not cfg.shares(trainable(model)):
        return trainable(model)  # within its budget: trained plain
    return check_budget(model, cfg.budget, **planned(cfg))


def unmet_budget(cfg: TrialConfig, info: Shape, models: dict[str, nn.Module]
                 ) -> str | None:  # fmt: skip
    """Why a Shapeshifted trial's budget cannot be met (below its model's minimum, or more
    than its generator uses), as Shapeshifting says it; None when it can, or the trial is
    plain."""
    if cfg.budget is None or cfg.ssn.get("mapping") == "none":
        return None
    model = meta_model(cfg, info, models)
    if not cfg.shares(trainable(model)):
        return None
    try:
        check_budget(model, cfg.budget, **planned(cfg))
    except BudgetError as err:
        return str(err)
    return None
