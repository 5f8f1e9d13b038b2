"""What a study holds about its search, read back: the config it was first launched with, its
objectives and its finalists' runs (study user attributes that ``open_study`` and
``search.run._finalists`` write). A study npas did not record reads as holding none of them, so
a reader outside this package never touches the raw attributes."""

from __future__ import annotations

from typing import Any

import optuna

from search.record._schema import StudyAttr

__all__ = ["finalist_runs", "search_cost", "stored_config", "stored_objectives"]


def stored_config(study: optuna.Study) -> dict[str, Any]:
    """The search config as first launched (``{}``: a study npas did not record)."""
    found = study.user_attrs.get(StudyAttr.CONFIG)
    return found if isinstance(found, dict) else {}


def stored_objectives(study: optuna.Study) -> list[tuple[str, str]]:
    """The objectives as recorded, ``(name, direction)`` each (``[]``: none recorded)."""
    found = study.user_attrs.get(StudyAttr.OBJECTIVES) or []
    return [(str(name), str(direction)) for name, direction in found]


def finalist_runs(study: optuna.Study) -> dict[str, dict[str, Any]]:
    """The finalists' runs recorded so far, ``{"<trial>": {"<seed>": run}}`` (a copy)."""
    found = study.user_attrs.get(StudyAttr.FINALIST_RUNS) or {}
    return {str(k): dict(v) for k, v in found.items()}


def search_cost(study: optuna.Study) -> dict[str, Any]:
    """What every launch's trials spent (:attr:`StudyAttr.COST`: seconds, joules, grams of
    CO2) and where the energy figures come from, by their attribute names (None: not yet)."""
    names = (*StudyAttr.COST, StudyAttr.ENERGY_SOURCE)
    return {name: study.user_attrs.get(name) for name in names}
