"""A user's dataset read once, before a search: every value finite, every sample readable and
of one shape, and a fingerprint of what was read.

Why: a NaN pixel or an unreadable image otherwise shows up trial by trial, as a diverging loss
or a worker's traceback, after the study exists; and data changed under the same path between
two launches of a search would mix two datasets in one study. The fingerprint (samples, shape,
dtype, a SHA-256 of the labels and of the samples) is what a relaunch compares.

What is read: every value of an array split (a memory map chunk by chunk; integer arrays are
hashed, not scanned, above :data:`HASH_ALL_BELOW`); every sample of an image folder (each image
decoded); :data:`SCAN_SAMPLES` evenly spaced samples of any other torch ``Dataset``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from spaces import ConfigError

__all__ = [
    "HASH_ALL_BELOW",
    "SCAN_SAMPLES",
    "check_numeric",
    "evenly",
    "scan_array",
    "scan_dataset",
]

#: Samples of a torch Dataset (not an image folder) read per split; samples hashed per split
#: of an array larger than :data:`HASH_ALL_BELOW`.
SCAN_SAMPLES = 1024
#: An array split up to this many bytes is hashed whole; a larger one by ``SCAN_SAMPLES``
#: evenly spaced samples (and every label, always).
HASH_ALL_BELOW = 64 << 20
_CHUNK_BYTES = 32 << 20
_NUMERIC = "biuf"  # bool, signed, unsigned, floating point


def evenly(n: int, most: int) -> np.ndarray:
    """Up to ``most`` indices spread evenly over ``range(n)``, first and last included."""
    return np.unique(np.linspace(0, n - 1, min(n, most)).astype(np.int64))


def _labels_hash(y: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(y, dtype=np.int64).tobytes()).hexdigest()


def _record(
    y: np.ndarray, shape: Sequence[int], dtype: Any, digest: Any, read: int
) -> dict[str, Any]:
    """One split's part of the fingerprint, as plain JSON values."""
    return {
        "samples": len(y),
        "shape": [int(n) for n in shape],
        "dtype": str(dtype),
        "labels_sha256": _labels_hash(y),
        "samples_sha256": digest.hexdigest(),
        "samples_hashed": read,
    }


def check_numeric(dtype: Any, where: str) -> None:
    """Samples of numbers, or a ConfigError that says how text becomes numbers."""
    kind = np.dtype(dtype).kind
    if kind not in _NUMERIC:
        text = (" (text: numbers read as text convert with x.astype('float32'); a column of "
                "words needs encoding first, one-hot or ordinal)" if kind in "US" else "")
        raise ConfigError(
            f"{where}: samples of dtype {dtype}{text}; allowed: integer or floating-point "
            "values"
        )


def scan_array(x: np.ndarray, y: np.ndarray, where: str) -> dict[str, Any]:
    """Checks an array split (N × one sample's shape) and returns its fingerprint.

    Raises:
        ConfigError: a non-numeric dtype, an empty sample, or a value that is not finite
            (NaN, ±inf), naming the first such sample and how many there are.
    """
    check_numeric(x.dtype, where)
    if 0 in x.shape[1:]:
        raise ConfigError(f"{where}: samples of shape {x.shape[1:]}; allowed: no empty axis")
    whole = x.nbytes <= HASH_ALL_BELOW
    digest = hashlib.sha256()
    step = max(1, _CHUNK_BYTES // max(1, x[0].nbytes))
    first, bad = -1, 0
    if whole or x.dtype.kind == "f":  # integers are finite: a large integer array is sampled
        for start in range(0, len(x), step):
            chunk = np.ascontiguousarray(x[start : start + step])  # a memory map: this chunk
            if x.dtype.kind == "f":
                finite = np.isfinite(chunk.reshape(len(chunk), -1)).all(axis=1)
                if first < 0 and not finite.all():
                    first = start + int(np.flatnonzero(~finite)[0])
                bad += int((~finite).sum())
            if whole:
                digest.update(chunk.tobytes())
    if bad:
        value = np.asarray(x[first]).ravel()
        odd = value[~np.isfinite(value)][0]
        raise ConfigError(
            f"{where}: {bad} sample(s) hold values that are not finite (the first: sample "
            f"{first}, {odd}); allowed: finite values"
        )
    if whole:
        return _record(y, x.shape[1:], x.dtype, digest, len(x))
    picked = evenly(len(x), SCAN_SAMPLES)
    for i in picked:
        digest.update(np.ascontiguousarray(x[i]).tobytes())
    return _record(y, x.shape[1:], x.dtype, digest, len(picked))


def scan_dataset(
    dataset: Dataset, y: np.ndarray, indices: np.ndarray, where: str, *, unreadable: str = ""
) -> dict[str, Any]:
    """Reads the samples of ``dataset`` at ``indices``, checks them and returns the split's
    fingerprint (their bytes and every label hashed).

    Args:
        unreadable: What the refusal of unreadable samples adds as the way out.

    Raises:
        ConfigError: samples that cannot be read (counted, the first named), or a sample of
            another shape, a non-numeric dtype or a value that is not finite.
    """
    digest = hashlib.sha256()
    failed: list[str] = []
    shape = dtype = None
    for i in indices:
        try:
            x = dataset[int(i)][0]
        except Exception as err:  # the user's code or an image decoder raises anything
            failed.append(str(err) if isinstance(err, ConfigError)
                          else f"sample {i}: {type(err).__name__}: {err}")  # fmt: skip
            continue
        array = x.numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
        if shape is None:
            shape, dtype = array.shape, array.dtype
            check_numeric(dtype, where)
        if array.shape != shape or array.dtype != dtype:
            raise ConfigError(
                f"{where}: sample {i} has shape {array.shape} ({array.dtype}), sample "
                f"{indices[0]} {shape} ({dtype}); allowed: one shape and dtype for every sample"
            )
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise ConfigError(
                f"{where}: sample {i} holds values that are not finite; allowed: finite values"
            )
        digest.update(np.ascontiguousarray(array).tobytes())
    if failed:
        first = " ".join(failed[0].split())
        raise ConfigError(
            f"{where}: {len(failed)} of {len(indices)} sample(s) checked could not be read "
            f"(the first: {first}){unreadable}"
        )
    return _record(y, shape or (), dtype, digest, len(indices))
