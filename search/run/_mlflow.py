"""The ``mlflow`` logger: Ray Tune's ``MLflowLoggerCallback``, one MLflow run per trial in an
experiment named after the search."""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from ray.air.integrations.mlflow import MLflowLoggerCallback

from search.run._loggers import Readable

__all__ = ["MLflowLogger"]


class MLflowLogger(Readable, MLflowLoggerCallback):
    """Ray Tune's MLflow logger, shown npas's trials (:class:`Readable`): each run holds the
    trial's hyper-parameters as params and its numbers as metrics, stepped by epoch.

    Args:
        objectives: The search's objective names.
        tracking_uri: The MLflow store.
        experiment_name: The experiment (made when missing, reused when it exists).
        artifact_location: The experiment's artifact root, when it is made: the run folder's,
            not the launching shell's working folder (MLflow's default).
        dimensions: The search's dimension and fixed names (:func:`hyper_parameters`).
    """

    def __init__(
        self,
        objectives: Sequence[str],
        *,
        tracking_uri: str,
        experiment_name: str,
        artifact_location: str,
        dimensions: Collection[str] = (),
    ) -> None:
        super().__init__(objectives, None, "mlflow", dimensions=dimensions,
                         tracking_uri=tracking_uri, experiment_name=experiment_name)  # fmt: skip
        self._artifact_location = artifact_location
        self._experiment_name = experiment_name

    def setup(self, *args: Any, **kwargs: Any) -> None:
        self._guarded(self._experiment)
        super().setup(*args, **kwargs)

    def _experiment(self) -> None:
        from mlflow.tracking import MlflowClient

        # a new store's "Creating initial MLflow database tables..." would cut the progress view
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
        store = Path(str(self.tracking_uri).removeprefix("sqlite:///"))
        fresh = not store.exists()
        try:
            client = MlflowClient(tracking_uri=self.tracking_uri)
            if client.get_experiment_by_name(self._experiment_name) is None:
                client.create_experiment(
                    self._experiment_name, artifact_location=self._artifact_location
                )
        except BaseException:
            if fresh:  # a store MLflow made half (its migrations cut by a full disk) would
                for path in (store, *(Path(f"{store}{end}") for end in ("-journal", "-wal",
                                                                       "-shm"))):  # fmt: skip
                    path.unlink(missing_ok=True)  # fail every relaunch: it is made anew then
            raise
