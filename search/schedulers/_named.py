"""The schedulers a search can run under (``scheduler.name``): each entry builds a Ray Tune
``TrialScheduler`` from the search config. Light to import: Ray loads when one is built."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from search.config import SCHEDULERS

if TYPE_CHECKING:
    from search.config import SearchConfig


@SCHEDULERS.register("fifo")
def _fifo(config: SearchConfig) -> Any:
    """Every trial trains its full schedule (Ray Tune's default)."""
    from ray.tune.schedulers import FIFOScheduler

    return FIFOScheduler()


@SCHEDULERS.register("moasha")
def _moasha(config: SearchConfig) -> Any:
    """Multi-objective asynchronous successive halving over all the search's objectives."""
    from search.schedulers._moasha import MOASHA, PromotionMOASHA

    s = config.scheduler
    common: dict[str, Any] = {
        "grace_epochs": s.grace_epochs, "reduction_factor": s.reduction_factor,
        "max_epochs": config.max_epochs, "within_front": s.front_order,
        "chance_from": s.chance_from}  # fmt: skip
    if s.trust_rungs:
        from search.schedulers._rungtrust import PromotionTrust, RungTrust

        if s.type == "promotion":
            return PromotionTrust(config.objectives, evidence=s.trust_by,
                                  early=s.early_promotion, **common)  # fmt: skip
        return RungTrust(config.objectives, evidence=s.trust_by, **common)
    if s.type == "promotion":
        return PromotionMOASHA(config.objectives, early=s.early_promotion, **common)
    return MOASHA(config.objectives, **common)
