"""Splits read batch by batch instead of held whole: data bigger than memory.

A :class:`StreamedSplit` has the interface of an in-memory :class:`objectives.datasets.Split`
(``len``, ``y``, ``device``, ``batches``, ``example``, ``to``), so training and evaluation take
either. Its samples come from a torch ``Dataset`` through a ``DataLoader`` with worker
processes; the labels (8 bytes a sample) stay in memory, so splits are stratified and the null
model is computed without reading a sample. Raw samples are normalised per batch, on the
device, with the same float32 constants as the in-memory path (``x * multiply - subtract``), so
both paths feed the model the same values.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, default_collate

__all__ = ["ArrayDataset", "StreamedSplit", "Subset"]


class ArrayDataset(Dataset):
    """Samples of an array (a NumPy memory map reads only what is asked for), fetched a batch
    at a time: the DataLoader calls ``__getitems__`` with a batch's indices, one sorted read."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        # a copy: a memory map is read-only, and torch wants writable arrays
        return torch.from_numpy(np.array(self.x[i])), int(self.y[i])

    def __getitems__(self, indices: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        order = np.argsort(indices, kind="stable")
        picked = np.asarray(indices)[order]
        x = np.empty((len(picked), *self.x.shape[1:]), dtype=self.x.dtype)
        x[order] = self.x[picked]  # fancy reads of a memmap are fastest in file order
        return torch.from_numpy(x), torch.from_numpy(np.asarray(self.y[indices], np.int64))


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices`` (batched fetches pass through)."""

    def __init__(self, dataset: Dataset, indices: np.ndarray) -> None:
        self.dataset, self.indices = dataset, np.asarray(indices)

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i: int) -> Any:
        return self.dataset[int(self.indices[i])]

    def __getitems__(self, indices: Sequence[int]) -> Any:
        inner = [int(self.indices[i]) for i in indices]
        fetch = getattr(self.dataset, "__getitems__", None)
        return fetch(inner) if fetch is not None else [self.dataset[i] for i in inner]


def _collate(samples: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch as ``(x, y)`` tensors, from a batched fetch or a list of samples."""
    if isinstance(samples, tuple):
        return samples
    x, y = default_collate(samples)
    return x, torch.as_tensor(y, dtype=torch.int64)


class StreamedSplit:
    """One split read through a ``DataLoader``.

    Args:
        dataset: Yields ``(x, label)`` with ``x`` a raw (C, H, W), (C, L) or (F,) tensor or
            array.
        y: Every label, in the dataset's order.
        multiply, subtract: Float32 constants per channel (axis 1 of a batch; a table's
            features): ``x * multiply - subtract``.
        workers: DataLoader worker processes (0: read in this process).
        device: Where batches go.
    """

    def __init__(
        self,
        dataset: Dataset,
        y: torch.Tensor,
        *,
        multiply: torch.Tensor,
        subtract: torch.Tensor,
        workers: int,
        device: torch.device | str = "cpu",
    ) -> None:
        self.dataset, self.workers = dataset, workers
        self._device = torch.device(device)
        self.y = y.to(self._device)
        self.multiply, self.subtract = multiply.to(self._device), subtract.to(self._device)

    def __len__(self) -> int:
        return len(self.y)

    @property
    def device(self) -> torch.device:
        return self._device

    def to(self, device: torch.device | str) -> StreamedSplit:
        return StreamedSplit(
            self.dataset, self.y, multiply=self.multiply, workers=self.workers,
            subtract=self.subtract, device=device,
        )  # fmt: skip

    def example(self, n: int = 1) -> torch.Tensor:
        """The first ``n`` samples, normalised, on the device."""
        loader = DataLoader(self.dataset, batch_sampler=[list(range(n))], collate_fn=_collate)
        return self._normalised(next(iter(loader))[0])

    def _normalised(self, xb: torch.Tensor) -> torch.Tensor:
        per_channel = (-1,) + (1,) * (xb.ndim - 2)  # broadcast along axis 1 of any rank
        xb = xb.to(self._device, non_blocking=True).float().mul_(self.multiply.view(per_channel))
        return xb.sub_(self.subtract.view(per_channel))

    def batches(
        self,
        batch_size: int,
        *,
        shuffle: bool,
        generator: torch.Generator | None = None,
        augment: Any = None,
        drop_last: bool = False,
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Normalised ``(x, y)`` batches on the device, in a ``randperm`` order drawn from
        ``generator`` when ``shuffle`` (the in-memory path's order for the same seed)."""
        n = len(self)
        order = (
            torch.randperm(n, generator=generator, device=self._device).cpu()
            if shuffle
            else torch.arange(n)
        )
        stop = n - n % batch_size if drop_last else n
        chunks = [order[i : i + batch_size].tolist() for i in range(0, stop, batch_size)]
        loader = DataLoader(
            self.dataset,
            batch_sampler=chunks,
            num_workers=self.workers,
            collate_fn=_collate,
            pin_memory=self._device.type == "cuda",
            prefetch_factor=4 if self.workers else None,
        )
        for xb, yb in loader:
            xb = self._normalised(xb)
            if augment is not None and augment.enabled:
                xb = augment(xb, generator=generator)
            yield xb, yb.to(self._device, non_blocking=True)
