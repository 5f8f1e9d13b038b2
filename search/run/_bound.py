"""The search's optimiser, bound to an in-memory copy of its study: what a launch and a
replay (``search.lab``) both propose from, so both ask exactly the same optimiser."""

from __future__ import annotations

from typing import TYPE_CHECKING

import optuna

from search.record import Metric, in_memory_copy
from search.schedulers import RungView

if TYPE_CHECKING:
    from search.config import SearchConfig
    from search.optimisers import Optimiser

__all__ = ["bound_optimiser", "constraint_keys"]


def constraint_keys(config: SearchConfig) -> list[str]:
    """The constraint keys recorded on each trial: the expressions, then ``feasible``."""
    return [*config.constraint_texts, Metric.FEASIBLE]


def bound_optimiser(
    config: SearchConfig, study: optuna.Study, *, seed: int, scheduler: str
) -> Optimiser:
    """The config's optimiser bound to an in-memory copy of ``study``; under a scheduler other
    than ``fifo`` a sampler that models rungs sees them (:class:`RungView`)."""
    from search.optimisers import OPTIMISERS

    optimiser = OPTIMISERS.get(config.algorithm.name)(
        config.space,
        config.directions,
        seed=seed,
        constraints=constraint_keys(config),
        **config.algorithm.options,
    )
    sampler = optimiser.sampler()
    if optimiser.models_rungs and scheduler != "fifo":
        sampler = RungView(sampler, config.objective_names)
    optimiser.bind(in_memory_copy(study, sampler))
    return optimiser
