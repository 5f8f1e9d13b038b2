"""The user's datasets: registered in code (:func:`register_dataset`) or declared in a config.

A dataset function returns :class:`Splits`: each split is ``(x, y)`` arrays or tensors (a NumPy
memory map is read only where asked) or any torch ``Dataset`` of ``(x, label)`` samples. npas
then does what it does for its own datasets: carves a stratified validation split from the
training split when none is given (and a fixed 20 % test split, ``random_state=0``, when there
is no test split), keeps a ``train_size`` subset, normalises per channel with the training
split's statistics (per channel of an image or a signal, per feature of a table), and holds the
splits on the device or streams them (see :func:`objectives.datasets.load`). Samples are images
(C×H×W), signals (C×L) or table rows (F): declared as ``layout``, else read from the rank
(``objectives._layout``). The provenance in ``Data.provenance`` (and a bundle's
``metrics.json``) is the user's name and the source they give.

Declared datasets (``dataset: {name: ..., image_folder: DIR}``, ``npz: FILE``, ``npy: [X, Y]``)
are built by :func:`declare`, in every process that reads the config, with one entry per name.

Every process checks the labels and each split's first sample; :meth:`CustomDataset.check`, which
``search check`` and ``search launch`` call before a study exists, reads the data once more
(``objectives._scan``) and returns their fingerprint.
"""

from __future__ import annotations

import errno
import functools
import math
import os
import stat
import zipfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from objectives._layout import arrange, check_layout, sample_layout
from objectives._scan import SCAN_SAMPLES, check_numeric, evenly, scan_array, scan_dataset
from objectives._split import stratified_split
from objectives._streaming import ArrayDataset, StreamedSplit, Subset, _collate
from objectives.datasets import (
    _DIGITS_TEST_FRACTION,
    DATASETS,
    LOADER_WORKERS,
    STREAM_ABOVE_MB,
    Augment,
    Data,
    _check_train_size,
    _check_val_size,
    make_split,
    streams,
)
from spaces import ConfigError, Registry, is_int

__all__ = [
    "DECLARED_KINDS",
    "CustomDataset",
    "DeclaredKind",
    "Splits",
    "check_folds",
    "declare",
    "register_dataset",
]

#: Samples the channel statistics are measured on at most (evenly spaced over the split).
STATS_SAMPLES = 10_000
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


@dataclass(frozen=True)
class Splits:
    """What a dataset function returns.

    Attributes:
        train: ``(x, y)`` (x: N×C×H×W or N×H×W images, N×C×L signals, N×F rows: see the
            dataset's ``layout``; y: integer labels) or a torch ``Dataset`` yielding
            ``(x, label)`` with x C×H×W, C×L or F (a ``targets`` attribute spares reading
            every sample).
        test: Same kinds; reported, never optimised on. None: a fixed stratified 20 %.
        val: Same kinds; None: carved (stratified, seeded) from ``train``.
        num_classes: None: the largest label + 1 where the labels are 0..K-1, each occurring;
            otherwise the distinct labels of the training split (strings, booleans, integral
            floats, 1..K, -1 and 1, or integers with gaps), each mapped to its index in sorted
            order (as scikit-learn's ``LabelEncoder``) and recorded (``classes``). Given, the
            labels are class indices below it, as they are.
        classes: The class of each model output, by name: an image folder's class folders,
            or (set by npas) the labels' own values where it maps them; None: the outputs
            are the labels themselves.
        mean, std: Statistics of the scaled training samples, one per channel (one per
            feature of a table); None: measured.
        pixel_scale: Raw values are divided by this first; None: 255 for uint8, else 1.
    """

    train: Any
    test: Any = None
    val: Any = None
    num_classes: int | None = None
    classes: Sequence[Any] | None = None
    mean: Sequence[float] | None = None
    std: Sequence[float] | None = None
    pixel_scale: float | None = None


@dataclass(frozen=True)
class _Part:
    """One split as npas reads it: every sample through ``dataset`` (an array's samples are
    read on demand, so a memory map stays on disk), every label in memory."""

    dataset: Dataset
    y: np.ndarray

    def take(self, indices: np.ndarray) -> _Part:
        return _Part(Subset(self.dataset, indices), self.y[indices])


class CustomDataset:
    """A user's dataset in the dataset registry (``objectives.datasets.DATASETS``).

    Args:
        name: Registry name.
        make: Returns the :class:`Splits` (called once per process).
        source: Where the data come from, as the user states it (recorded as provenance).
        augment: Default augmentation.
        val_size: Validation fraction or count carved from ``train`` when there is no ``val``.
        layout: ``image``, ``signal`` or ``table`` (:data:`objectives._layout.LAYOUTS`);
            None: an array's rank decides (rank 3: N×H×W images), a Dataset's sample rank.
        declared: The config declaration it was built from (None: registered in code).
    """

    def __init__(
        self,
        name: str,
        make: Callable[[], Splits],
        *,
        source: str,
        augment: Augment | None = None,
        val_size: int | float = 0.1,
        layout: str | None = None,
        declared: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(source, str) or not source.strip():
            raise ConfigError(
                f"dataset {name!r}: source must say where the data come from (a URL, a "
                f"path, a citation), got {source!r}"
            )
        self.name, self.make, self.source = name, make, source
        self.augment = augment or Augment()
        self.val_size, self.declared = val_size, declared
        self.layout = check_layout(layout, f"dataset {name!r}, layout")

    @functools.cached_property
    def _given(self) -> tuple[dict[str, _Part], Splits]:
        """The splits the function gives, by name, and the Splits; labels checked."""
        splits = self.make()
        if not isinstance(splits, Splits):
            raise ConfigError(
                f"dataset {self.name!r}: its function returned {type(splits).__name__}; "
                "allowed: objectives.Splits(train=(x, y), test=(x, y), val=...)"
            )
        given = {s: self._part(getattr(splits, s), s) for s in ("train", "test", "val")
                 if s == "train" or getattr(splits, s) is not None}  # fmt: skip
        if splits.num_classes is None and splits.classes is None and _needs_encoding(given):
            given, names = self._encoded(given)
            splits = replace(splits, classes=names)
        self._check_labels(given, splits)
        return given, splits

    @functools.cached_property
    def class_names(self) -> list[Any] | None:
        """The class of each model output, as the data name it (mapped labels' values, an
        image folder's folders); None: the outputs are the labels themselves."""
        names = self._given[1].classes
        return None if names is None else [_plain(v) for v in names]

    def _encoded(self, given: dict[str, _Part]) -> tuple[dict[str, _Part], list[Any]]:
        """Labels that are not class indices 0..K-1 (strings, booleans, 1..K, gaps) mapped to
        their index among the training split's sorted distinct labels; a label of another
        split that the training split lacks is refused (no model can learn it)."""
        kinds = {"number" if p.y.dtype.kind in "iuf" else p.y.dtype.kind for p in given.values()}
        if len(kinds) > 1:
            raise ConfigError(
                f"dataset {self.name!r}: labels of dtypes "
                f"{', '.join(f'{given[s].y.dtype} in split {s!r}' for s in given)}; allowed: "
                "one kind of label in every split (numbers, strings or booleans)"
            )
        names = np.unique(given["train"].y)
        for split, part in given.items():
            unlearnt = np.setdiff1d(part.y, names)
            if len(unlearnt):
                raise ConfigError(
                    f"dataset {self.name!r}: label {_plain(unlearnt[0])!r} occurs "
                    f"({int((part.y == unlearnt[0]).sum())} in split {split!r}) but never in "
                    f"the training split ({len(unlearnt)} such label(s)), so no model can "
                    "learn it; allowed: every class in the training split (move samples of it "
                    "there, or drop it), or class indices 0..K-1 with the class count given "
                    "(num_classes) to keep it anyway"
                )
        encoded = {}
        for split, part in given.items():
            if not isinstance(part.dataset, ArrayDataset):
                raise ConfigError(
                    f"dataset {self.name!r}, split {split!r}: labels {_shown(names)} from a "
                    "torch Dataset; allowed: class indices 0..K-1 from a Dataset, or arrays "
                    "(whose labels npas maps to class indices itself)"
                )
            codes = np.searchsorted(names, part.y).astype(np.int64)
            encoded[split] = _Part(ArrayDataset(part.dataset.x, codes), codes)
        return encoded, list(names)

    @functools.cached_property
    def _parts(self) -> tuple[_Part, _Part, _Part | None, Splits]:
        """train, test, val (None: carved) and the Splits, checked once per process."""
        given, splits = self._given
        train, test, val = given["train"], given.get("test"), given.get("val")
        if test is None:
            kept, held = stratified_split(train.y, _DIGITS_TEST_FRACTION, seed=0)
            train, test = train.take(kept), train.take(held)
        self._check(train, test, val, splits)
        return train, test, val, splits

    @property
    def in_shape(self) -> tuple[int, ...]:
        return tuple(int(n) for n in _sample(self._parts[0]).shape)

    @property
    def train_samples(self) -> int:
        """Samples of the training split before a validation split is carved from it (a test
        split carved already): what a derivation sizes epochs and batches by."""
        return len(self._parts[0].y)

    @property
    def sample_layout(self) -> str:
        """``image``, ``signal`` or ``table``: as declared, else what the samples' rank gave."""
        return sample_layout(self.in_shape, self.layout, f"dataset {self.name!r}")

    @property
    def num_classes(self) -> int:
        given, splits = self._given
        if splits.num_classes is not None:
            return int(splits.num_classes)
        return int(max(p.y.max() for p in given.values())) + 1

    def check(self) -> dict[str, Any]:
        """Reads every split once (``objectives._scan``: every value of an array, every image
        of a folder, evenly spaced samples of another Dataset) and checks labels and shapes.

        Returns:
            The data's fingerprint (plain JSON values): per split the samples, their shape
            and dtype, SHA-256 hashes of the labels and of the samples read; the classes; the
            unreadable images skipped.

        Raises:
            ConfigError: one line naming the dataset, the split and what is wrong.
        """
        return self._fingerprint

    @functools.cached_property
    def _fingerprint(self) -> dict[str, Any]:
        given, _ = self._given
        splits = {s: _scan(part, f"dataset {self.name!r}, split {s!r}")
                  for s, part in given.items()}  # fmt: skip
        self._parts  # noqa: B018 (the property checks every split's shape against train's)
        skipped = sum(len(getattr(p.dataset, "skipped", ())) for p in given.values())
        mapped = self._given[1].num_classes is None and self.class_names is not None
        return {"dataset": self.name, "classes": self.num_classes, "splits": splits,
                **({"labels": self.class_names} if mapped else {}),
                **({"skipped": skipped} if skipped else {})}  # fmt: skip

    def _part(self, value: Any, split: str) -> _Part:
        where = f"dataset {self.name!r}, split {split!r}"
        if isinstance(value, Dataset):
            y = getattr(value, "targets", None)
            if y is None:
                try:
                    # torch's Dataset declares no __len__ (a map-style one has it)
                    y = [value[i][1] for i in range(len(value))]  # type: ignore[arg-type]
                except Exception as err:  # the user's Dataset raises anything
                    raise ConfigError(f"{where}: reading its labels: {type(err).__name__}: "
                                      f"{err}") from None  # fmt: skip
            return _Part(value, _labels(y, where))
        if not isinstance(value, tuple | list) or len(value) != 2:
            raise ConfigError(
                f"{where}: got {type(value).__name__}; allowed: (x, y) arrays or tensors, or "
                "a torch Dataset of (x, label)"
            )
        x, y = (v.numpy() if isinstance(v, torch.Tensor) else v for v in value)
        x = arrange(np.asarray(x) if not isinstance(x, np.ndarray) else x, self.layout, where)
        check_numeric(x.dtype, where)
        labels = _labels(y, where)
        if len(labels) != len(x):
            raise ConfigError(f"{where}: {len(x)} samples but {len(labels)} labels")
        return _Part(ArrayDataset(x, labels), labels)

    def _check_labels(self, given: dict[str, _Part], splits: Splits) -> None:
        """Labels within the declared classes (``num_classes``: class indices, as given), and
        two classes or more in the training split (labels not 0..K-1 are mapped first)."""
        classes = splits.num_classes
        if classes is not None:
            if not is_int(classes, 2):
                raise ConfigError(
                    f"dataset {self.name!r}: num_classes {classes!r}; allowed: an int >= 2"
                )
            odd = next((p.y.dtype for p in given.values() if p.y.dtype.kind != "i"), None)
            if odd is not None:
                raise ConfigError(
                    f"dataset {self.name!r}: labels of dtype {odd} with num_classes={classes}; "
                    "allowed: class indices 0..num_classes-1 (or no num_classes: npas then "
                    "maps the labels to classes itself)"
                )
            top = max(int(p.y.max()) for p in given.values())
            low = min(int(p.y.min()) for p in given.values())
            if top >= classes or low < 0:
                raise ConfigError(
                    f"dataset {self.name!r}: label {top if top >= classes else low} with "
                    f"num_classes={classes}; allowed: labels 0..{classes - 1}"
                )
            return
        if len(np.unique(given["train"].y)) < 2:
            raise ConfigError(f"dataset {self.name!r}: one class only; allowed: at least 2")

    def _check(self, train: _Part, test: _Part, val: _Part | None, splits: Splits) -> None:
        shape = tuple(_sample(train).shape)
        layout = sample_layout(shape, self.layout, f"dataset {self.name!r}, split 'train'")
        allowed = _augment_allowed(self.augment, layout, shape)
        if allowed:
            raise ConfigError(
                f"dataset {self.name!r}: augment {self.augment} on {layout} samples of shape "
                f"{shape}; allowed: {allowed}"
            )
        for split, part in (("test", test), ("val", val)):
            if part is not None and tuple(_sample(part).shape) != shape:
                raise ConfigError(
                    f"dataset {self.name!r}, split {split!r}: a sample has shape "
                    f"{tuple(_sample(part).shape)}, the training split's {shape}; allowed: "
                    "one shape for every split"
                )
        for key in ("mean", "std"):
            given = getattr(splits, key)
            if given is not None and (
                len(given) != shape[0] or not all(math.isfinite(v) for v in given)
            ):
                raise ConfigError(
                    f"dataset {self.name!r}: {key} {list(given)!r}; allowed: {shape[0]} "
                    f"finite numbers, one per {'feature' if layout == 'table' else 'channel'}"
                )

    def check_sizes(
        self, val_size: int | float | None, train_size: int | None, folds: int = 1
    ) -> None:
        """The validation and training sizes and the folds a search asks for, checked against
        the data (the rules :meth:`load` and ``Data.fold`` apply; ``search check`` calls it
        before any trial, which would otherwise each fail on it). The validation split holds
        ``ceil(val_size * n)`` of a fraction, as :func:`stratified_split` carves it; folds
        pool the training and validation splits, one sample a fold at least.

        Raises:
            ConfigError: naming the dataset and the counts its classes allow.
        """
        train, _, val, _ = self._parts
        n, classes = len(train.y), self.num_classes
        try:
            if val is None:
                size = self.val_size if val_size is None else val_size
                _check_val_size(size, n, classes)
                held = math.ceil(size * n) if isinstance(size, float) else int(size)
                n -= held
            else:
                held = len(val.y)
            if train_size is not None and train_size != n:
                _check_train_size(train_size, n, classes)
            check_folds(folds, (n if train_size is None else train_size) + held)
        except ConfigError as err:
            raise ConfigError(f"dataset {self.name!r}: {err}") from None

    def load(
        self,
        *,
        device: torch.device | str = "cpu",
        val_size: int | float | None = None,
        train_size: int | None = None,
        seed: int = 0,
        stream: bool | None = None,
        stream_above_mb: float = STREAM_ABOVE_MB,
        workers: int = LOADER_WORKERS,
    ) -> Data:
        """The dataset as :func:`objectives.datasets.load` gives it (same arguments)."""
        self.check_sizes(val_size, train_size)
        train, test, val, splits = self._parts
        size = None
        if val is None:
            size = self.val_size if val_size is None else val_size
            kept, held = stratified_split(train.y, size, seed=seed)
            train, val = train.take(kept), train.take(held)
        if train_size is not None and train_size != len(train.y):
            train = train.take(stratified_split(train.y, train_size, seed=seed)[1])
        scale = splits.pixel_scale or (255.0 if _sample(train).dtype == torch.uint8 else 1.0)
        mean, std, stats = _stats(train, scale, splits)
        streamed = streams(stream, len(train.y) * math.prod(self.in_shape) * 4, stream_above_mb)

        def split(part: _Part) -> Any:
            if streamed:
                return StreamedSplit(part.dataset, torch.from_numpy(part.y), workers=workers,
                                     multiply=1.0 / (scale * std), subtract=mean / std,
                                     device=device)  # fmt: skip
            return make_split(_raw(part, workers), part.y, scale, mean, std, device, False, 0)

        train_split, val_split, test_split = split(train), split(val), split(test)
        provenance = {
            "dataset": self.name,
            "source": self.source,
            "splits": {"train": len(train.y), "val": len(val.y), "test": len(test.y)},
            "val_size": size,
            "train_size": train_size,
            "seed": seed,
            "stats": stats,
            "pixel_scale": scale,
            "layout": self.sample_layout,
            "streamed": streamed,
            **({"classes": self.class_names} if self.class_names is not None else {}),
            **({"declared": dict(self.declared)} if self.declared else {}),
        }
        return Data(
            name=self.name, train=train_split, val=val_split, test=test_split,
            in_shape=self.in_shape, num_classes=self.num_classes, mean=tuple(mean.tolist()),
            std=tuple(std.tolist()), augment=self.augment, provenance=provenance,
        )  # fmt: skip


def _labels(y: Any, where: str) -> np.ndarray:
    """The labels as a 1-D array: integers (int64), or strings, booleans or integral floats
    as given (mapped to class indices once every split is read: ``CustomDataset._encoded``)."""
    array = np.asarray(y.numpy() if isinstance(y, torch.Tensor) else y)
    if array.ndim == 2 and array.shape[1] == 1:  # a column, as pandas and scikit-learn give it
        array = array[:, 0]
    kind = array.dtype.kind
    if array.ndim != 1 or len(array) == 0 or kind not in "iubUSf":
        raise ConfigError(
            f"{where}: labels of dtype {array.dtype} and shape {array.shape}; allowed: a "
            "non-empty 1-D array (or N×1 column) of class labels: integers, strings, booleans "
            "or integral floats"
        )
    if kind == "f":
        bad = ~np.isfinite(array) | (array != np.round(array))
        if bad.any():
            raise ConfigError(
                f"{where}: label {_plain(array[bad][0])!r} (sample {int(np.argmax(bad))}, "
                f"{int(bad.sum())} such); allowed: class labels (a float label must be a "
                "whole number: npas classifies, it does not regress)"
            )
        return array
    if kind == "u" and int(array.max()) > np.iinfo(np.int64).max:
        raise ConfigError(f"{where}: label {int(array.max())}; allowed: class indices < 2**63")
    return array.astype(np.int64) if kind in "iu" else array


def _needs_encoding(given: dict[str, _Part]) -> bool:
    """Whether the labels are anything but class indices 0..K-1 that each occur in the
    training split (then they are used as they are; a label of another split outside them
    goes through the mapping, which refuses it)."""
    train = np.unique(given["train"].y)
    if train.dtype.kind != "i":
        return True
    return not (np.array_equal(train, np.arange(len(train)))
                and all(p.y.dtype.kind == "i" and p.y.min() >= 0 and p.y.max() < len(train)
                        for p in given.values()))  # fmt: skip


def _plain(value: Any) -> Any:
    """A label's value as plain JSON (an integral float as an int, bytes as text)."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _shown(names: np.ndarray) -> str:
    """The first labels, for a message."""
    return ", ".join(repr(_plain(v)) for v in names[:5]) + (", ..." if len(names) > 5 else "")


def _scan(part: _Part, where: str) -> dict[str, Any]:
    """One given split read (``objectives._scan``): an array whole, every image of a folder,
    :data:`~objectives._scan.SCAN_SAMPLES` evenly spaced samples of another Dataset."""
    dataset = part.dataset
    if isinstance(dataset, ArrayDataset):
        return scan_array(dataset.x, part.y, where)
    if isinstance(dataset, ImageFolder):
        return scan_dataset(dataset, part.y, np.arange(len(dataset)), where,
                            unreadable=_SKIP_HINT)  # fmt: skip
    return scan_dataset(dataset, part.y, evenly(len(part.y), SCAN_SAMPLES), where)


def _sample(part: _Part) -> torch.Tensor:
    x = part.dataset[0][0]
    return x if isinstance(x, torch.Tensor) else torch.from_numpy(np.asarray(x))


def _batches(part: _Part, workers: int, indices: np.ndarray | None = None) -> Any:
    dataset = part.dataset if indices is None else Subset(part.dataset, indices)
    order = list(range(len(dataset)))  # type: ignore[arg-type]  # Dataset declares no __len__
    chunks = [order[i : i + 512] for i in range(0, len(order), 512)]
    return DataLoader(dataset, batch_sampler=chunks, num_workers=workers, collate_fn=_collate)


def _raw(part: _Part, workers: int) -> np.ndarray:
    """Every raw sample of a part as one array (the in-memory path): an array's as it is (a
    copy: a memory map is read-only), another Dataset's through ``workers`` loader processes
    (each a Python that imports torch: in a spawned process seconds apiece, which a finalist
    run, a new seed and so a new load, paid 6 times over for a 280-row table)."""
    whole, indices = part.dataset, None
    if isinstance(part.dataset, Subset):  # a split carved from another (the validation split)
        whole, indices = part.dataset.dataset, part.dataset.indices
    if isinstance(whole, ArrayDataset):
        return np.array(whole.x if indices is None else whole.x[indices])
    return torch.cat([xb for xb, _ in _batches(part, workers)]).numpy()


def _stats(part: _Part, scale: float, splits: Splits) -> tuple[torch.Tensor, torch.Tensor, str]:
    """Mean and std of the scaled training samples per channel (axis 1: an image's or a
    signal's channel, a table's feature), as given or measured on up to :data:`STATS_SAMPLES`
    evenly spaced samples (the note says which)."""
    if splits.mean is not None and splits.std is not None:
        return (torch.tensor(splits.mean, dtype=torch.float32),
                torch.tensor(splits.std, dtype=torch.float32), "given")  # fmt: skip
    n = len(part.y)
    picked = np.unique(np.linspace(0, n - 1, min(n, STATS_SAMPLES)).astype(np.int64))
    total: torch.Tensor | None = None
    total_sq: torch.Tensor | None = None
    count = 0
    for xb, _ in _batches(part, 0, picked):
        x = xb.double() / scale
        axes = (0, *range(2, x.ndim))
        total = x.sum(dim=axes) if total is None else total + x.sum(dim=axes)
        total_sq = (x * x).sum(dim=axes) if total_sq is None else total_sq + (x * x).sum(dim=axes)
        count += x.numel() // x.shape[1]
    assert total is not None and total_sq is not None  # a split has labels, so samples
    mean = total / count
    std = ((total_sq / count - mean * mean).clamp_min(0) * count / max(count - 1, 1)).sqrt()
    mean = torch.tensor(splits.mean) if splits.mean is not None else mean
    std = torch.tensor(splits.std) if splits.std is not None else std.clamp_min(1e-8)
    note = f"measured on {len(picked)} of {n} training samples"
    return mean.float(), std.float(), note


def register_dataset(
    name: str,
    *,
    source: str,
    augment: Augment | None = None,
    val_size: int | float = 0.1,
    layout: str | None = None,
) -> Callable[[Callable[[], Splits]], Callable[[], Splits]]:
    """Registers a dataset function under ``name`` (a duplicate name raises).

    Args:
        name: The name a config's ``dataset:`` gives.
        source: Where the data come from (a URL, a path, a citation): the provenance recorded
            with every result and bundle.
        augment: Default augmentation (:class:`objectives.datasets.Augment`); none by default.
        val_size: Validation fraction or count carved from ``train`` when the function gives
            no ``val``.
        layout: ``"image"`` (N×C×H×W, or N×H×W), ``"signal"`` (N×C×L, or N×L) or ``"table"``
            (N×F); None: the rank decides (4 image, 3 image N×H×W, 2 table; a Dataset's
            sample: 3 image, 2 signal, 1 table). Arrays that do not match are refused.

    Example:
        >>> @register_dataset("my-digits", source="sklearn load_digits")  # doctest: +SKIP
        ... def my_digits() -> Splits:
        ...     x, y = load_digits(return_X_y=True)
        ...     return Splits(train=(x.reshape(-1, 8, 8)[:1400], y[:1400]), test=...)
    """

    def decorator(fn: Callable[[], Splits]) -> Callable[[], Splits]:
        entry = CustomDataset(name, fn, source=source, augment=augment, val_size=val_size,
                              layout=layout)  # fmt: skip
        DATASETS.add(name, entry)
        return fn

    return decorator


# -- declared in a config ---------------------------------------------------------------------


class DeclaredKind(NamedTuple):
    """A kind of dataset declaration: what its key names, and the reader of its splits."""

    about: str
    read: Callable[..., Splits]


#: A declaration's kinds: key → :class:`DeclaredKind` (each reader registers with ``_kind``).
DECLARED_KINDS: Registry[DeclaredKind] = Registry("dataset declaration kind")


def _kind(name: str, about: str) -> Callable[[Callable[..., Splits]], Callable[..., Splits]]:
    def decorator(read: Callable[..., Splits]) -> Callable[..., Splits]:
        DECLARED_KINDS.register(name)(DeclaredKind(about, read))
        return read

    return decorator


def _kinds_text() -> dict[str, str]:
    return {k: DECLARED_KINDS.get(k).about for k in DECLARED_KINDS}


#: A declaration's options besides its kind: option → (type, default, what it means), the one
#: place they are declared (the check below and the docs' YAML reference read it).
_OPTIONS: dict[str, tuple[str, str, str]] = {
    "name": ("str", "required", "the dataset's name, as results and bundles record it"),
    "source": ("str", "the kind and its path", "where the data come from (a URL, a path, a "
               "citation): the provenance recorded with every result and bundle"),
    "layout": ("str", "from the rank", "image (N×C×H×W, or N×H×W), signal (N×C×L, or N×L) or "
               "table (N×F): how x is laid out; without it rank 4 and 3 are images (N×H×W: "
               "one channel added) and rank 2 a table (npz, npy)"),
    "size": ("list[int]", "the first image's", "[H, W] every image is resized to "
             "(image_folder)"),
    "channels": ("int", "3 if at least half of 64 training images spread over the folder are "
                 "in colour, else 1", "1 or 3: every image is converted to it (image_folder)"),
    "mean": ("list[float]", "measured", "per channel (per feature of a table), for "
             "normalisation; else measured on up to 10,000 training samples"),
    "std": ("list[float]", "measured", "per channel, as mean"),
    "num_classes": ("int", "the training labels' count (0..K-1 as given, others mapped)",
                    "classes (>= 2); given, labels must be indices 0..num_classes-1"),
    "val_size": ("float or int", "0.1", "validation fraction or count carved from train when "
                 "there is no val split"),
    "augment": ("mapping", "none", "applied to training batches: {pad: N, flip: bool} for "
                "images (pad-crop by N pixels, mirror), {shift: N} for signals (shifted in "
                "time by up to N samples, N smaller than the length)"),
    "skip_unreadable": ("bool", "false", "leave out (and count) images that cannot be decoded "
                        "(image_folder)"),
}  # fmt: skip
_SKIP_HINT = (
    "; allowed: readable .png or .jpg images, or skip_unreadable: true in the dataset's "
    "declaration to leave them out (counted)"
)


def declare(
    spec: Mapping[str, Any],
    *,
    path: str = "dataset",
    base: str | Path | None = None,
    need_files: bool = True,
) -> dict[str, Any]:
    """Registers the dataset a config declares (once per process: the same declaration again
    is a no-op; another under a registered name raises) and returns the declaration as
    recorded: paths absolute (a relative one is taken from ``base``, default the working
    folder), ``source`` filled in. With ``need_files=False`` a missing file is not refused
    (reading the data then fails): a replay of a recorded search reads no data, and the files
    of the machine that recorded it may be gone.

    Raises:
        ConfigError: a missing or unknown key, a bad value, or a name already registered.
    """
    spec = dict(spec)
    kinds = [k for k in DECLARED_KINDS if k in spec]
    unknown = [k for k in spec if k not in (*DECLARED_KINDS, *_OPTIONS)]
    if unknown or len(kinds) != 1 or not isinstance(spec.get("name"), str):
        raise ConfigError(
            f"{path}: got {spec!r}; allowed: a registered name, or a mapping with 'name' and "
            f"exactly one of {_kinds_text()} (options {list(_OPTIONS)[1:]})"
        )
    kind = kinds[0]
    layout = check_layout(spec.get("layout"), f"{path}.layout")
    if kind == "image_folder" and layout not in (None, "image"):
        raise ConfigError(f"{path}.layout: {layout!r} with image_folder; allowed: image")
    if "num_classes" in spec and not is_int(spec["num_classes"], 2):
        raise ConfigError(f"{path}.num_classes: got {spec['num_classes']!r}; allowed: an int >= 2")
    skip = spec.get("skip_unreadable", False)
    if not isinstance(skip, bool) or (skip and kind != "image_folder"):
        raise ConfigError(
            f"{path}.skip_unreadable: got {skip!r} with {kind}; allowed: true or false, and "
            "true with image_folder only"
        )
    target = spec[kind]
    files = target if kind == "npy" else [target]
    if not isinstance(files, list) or len(files) != (2 if kind == "npy" else 1):
        raise ConfigError(
            f"{path}.{kind}: got {target!r}; allowed: {DECLARED_KINDS.get(kind).about}"
        )
    given = [Path(base or Path.cwd()) / Path(str(f)).expanduser() for f in files]
    resolved = [_declared_path(g, kind, f"{path}.{kind}")
                if need_files or os.path.lexists(g) else os.path.abspath(g)
                for g in given]  # fmt: skip
    record = {**spec, kind: resolved if kind == "npy" else resolved[0]}
    record.setdefault("source", f"{kind} {record[kind]}")
    name = record["name"]
    if name in DATASETS:
        if getattr(DATASETS.get(name), "declared", None) == record:
            return record
        raise ConfigError(
            f"{path}.name: dataset {name!r} is already registered (a built-in, a registered "
            "function or another declaration); allowed: a new name"
        )
    augment = _declared_augment(record.get("augment"), layout, f"{path}.augment")
    make = functools.partial(DECLARED_KINDS.get(kind).read, record, path)
    entry = CustomDataset(name, make, source=record["source"], augment=augment, layout=layout,
                          val_size=record.get("val_size", 0.1), declared=record)  # fmt: skip
    DATASETS.add(name, entry)
    return record


def _declared_augment(value: Any, layout: str | None, path: str) -> Augment | None:
    """A declaration's ``augment`` as an :class:`Augment` (None: absent or empty), its keys
    and values checked, and the keys fitting the declared layout (an undeclared one is checked
    against the samples when they are read).

    Raises:
        ConfigError: naming the key, what it got and what is allowed, in one line.
    """
    if value is None or value == {}:
        return None
    keys = {"image": ("pad", "flip"), "signal": ("shift",), "table": ()}
    allowed = keys.get(layout or "", ("pad", "flip", "shift"))
    hint = (f"a mapping of {', '.join(allowed)}" if allowed
            else f"no augment for layout {layout!r}: its features have no label-preserving "
            "transform")  # fmt: skip
    if not isinstance(value, Mapping) or any(k not in allowed for k in value):
        raise ConfigError(f"{path}: got {value!r}; allowed: {hint}")
    for key in ("pad", "shift"):
        if key in value and not is_int(value[key], 0):
            raise ConfigError(f"{path}.{key}: got {value[key]!r}; allowed: an int >= 0")
    if "flip" in value and not isinstance(value["flip"], bool):
        raise ConfigError(f"{path}.flip: got {value['flip']!r}; allowed: true or false")
    try:
        return Augment(**value)
    except ConfigError as err:  # shift with pad or flip, on a layout not declared
        raise ConfigError(f"{path}: {err}") from None


def _augment_allowed(augment: Augment, layout: str, shape: tuple[int, ...]) -> str:
    """What the samples' layout allows when ``augment`` does not fit it ("" when it fits)."""
    if layout == "image" and augment.shift:
        return "pad and flip (images are cropped and mirrored); shift is for signals"
    if layout == "image" and augment.pad >= min(shape[1:]):
        return (f"pad smaller than the image's shorter side {min(shape[1:])} (it is reflected "
                "before the crop), or none")
    if layout == "signal" and (augment.pad or augment.flip or augment.shift >= shape[-1]):
        return f"shift, smaller than the length {shape[-1]} (pad and flip are for images)"
    if layout == "table" and augment.enabled:
        return "no augment (a table's features have no label-preserving transform)"
    return ""


def _declared_path(given: Path, kind: str, path: str) -> str:
    """The absolute path, links resolved, of a declared dataset's file (its folder, for an
    image folder), refused unless it is one: a FIFO, a device or a socket would block or
    feed the reader for ever (a FIFO as ``dataset.npz`` kept ``search check`` waiting), and a
    symlink loop is said in words (it was a RuntimeError's traceback)."""
    allowed = DECLARED_KINDS.get(kind).about
    try:
        found = given.resolve(strict=True)
        mode = found.stat().st_mode
    except FileNotFoundError:
        missing = os.path.realpath(given)  # as far as it resolves
        raise ConfigError(f"{path}: {missing} does not exist; allowed: {allowed}") from None
    except (OSError, RuntimeError) as err:  # a loop: RuntimeError, or OSError ELOOP
        loop = isinstance(err, RuntimeError) or getattr(err, "errno", None) == errno.ELOOP
        why = "it is a symlink loop (a link that leads back to itself)" if loop else str(err)
        raise ConfigError(f"{path}: {given} cannot be opened: {why}; allowed: {allowed}") from None
    folder = kind == "image_folder"
    if not (stat.S_ISDIR(mode) if folder else stat.S_ISREG(mode)):
        what = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket",
                stat.S_IFCHR: "a device", stat.S_IFBLK: "a device",
                stat.S_IFDIR: "a folder", stat.S_IFREG: "a file"}.get(stat.S_IFMT(mode), "special")
        need = "a folder" if folder else "a regular file"
        raise ConfigError(f"{path}: {found} is {what}, not {need}; allowed: {allowed}")
    return str(found)


def _given_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """The declaration's options that :class:`Splits` takes."""
    return {k: record[k] for k in ("mean", "std", "num_classes") if record.get(k) is not None}


#: What np.load raises on a file that is not what it should be (empty, truncated, corrupt).
_UNREADABLE = (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error)


def _unreadable(err: BaseException, file: str, what: str) -> str:
    """Why np.load failed, in words; never numpy's advice to unpickle the file."""
    if isinstance(err, EOFError):
        return "it is empty" if Path(file).stat().st_size == 0 else "it ends early"
    if isinstance(err, ValueError) and ("Object arrays" in str(err) or "objects" in str(err)):
        return "it holds Python objects (pickled), which npas never loads"
    if isinstance(err, ValueError) and "pickle" in str(err):  # numpy's guess for any other file
        return f"it is not {what}"
    return f"{type(err).__name__}: {err}"


@_kind("npz", "an .npz file with x_train, y_train, x_test, y_test (optional x_val, y_val)")
def _read_npz(record: Mapping[str, Any], path: str) -> Splits:
    file, allowed = record["npz"], DECLARED_KINDS.get("npz").about
    why = None
    try:
        z = np.load(file)  # allow_pickle=False: an object array is refused
        if isinstance(z, np.lib.npyio.NpzFile):
            with z:
                arrays = {k: z[k] for k in z.files}
        else:
            why = "it is a .npy array, not an .npz archive"
    except _UNREADABLE as err:
        why = _unreadable(err, file, "an .npz archive")
    if why is not None:
        raise ConfigError(f"{path}.npz: {file} cannot be read: {why}; allowed: {allowed} of "
                          "numbers")  # fmt: skip
    missing = [k for k in ("x_train", "y_train") if k not in arrays]
    if missing:
        raise ConfigError(f"{path}.npz: {file} lacks {missing}; it holds {list(arrays)}")
    for split, instead in (("test", "a stratified 20 % of x_train"),
                           ("val", "one carved from x_train")):  # fmt: skip
        have = [k for k in (f"x_{split}", f"y_{split}") if k in arrays]
        if len(have) == 1:
            lack = f"{'y' if have[0][0] == 'x' else 'x'}_{split}"
            raise ConfigError(
                f"{path}.npz: {file} holds {have[0]} but no {lack}; allowed: both, or neither "
                f"(the {split} split is then {instead})"
            )

    def pair(split: str) -> Any:
        keys = (f"x_{split}", f"y_{split}")
        return (arrays[keys[0]], arrays[keys[1]]) if all(k in arrays for k in keys) else None

    return Splits(train=pair("train"), test=pair("test"), val=pair("val"), **_given_of(record))


@_kind("npy", "[X.npy, Y.npy]: every sample and its label (memory-mapped; test split carved)")
def _read_npy(record: Mapping[str, Any], path: str) -> Splits:
    arrays = []
    for file in record["npy"]:
        try:
            arrays.append(np.load(file, mmap_mode="r"))  # allow_pickle=False
        except _UNREADABLE as err:
            raise ConfigError(f"{path}.npy: {file} cannot be read: "
                              f"{_unreadable(err, file, 'a .npy array')}; allowed: "
                              f"{DECLARED_KINDS.get('npy').about}") from None  # fmt: skip
    x, y = arrays
    return Splits(train=(x, np.asarray(y)), **_given_of(record))


class ImageFolder(Dataset):
    """Images ``<split>/<class>/*.png|jpg`` read with Pillow, as uint8 C×H×W tensors, converted
    to ``channels`` (1: grey, 3: RGB) and resized to ``size`` when they differ; ``skipped``: the
    unreadable images left out (``skip_unreadable``)."""

    def __init__(
        self,
        files: list[Path],
        targets: list[int],
        size: tuple[int, int],
        channels: int,
        skipped: Sequence[Path] = (),
    ) -> None:
        self.files, self.targets = files, np.asarray(targets, dtype=np.int64)
        self.size, self.channels, self.skipped = size, channels, list(skipped)

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        from PIL import Image

        try:
            with Image.open(self.files[i]) as opened:
                image: Image.Image = opened.convert("L" if self.channels == 1 else "RGB")
                if image.size != (self.size[1], self.size[0]):
                    image = image.resize((self.size[1], self.size[0]), Image.Resampling.BILINEAR)
                array = np.asarray(image, dtype=np.uint8)
        except Exception as err:  # Pillow raises OSError, SyntaxError, ValueError, ...
            raise ConfigError(f"{self.files[i]} cannot be read as an image: "
                              f"{type(err).__name__}: {err}") from None  # fmt: skip
        array = array[None] if array.ndim == 2 else array.transpose(2, 0, 1)
        return torch.from_numpy(array.copy()), int(self.targets[i])


#: Training images whose modes set an image folder's channels (spread over its classes).
CHANNEL_SAMPLES = 64


def _channels_of(files: Sequence[Path]) -> int:
    """3 when at least half of :data:`CHANNEL_SAMPLES` training images spread over the folder
    are in colour (or have a palette), else 1: the first image alone made a folder of photos
    grey when a grey scan came first, and one stray RGBA file must not make grey images RGB."""
    from PIL import Image

    colour = grey = 0
    for i in evenly(len(files), CHANNEL_SAMPLES):
        try:
            with Image.open(files[i]) as image:  # reads the header only
                mode = image.mode
        except Exception:  # Pillow raises anything; an unreadable image is said elsewhere
            continue
        if mode in ("1", "L", "LA", "I", "F") or mode.startswith("I;16"):
            grey += 1
        else:
            colour += 1
    return 3 if colour >= grey and colour else 1


def _decode_error(file: Path) -> str | None:
    """Why ``file`` cannot be decoded as an image; None when it can."""
    from PIL import Image

    try:
        with Image.open(file) as image:
            image.load()
    except Exception as err:  # Pillow raises OSError, SyntaxError, ValueError, ...
        return f"{type(err).__name__}: {err}"
    return None


def check_folds(folds: int, pool: int, pooled: str = "training and validation pooled") -> None:
    """Folds pool the training and validation splits, one sample a fold at least: more folds
    than ``pool`` samples fail every trial's first fit.

    Raises:
        ConfigError: naming the folds, the pool and what it pooled.
    """
    if folds > pool:
        raise ConfigError(f"folds: {folds} for {pool} training samples ({pooled}); allowed: "
                          f"2..{pool}")  # fmt: skip


@_kind("image_folder", "a folder with train/<class>/*.png|jpg (optional val/, test/)")
def _read_images(record: Mapping[str, Any], path: str) -> Splits:
    from PIL import Image

    root = Path(record["image_folder"])
    train_dir = root / "train"
    found = train_dir.iterdir() if train_dir.is_dir() else []
    classes = sorted(p.name for p in found if p.is_dir())
    if len(classes) < 2:
        raise ConfigError(
            f"{path}.image_folder: {train_dir} holds {len(classes)} class folder(s); allowed: "
            f"{DECLARED_KINDS.get('image_folder').about}, at least 2 classes"
        )

    skip = record.get("skip_unreadable", False)
    skipped: dict[str, list[Path]] = {}

    def listing(folder: Path) -> tuple[list[Path], list[int]]:
        files, targets = [], []
        for label, name in enumerate(classes):
            found = sorted(
                p for p in (folder / name).glob("*") if p.suffix.lower() in IMAGE_SUFFIXES
            )
            if skip:  # decoded here, in every process that reads the dataset
                bad = {p for p in found if _decode_error(p) is not None}
                skipped.setdefault(folder.name, []).extend(sorted(bad))
                found = [p for p in found if p not in bad]
            files += found
            targets += [label] * len(found)
        if not files:
            raise ConfigError(f"{path}.image_folder: no readable .png or .jpg images under "
                              f"{folder}")  # fmt: skip
        return files, targets

    files, targets = listing(train_dir)
    # The first image that decodes gives the size (``check`` counts any before it); most of
    # the images give the channels (_channels_of).
    first_file = next((f for f in files if _decode_error(f) is None), None)
    if first_file is None:
        raise ConfigError(
            f"{path}.image_folder: none of the {len(files)} images under {train_dir} can be "
            f"read (the first: {files[0]}: {_decode_error(files[0])})"
        )
    with Image.open(first_file) as first:
        size = tuple(record.get("size") or (first.height, first.width))
    channels = record.get("channels") or _channels_of(files)
    if channels not in (1, 3) or len(size) != 2:
        raise ConfigError(
            f"{path}: channels {channels!r}, size {list(size)!r}; allowed: channels 1 or 3, "
            "size [height, width]"
        )

    def part(split: str) -> ImageFolder | None:
        folder = root / split
        if split != "train" and not folder.is_dir():
            return None
        found = (files, targets) if split == "train" else listing(folder)
        return ImageFolder(*found, size=size, channels=channels,
                           skipped=skipped.get(split, []))  # fmt: skip

    given = {"num_classes": len(classes), "classes": classes, **_given_of(record)}
    return Splits(train=part("train"), test=part("test"), val=part("val"), **given)
