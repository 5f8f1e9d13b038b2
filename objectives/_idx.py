"""Readers for the two published formats: IDX (MNIST family) and CIFAR python pickles.

Both are parsed here with numpy, gzip and tarfile only, so no torchvision is needed.
"""

from __future__ import annotations

import gzip
import pickle
import tarfile
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from spaces import NpasError

# IDX type byte → numpy dtype (big-endian, as the format stores it).
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
CIFAR_DIR = "cifar-10-batches-py"
CIFAR_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR_TEST = "test_batch"


class DatasetFormatError(NpasError):
    """A dataset file is truncated or not in the expected format."""


def parse_idx(data: bytes, *, name: str = "IDX data") -> np.ndarray:
    """Decodes an IDX buffer: 2 zero bytes, a type byte, a rank byte, big-endian int32 sizes."""
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise DatasetFormatError(f"{name}: not an IDX file (magic {data[:4].hex()})")
    rank = data[3]
    header = 4 + 4 * rank
    shape = tuple(int(s) for s in np.frombuffer(data, ">i4", count=rank, offset=4))
    dtype = np.dtype(_IDX_TYPES[data[2]])
    expected = header + int(np.prod(shape)) * dtype.itemsize
    if len(data) != expected:
        raise DatasetFormatError(
            f"{name}: {len(data)} bytes, expected {expected} for shape {shape}; truncated file?"
        )
    array = np.frombuffer(data, dtype, offset=header).reshape(shape)
    return array.astype(dtype.newbyteorder("="))  # a writable native-order copy


def read_idx(path: Path) -> np.ndarray:
    """Reads a ``.gz`` or uncompressed IDX file."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise DatasetFormatError(f"{path}: corrupt gzip ({exc})") from None
    return parse_idx(raw, name=str(path))


def _cifar_batch(blob: bytes, name: str) -> tuple[np.ndarray, np.ndarray]:
    """One pickled batch → (N, 3, 32, 32) uint8 images and int64 labels."""
    try:
        batch = pickle.loads(blob, encoding="bytes")  # the published format is a pickle
        data = np.asarray(batch[b"data"], dtype=np.uint8)
        labels = np.asarray(batch[b"labels"], dtype=np.int64)
    except (pickle.UnpicklingError, KeyError, TypeError, ValueError, EOFError) as exc:
        raise DatasetFormatError(f"{name}: not a CIFAR-10 batch ({exc!r})") from None
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or len(labels) != len(data):
        raise DatasetFormatError(
            f"{name}: data {data.shape} / labels {labels.shape}, expected (N, 3072) / (N,)"
        )
    return data.reshape(-1, 3, 32, 32), labels


def read_cifar(source: Path, names: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Reads batches ``names`` from the ``.tar.gz`` archive or from an extracted folder.

    Reading straight from the archive avoids extracting 170 MB into a folder that may be
    read-only.
    """
    if source.is_dir():
        return [_cifar_batch((source / n).read_bytes(), str(source / n)) for n in names]
    try:
        with tarfile.open(source, "r:gz") as archive:
            blobs = {}
            for n in names:
                member = archive.extractfile(f"{CIFAR_DIR}/{n}")
                if member is None:
                    raise KeyError(n)
                blobs[n] = member.read()
    except (tarfile.TarError, KeyError, OSError, EOFError) as exc:
        raise DatasetFormatError(f"{source}: cannot read {CIFAR_DIR}/ batches ({exc})") from None
    return [_cifar_batch(blobs[n], f"{source}:{n}") for n in names]
