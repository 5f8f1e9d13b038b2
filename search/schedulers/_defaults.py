"""The multi-fidelity schedulers' defaults, declared once: the config's keys, the schedulers'
constructors and the lab's replays read them here (a module that imports nothing, so the
config's checks stay free of Ray)."""

from __future__ import annotations

from typing import Final

#: Epochs every trial trains before any decision: the first rung.
GRACE_EPOCHS: Final = 1
#: η: the top 1/η of a rung go on, and the rungs are η apart.
REDUCTION_FACTOR: Final = 3.0
