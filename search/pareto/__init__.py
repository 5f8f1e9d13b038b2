"""Pareto fronts, hypervolume, knee selection and indicator disagreement for npas studies.

The array functions (:func:`non_dominated`, :func:`hypervolume`, :func:`hypervolume_history`)
take ``(n, m)`` objective values with one ``"minimize"``/``"maximize"`` direction per column
(pymoo minimises, so maximised columns are negated). Hypervolume is computed on objectives
normalised per objective to ``[0, 1]`` — 0 at the best bound, 1 at the worst, bounds from the
data unless given — with the reference point 1.1 in normalised space unless given; every
:class:`HVResult` states both. The frame functions take the table
:func:`trials_frame` builds from an Optuna study: infeasible, failed and
unfinished trials are never on a front.

Example:
    >>> import numpy as np
    >>> v = np.array([[0.9, 10.0], [0.8, 1.0], [0.7, 5.0]])
    >>> non_dominated(v, ["maximize", "minimize"]).tolist()
    [True, True, False]
"""

from __future__ import annotations

from search.pareto._disagreement import Disagreement, disagreement, jaccard
from search.pareto._frame import direction_of, format_value, objectives_of, trials_frame
from search.pareto._front import (
    DEFAULT_REF,
    HVResult,
    hypervolume,
    hypervolume_history,
    minimisation_form,
    non_dominated,
    normalise,
)
from search.pareto._selectors import (
    SELECTORS,
    Candidates,
    Selection,
    Selector,
    forms,
    parse_spec,
    select,
)
from search.pareto._study_front import (
    Front,
    Objectives,
    front_of,
    front_table,
    hypervolume_by_trial,
    resolve_objectives,
)

__all__ = [
    "DEFAULT_REF",
    "SELECTORS",
    "Candidates",
    "Disagreement",
    "Front",
    "HVResult",
    "Objectives",
    "Selection",
    "Selector",
    "direction_of",
    "disagreement",
    "format_value",
    "forms",
    "front_of",
    "front_table",
    "hypervolume",
    "hypervolume_by_trial",
    "hypervolume_history",
    "jaccard",
    "minimisation_form",
    "non_dominated",
    "normalise",
    "objectives_of",
    "parse_spec",
    "resolve_objectives",
    "select",
    "trials_frame",
]
