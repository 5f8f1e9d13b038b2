"""The options of a measurement (:class:`MeasureOptions`), apart from the code that
measures: the search's config checks its ``measure`` section against them without loading
torch (an error in a config is answered before torch loads)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spaces import ConfigError, check_int, check_positive

if TYPE_CHECKING:
    import torch
    from torch import nn

__all__ = ["DEFAULT_INTENSITY_G_PER_KWH", "MAX_THREADS", "MeasureOptions", "OptimizerFactory",
           "default_optimizer"]  # fmt: skip

#: Grams of CO2 per kWh used by :func:`objectives.co2_grams` by default (world average).
DEFAULT_INTENSITY_G_PER_KWH = 475.0

#: Builds the optimiser of the training-step indicators from the model's parameters.
OptimizerFactory = Callable[[Iterable["nn.Parameter"]], "torch.optim.Optimizer"]


def default_optimizer(params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
    """SGD with Nesterov momentum: one state buffer per parameter, like the usual CNN recipe."""
    import torch

    return torch.optim.SGD(params, lr=0.01, momentum=0.9, nesterov=True)


#: The most measurement threads a config may ask for; each run uses at most its cores.
MAX_THREADS = 1024


def _option(default: Any, about: str) -> Any:
    """A field of :class:`MeasureOptions` with its one-line help (the config reference)."""
    return field(default=default, metadata={"help": about})


@dataclass(frozen=True)
class MeasureOptions:
    """Budgets and settings of :func:`objectives.measure`: the one declaration of its options
    (each field's help is in its metadata; the config's ``measure`` section takes the same)."""

    threads: int | None = _option(
        None, "intra-op CPU threads of the measurement (restored after); null: as set"
    )
    infer_batch: int | None = _option(
        None, "batch of the inference memory and energy runs; null: the example's"
    )
    train_batch: int = _option(32, "batch of the training-step memory and energy runs")
    make_optimizer: OptimizerFactory = _option(
        default_optimizer, "builds the optimiser of the training steps (SGD-Nesterov)"
    )
    warmup: int = _option(3, "untimed calls before each timed series")
    latency_budget_s: float = _option(
        1.0, "time for the batch-1 latency repeats (at least 3 are taken)"
    )
    latency_max_repeats: int = _option(200, "upper bound on those repeats")
    throughput_budget_s: float = _option(
        2.0, "time for the whole batch sweep (each batch size gets 1/8)"
    )
    max_throughput_batch: int = _option(1024, "largest batch of the throughput sweep")
    energy_budget_s: float = _option(0.5, "time of each energy run (inference, training)")
    energy_watts: float | None = _option(
        None, "power for the energy estimate when no counter is readable"
    )
    intensity_g_per_kwh: float = _option(
        DEFAULT_INTENSITY_G_PER_KWH, "grid carbon intensity (g/kWh) for the CO2 indicators"
    )
    pue: float = _option(1.0, "power usage effectiveness (>= 1) for the CO2 indicators")

    def __post_init__(self) -> None:
        for name in ("train_batch", "latency_max_repeats", "max_throughput_batch"):
            check_int(name, getattr(self, name))
        check_int("warmup", self.warmup, low=0)
        for name in ("threads", "infer_batch"):
            if getattr(self, name) is not None:
                check_int(name, getattr(self, name))
        if self.threads is not None and self.threads > MAX_THREADS:
            raise ConfigError(
                f"threads must be at most {MAX_THREADS} (a measurement uses at most the cores "
                f"it may run on), got {self.threads!r}"
            )
        for name in ("latency_budget_s", "throughput_budget_s", "energy_budget_s"):
            check_positive(name, getattr(self, name))
        if self.energy_watts is not None:
            check_positive("energy_watts", self.energy_watts)
        check_positive("intensity_g_per_kwh", self.intensity_g_per_kwh, strict=False)
        if not (isinstance(self.pue, int | float) and math.isfinite(self.pue) and self.pue >= 1):
            raise ConfigError(f"pue must be a finite number >= 1, got {self.pue!r}")
        if not callable(self.make_optimizer):
            raise ConfigError(
                "make_optimizer must be a callable params -> Optimizer, "
                f"got {self.make_optimizer!r}"
            )
