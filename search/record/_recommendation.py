"""A search's recommendation as its study holds it (:attr:`StudyAttr.RECOMMENDATION`, written by
``search.run._finalists``): the trial its finalists chose, why, where that trial's net came
from (the optimiser, or a start point written before the search), and every finalist's
per-seed validation accuracies, read back by ``search export`` (its default), ``search
status`` and the launch's summary.
"""

from __future__ import annotations

import math
from typing import Any

import optuna

from search.record._records import TrialRecord, read_trial
from search.record._schema import StudyAttr

__all__ = ["chance_warning", "origin_of", "recommendation_of", "recommended_line"]


def recommendation_of(study: optuna.Study) -> dict[str, Any] | None:
    """The recommendation recorded in ``study`` that names a trial, or None (finalists off, a
    study recorded before them, or no finalist that met every constraint)."""
    found = study.user_attrs.get(StudyAttr.RECOMMENDATION)
    if not isinstance(found, dict) or not isinstance(found.get("trial"), int):
        return None
    return found


def origin_of(study: optuna.Study, number: int) -> str:
    """Where trial ``number``'s net came from, in words: proposed by the study's optimiser
    (narrowed into the constraints when the screen refused the proposal), or a start point of
    the config, which a person wrote or the derivation of a data-only config set by its rules
    (``search check`` names each). A result is only the optimiser's when it proposed the net."""
    trial = next(t for t in study.get_trials(deepcopy=False) if t.number == number)
    return _origin_words(read_trial(trial), study.user_attrs.get(StudyAttr.OPTIMISER))


def _origin_words(record: TrialRecord, optimiser: Any) -> str:
    by = f"proposed by {optimiser}" if optimiser else "proposed by the optimiser"
    if record.start is not None:
        return (f"a start point (the config's start list, point {record.start + 1}), trained "
                "before any proposal: not found by the optimiser")
    if record.narrowed_from is not None:
        return f"{by}, narrowed into the constraints (trial {record.narrowed_from}'s proposal)"
    return by


def recommended_line(recommendation: dict[str, Any]) -> str:
    """``trial 7: mean validation accuracy 0.9712 ± 0.0031 over 3 fresh seed(s)``, and where
    its net came from when the record says."""
    if not recommendation.get("n"):
        return (f"trial {recommendation['trial']}: validation accuracy "
                f"{recommendation['mean']:.4f} in the search, no finalist retrained (time)"
                f"{_origin(recommendation)}")  # fmt: skip
    std = recommendation.get("std")
    spread = "" if std is None else f" ± {std:.4f}"
    partial = "" if recommendation.get("complete", True) else " (fewer seeds than asked: time)"
    refit = "; refit on train+val" if (recommendation.get("refit") or {}).get("artifact") else ""
    return (f"trial {recommendation['trial']}: mean validation accuracy "
            f"{recommendation['mean']:.4f}{spread} over {recommendation['n']} fresh seed(s) "
            f"of {len(recommendation.get('finalists', []))} finalist(s){partial}"
            f"{refit}{_origin(recommendation)}{chance_warning(recommendation)}")  # fmt: skip


def chance_warning(recommendation: dict[str, Any]) -> str:
    """``; NO BETTER THAN CHANCE ...`` when the recommended trial's mean validation accuracy
    is within two standard errors of a constant guess of the most frequent class, scored on
    the same samples; else ''. The standard error is the larger of the seeds' (their spread
    over the root of their number) and an accuracy's at chance on all the samples the seeds
    scored (``samples``): on random labels two seeds agreed within 0.007 at 0.359 against a
    guess of 0.342, and only the second says that is chance. A search can end with nothing
    learned (too short a limit, data no net here learns), and its recommendation must not
    read as a model then."""
    chance, mean, std = (recommendation.get(k) for k in ("chance", "mean", "std"))
    if not isinstance(chance, float) or not isinstance(mean, float):
        return ""
    seeds = std / math.sqrt(recommendation["n"]) if isinstance(std, float) else 0.0
    samples = recommendation.get("samples")
    sampled = 0.0
    if isinstance(samples, int) and samples > 0:
        sampled = math.sqrt(chance * (1 - chance) / samples)
    error = max(seeds, sampled)
    if mean - chance > 2 * error:
        return ""
    return (f"; NO BETTER THAN CHANCE: a constant guess of the most frequent class scores "
            f"{chance:.4f} on the same samples, so the search learned nothing it can show (a "
            "longer limits.time, or a look at the data and its labels)")


def _origin(recommendation: dict[str, Any]) -> str:
    origin = recommendation.get("origin")
    return f"; {origin}" if isinstance(origin, str) and origin else ""
