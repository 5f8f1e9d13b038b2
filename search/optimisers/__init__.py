"""Optimiser plug-ins: one ask/tell interface (:class:`Optimiser`) over Optuna samplers and
pymoo algorithms, and their registry :data:`OPTIMISERS` (a new algorithm is one subclass
decorated with ``@OPTIMISERS.register(name)``)."""

from search.optimisers._base import OPTIMISERS, Optimiser, Proposal, constraint_vector, point_of
from search.optimisers._optuna import OptunaOptimiser
from search.optimisers._pymoo import PymooOptimiser, point_params

__all__ = [
    "OPTIMISERS",
    "Optimiser",
    "OptunaOptimiser",
    "Proposal",
    "PymooOptimiser",
    "constraint_vector",
    "point_of",
    "point_params",
]
