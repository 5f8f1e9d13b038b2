"""Pareto fronts, hypervolume, knee selection and indicator disagreement for npas studies.

The array functions (:func:`non_dominated`, :func:`hypervolume`, :func:`hypervolume_history`)
take ``(n, m)`` objective values with one ``"minimize"``/``"maximize"`` direction per column
(pymoo minimises, so maximised columns are negated). Hypervolume is computed on objectives
normalised per objective to ``[0, 1]`` — 0 at the best bound, 1 at the worst, bounds from the
data unless given — with the reference point 1.1 in normalised space unless given; every
:class:`HVResult` states both. The frame functions take the table
:func:`search._frame.trials_frame` builds from an Optuna study: infeasible, failed and
unfinished trials are never on a front.

Example:
    >>> import numpy as np
    >>> v = np.array([[0.9, 10.0], [0.8, 1.0], [0.7, 5.0]])
    >>> non_dominated(v, ["maximize", "minimize"]).tolist()
    [True, True, False]
"""

from __future__ import annotations

from search._disagreement import Disagreement, disagreement, jaccard
from search._front import (
    DEFAULT_REF,
    HVResult,
    hypervolume,
    hypervolume_history,
    minimisation_form,
    non_dominated,
    normalise,
)
from search._knee import (
    SELECTORS,
    Candidates,
    Front,
    KneeSelector,
    Objectives,
    Selection,
    front_of,
    hypervolume_by_trial,
    resolve_objectives,
)
from search._select import FORMS, parse_spec, select

__all__ = [
    "DEFAULT_REF",
    "FORMS",
    "SELECTORS",
    "Candidates",
    "Disagreement",
    "Front",
    "HVResult",
    "KneeSelector",
    "Objectives",
    "Selection",
    "disagreement",
    "front_of",
    "hypervolume",
    "hypervolume_by_trial",
    "hypervolume_history",
    "jaccard",
    "minimisation_form",
    "non_dominated",
    "normalise",
    "parse_spec",
    "resolve_objectives",
    "select",
]
