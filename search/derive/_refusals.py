"""How many proposals of a derived space the screen would refuse: random points of the space,
each trial's model built on the meta device and its params (planned, for a Shapeshifted one)
checked against the params limit, as :func:`search.config.screen` checks a registered
dataset's trials (it cannot see a declared dataset's shape; this is given it)."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

from search.config import SearchConfig
from search.derive._data import DataFacts
from spaces import BudgetError

__all__ = ["refusals"]


def refusals(config: SearchConfig, facts: DataFacts, *, samples: int = 200, seed: int = 0
             ) -> Counter[str]:  # fmt: skip
    """Reasons the screen would refuse each of ``samples`` random points (``ok`` for one it
    passes): ``over limit`` (params above the tightest params constraint) or ``budget`` (a
    budget Shapeshifting cannot meet)."""
    from search.screening import meta_model, planned_params, trainable

    info: Any = SimpleNamespace(in_shape=facts.in_shape, num_classes=facts.classes)
    limits = [c for c in config.constraints if c.indicator == "params"]
    models: dict[str, Any] = {}
    counts: Counter[str] = Counter()
    for i in range(samples):
        cfg = config.trial_config(config.space.sample(seed + i))
        try:
            params = (trainable(meta_model(cfg, info, models)) if cfg.budget is None
                      else planned_params(cfg, info, models))  # fmt: skip
        except BudgetError:
            counts["budget"] += 1
            continue
        over = any(c.violation({"params": params}) > 0 for c in limits)
        counts["over limit" if over else "ok"] += 1
    return counts
