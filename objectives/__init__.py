"""What is measured: datasets, training and evaluation, cost indicators and PePR.

``objectives.datasets``, ``objectives.train`` and ``objectives.pepr`` are public modules; the
names below are the package's front door. They load lazily (PEP 562), as ``spaces``'s do, so
reading the indicator registry (``search indicators``, ``search pareto``) imports no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces import lazy_exports

# What this package exports, each name once: type checkers and editors read these imports,
# and at run time `lazy_exports` reads the same block and loads each name when first used.
# `__all__` is the user API; the other names are for npas's other packages.
if TYPE_CHECKING:
    from objectives import datasets as datasets
    from objectives import pepr as pepr
    from objectives import train as train
    from objectives._conditions import MeasureContext as MeasureContext
    from objectives._custom import IMAGE_SUFFIXES as IMAGE_SUFFIXES
    from objectives._custom import Splits as Splits
    from objectives._custom import check_folds as check_folds
    from objectives._custom import declare as declare
    from objectives._custom import register_dataset as register_dataset
    from objectives._dataset_names import dataset_names as dataset_names
    from objectives._distill import check_teachers_folder as check_teachers_folder
    from objectives._energy import EnergyMeter as EnergyMeter
    from objectives._energy import co2_grams as co2_grams
    from objectives._flops import count_flops as count_flops
    from objectives._flops import count_weights as count_weights
    from objectives._flops import count_weights_and_flops as count_weights_and_flops
    from objectives._fused import fit_seeds as fit_seeds
    from objectives._fused import fusable as fusable
    from objectives._indicators import INDICATORS as INDICATORS
    from objectives._indicators import USER_INDICATORS as USER_INDICATORS
    from objectives._indicators import Indicator as Indicator
    from objectives._indicators import list_indicators as list_indicators
    from objectives._indicators import measuring_data as measuring_data
    from objectives._indicators import register_indicator as register_indicator
    from objectives._loading import LOADER_WORKERS as LOADER_WORKERS
    from objectives._loading import STREAM_ABOVE_MB as STREAM_ABOVE_MB
    from objectives._measure import measure as measure
    from objectives._measure_options import MeasureOptions as MeasureOptions
    from objectives._recipe import SCHEDULES as SCHEDULES
    from objectives._recipe import TORCH_OPTIMIZERS as TORCH_OPTIMIZERS
    from objectives._recipe import Recipe as Recipe
    from objectives._recipe import Teacher as Teacher
    from objectives._root import pinned_root as pinned_root
    from objectives.datasets import Data as Data
    from objectives.datasets import DatasetUnavailableError as DatasetUnavailableError
    from objectives.datasets import load as load
    from objectives.train import FitResult as FitResult
    from objectives.train import NonFiniteLossError as NonFiniteLossError
    from objectives.train import evaluate as evaluate
    from objectives.train import fit as fit


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
    "Recipe",
    "Splits",
    "Teacher",
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


__getattr__ = lazy_exports(__name__)
