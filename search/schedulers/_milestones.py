"""MOASHA's rungs: the epochs at which a multi-fidelity scheduler judges a trial. Its own
module, without Ray, so that a derivation (``search check``) can place rungs before torch or
Ray is imported."""

from __future__ import annotations

import math

__all__ = ["milestones"]


def milestones(grace: int, rf: float, max_epochs: int) -> tuple[int, ...]:
    """grace * rf**k rounded up to whole epochs, strictly below max_epochs, ascending, unique."""
    rungs: list[int] = []
    k = 0
    while (milestone := math.ceil(grace * rf**k - 1e-9)) < max_epochs:
        if not rungs or milestone > rungs[-1]:
            rungs.append(milestone)
        k += 1
    return tuple(rungs)
