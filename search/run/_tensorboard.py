"""The ``tensorboard`` logger: Ray Tune's ``TBXLoggerCallback``, writing each trial's event
file (scalars per epoch, hyper-parameters at its end) into a folder of its own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ray.tune.logger import TBXLoggerCallback

from search.run._loggers import Readable

__all__ = ["TensorBoardLogger"]


class TensorBoardLogger(Readable, TBXLoggerCallback):
    """Ray Tune's TensorBoard logger, shown npas's trials (:class:`Readable`).

    Args:
        objectives: The search's objective names.
        folder: Where each trial's events go, in ``trial-<number>`` (one TensorBoard run each).
    """

    def __init__(self, objectives: Sequence[str], folder: Path) -> None:
        super().__init__(objectives, folder, "tensorboard")
