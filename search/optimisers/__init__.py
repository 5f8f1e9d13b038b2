"""Optimiser plug-ins: one ask/tell interface (:class:`Optimiser`) over Optuna samplers and
pymoo algorithms, and their registry :data:`OPTIMISERS` (a new algorithm is one subclass and
one entry)."""

from search.optimisers._base import Optimiser, Proposal, constraint_vector, point_of
from search.optimisers._optuna import _GP, _NSGA2, _NSGA3, _TPE, OptunaOptimiser, _Random
from search.optimisers._pymoo import (
    PymooOptimiser,
    _PymooNSGA2,
    _PymooNSGA3,
    _PymooSMSEMOA,
    point_params,
)
from spaces._registry import Registry

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

#: Search algorithms by name (``optimiser.name`` in a config).
OPTIMISERS: Registry[type[Optimiser]] = Registry("optimiser")
for _name, _cls in {
    "nsga2": _NSGA2,
    "nsga3": _NSGA3,
    "tpe": _TPE,
    "gp": _GP,
    "random": _Random,
    "pymoo-nsga2": _PymooNSGA2,
    "pymoo-nsga3": _PymooNSGA3,
    "pymoo-smsemoa": _PymooSMSEMOA,
}.items():
    _cls.name = _name
    OPTIMISERS.add(_name, _cls)
