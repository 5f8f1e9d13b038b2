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
    >>> from search.pareto import non_dominated
    >>> v = np.array([[0.9, 10.0], [0.8, 1.0], [0.7, 5.0]])
    >>> non_dominated(v, ["maximize", "minimize"]).tolist()
    [True, True, False]

Names load lazily (PEP 562): ``search status`` reads fronts without the selectors' and the
indicator registry's imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces import lazy_exports

# What this package exports, each name once: type checkers and editors read these imports,
# and at run time `lazy_exports` reads the same block and loads each name when first used.
# `__all__` is the user API; the other names are for npas's other packages.
if TYPE_CHECKING:
    from search.pareto._disagreement import Disagreement as Disagreement
    from search.pareto._disagreement import disagreement as disagreement
    from search.pareto._disagreement import jaccard as jaccard
    from search.pareto._frame import condition_columns as condition_columns
    from search.pareto._frame import cost_indicators as cost_indicators
    from search.pareto._frame import direction_of as direction_of
    from search.pareto._frame import format_value as format_value
    from search.pareto._frame import frame_of as frame_of
    from search.pareto._frame import objectives_of as objectives_of
    from search.pareto._frame import trials_frame as trials_frame
    from search.pareto._frame import usable as usable
    from search.pareto._frame import values as values
    from search.pareto._front import DEFAULT_REF as DEFAULT_REF
    from search.pareto._front import HVResult as HVResult
    from search.pareto._front import hypervolume as hypervolume
    from search.pareto._front import hypervolume_history as hypervolume_history
    from search.pareto._front import minimisation_form as minimisation_form
    from search.pareto._front import non_dominated as non_dominated
    from search.pareto._front import normalise as normalise
    from search.pareto._selectors import SELECTORS as SELECTORS
    from search.pareto._selectors import Candidates as Candidates
    from search.pareto._selectors import Selection as Selection
    from search.pareto._selectors import Selector as Selector
    from search.pareto._selectors import forms as forms
    from search.pareto._selectors import parse_spec as parse_spec
    from search.pareto._selectors import select as select
    from search.pareto._selectors import why_none as why_none
    from search.pareto._study_front import DUPLICATES as DUPLICATES
    from search.pareto._study_front import Front as Front
    from search.pareto._study_front import Objectives as Objectives
    from search.pareto._study_front import constant_conditions as constant_conditions
    from search.pareto._study_front import duplicates as duplicates
    from search.pareto._study_front import front_of as front_of
    from search.pareto._study_front import front_rows as front_rows
    from search.pareto._study_front import front_table as front_table
    from search.pareto._study_front import hypervolume_by_trial as hypervolume_by_trial
    from search.pareto._study_front import resolve_objectives as resolve_objectives
    from search.pareto._study_front import why_empty as why_empty


__all__ = [
    "DEFAULT_REF",
    "DUPLICATES",
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
    "duplicates",
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


__getattr__ = lazy_exports(__name__)
