"""What is measured: datasets, training and evaluation, cost indicators and PePR.

``objectives.datasets``, ``objectives.train`` and ``objectives.pepr`` are public modules; the
names below are the package's front door. They load lazily (PEP 562), as ``spaces``'s do, so
reading the indicator registry (``search indicators``, ``search pareto``) imports no torch.
"""

from __future__ import annotations

from spaces._lazy import lazy_getattr

_EXPORTS = {
    "MeasureContext": "objectives._conditions",
    "MeasureOptions": "objectives._conditions",
    "Splits": "objectives._custom",
    "register_dataset": "objectives._custom",
    "EnergyMeter": "objectives._energy",
    "co2_grams": "objectives._energy",
    "fit_seeds": "objectives._fused",
    "fusable": "objectives._fused",
    "INDICATORS": "objectives._indicators",
    "Indicator": "objectives._indicators",
    "list_indicators": "objectives._indicators",
    "register_indicator": "objectives._indicators",
    "measure": "objectives._measure",
    "Data": "objectives.datasets",
    "DatasetUnavailableError": "objectives.datasets",
    "load": "objectives.datasets",
    "FitResult": "objectives.train",
    "NonFiniteLossError": "objectives.train",
    "evaluate": "objectives.train",
    "fit": "objectives.train",
}
_MODULES = ("datasets", "pepr", "train")

__all__ = sorted([*_EXPORTS, *_MODULES])


__getattr__ = lazy_getattr(__name__, _EXPORTS, _MODULES)
