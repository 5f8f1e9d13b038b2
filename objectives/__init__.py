"""What is measured: datasets, training and evaluation, cost indicators and PePR.

``objectives.datasets``, ``objectives.train`` and ``objectives.pepr`` are public modules; the
names below are the package's front door.
"""

from objectives import datasets, pepr, train
from objectives._conditions import MeasureContext, MeasureOptions
from objectives._custom import Splits, register_dataset
from objectives._energy import EnergyMeter, co2_grams
from objectives._fused import fit_seeds, fusable
from objectives._indicators import INDICATORS, Indicator, list_indicators, register_indicator
from objectives._measure import measure
from objectives.datasets import Data, DatasetUnavailableError, load
from objectives.train import FitResult, NonFiniteLossError, evaluate, fit

__all__ = [
    "INDICATORS",
    "Data",
    "DatasetUnavailableError",
    "EnergyMeter",
    "FitResult",
    "Indicator",
    "MeasureContext",
    "MeasureOptions",
    "NonFiniteLossError",
    "Splits",
    "co2_grams",
    "datasets",
    "evaluate",
    "fit",
    "fit_seeds",
    "fusable",
    "list_indicators",
    "load",
    "measure",
    "pepr",
    "register_dataset",
    "register_indicator",
    "train",
]
