"""A search's recommendation as its study holds it (:attr:`StudyAttr.RECOMMENDATION`, written by
``search.run._finalists``): the trial its finalists chose, why, and every finalist's per-seed
validation accuracies, read back by ``search export`` (its default), ``search status`` and the
launch's summary.
"""

from __future__ import annotations

from typing import Any

import optuna

from search.record._schema import StudyAttr

__all__ = ["recommendation_of", "recommended_line"]


def recommendation_of(study: optuna.Study) -> dict[str, Any] | None:
    """The recommendation recorded in ``study`` that names a trial, or None (finalists off, a
    study recorded before them, or no finalist that met every constraint)."""
    found = study.user_attrs.get(StudyAttr.RECOMMENDATION)
    if not isinstance(found, dict) or not isinstance(found.get("trial"), int):
        return None
    return found


def recommended_line(recommendation: dict[str, Any]) -> str:
    """``trial 7: mean validation accuracy 0.9712 ± 0.0031 over 3 fresh seed(s)``."""
    if not recommendation.get("n"):
        return (f"trial {recommendation['trial']}: validation accuracy "
                f"{recommendation['mean']:.4f} in the search, no finalist retrained (time)")
    std = recommendation.get("std")
    spread = "" if std is None else f" ± {std:.4f}"
    partial = "" if recommendation.get("complete", True) else " (fewer seeds than asked: time)"
    refit = "; refit on train+val" if (recommendation.get("refit") or {}).get("artifact") else ""
    return (f"trial {recommendation['trial']}: mean validation accuracy "
            f"{recommendation['mean']:.4f}{spread} over {recommendation['n']} fresh seed(s) "
            f"of {len(recommendation.get('finalists', []))} finalist(s){partial}"
            f"{refit}")  # fmt: skip
