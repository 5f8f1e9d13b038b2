"""How a dataset's batches reach the model by default (:func:`objectives.datasets.load`'s
``stream`` and ``workers``), apart from the loaders, so that the search's config checks its
``loading`` section without loading torch."""

from __future__ import annotations

__all__ = ["LOADER_WORKERS", "STREAM_ABOVE_MB"]

#: ``load(stream=None)`` streams a dataset whose training split takes more (float32, MiB).
STREAM_ABOVE_MB = 1024.0
#: ``load(workers=...)``: the loader processes that feed a streamed dataset's batches.
LOADER_WORKERS = 2
