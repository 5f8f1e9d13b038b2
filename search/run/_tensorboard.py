"""The ``tensorboard`` logger: Ray Tune's ``TBXLoggerCallback``, writing each trial's event
file (scalars per epoch, hyper-parameters at its end) into a folder of its own."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from ray.tune.logger import TBXLoggerCallback

from search.run._loggers import Readable

__all__ = ["TensorBoardLogger"]


class TensorBoardLogger(Readable, TBXLoggerCallback):
    """Ray Tune's TensorBoard logger, shown npas's trials (:class:`Readable`).

    Args:
        objectives: The search's objective names.
        folder: Where each trial's events go, in ``trial-<number>`` (one TensorBoard run each).
        dimensions: The search's dimension and fixed names (:func:`hyper_parameters`).
    """

    def __init__(
        self, objectives: Sequence[str], folder: Path, dimensions: Collection[str] = ()
    ) -> None:
        super().__init__(objectives, folder, "tensorboard", dimensions=dimensions)

    def _stopped(self) -> None:
        """Closes every trial's event files, quietly: tensorboardX closes them again when the
        program ends, and on a full disk each such close printed a traceback."""
        for writer in self._trial_writer.values():
            for files in [*writer.all_writers.values(), writer.file_writer]:
                events = files.event_writer
                try:
                    events.close()
                except OSError:
                    events._closed = True  # its final flush failed: nothing left to write
        self._trial_writer.clear()
