"""Datasets as tensors on the trial's device, with deterministic splits and on-device batching.

Small datasets are held whole on the device and batched by indexing with ``torch.randperm``
(a DataLoader per step costs more than a tiny model's step); augmentation runs per batch on the
device, vectorised. Validation is carved from the training set (stratified, seeded) and is what
the search optimises; the test set is only reported. Data too big for that stream through a
DataLoader instead (``load(stream=...)``, :class:`StreamedSplit`), and the user's own datasets
(``objectives._custom``) share the registry and this loader.

Data root: the ``root`` argument, else ``NPAS_DATA``, else ``$XDG_CACHE_HOME/npas/data``
(``~/.cache/npas/data``). Dataset ``name`` lives in ``<root>/<name>/``; the files may also sit
directly in ``<root>``. Decoded arrays are cached under ``$XDG_CACHE_HOME/npas/data/decoded/``,
so a second load skips gzip and pickle.

Example:
    >>> data = load("digits")
    >>> data.in_shape, data.num_classes, len(data.train) + len(data.val) + len(data.test)
    ((1, 8, 8), 10, 1797)
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from objectives._digits import digits_source, read_digits
from objectives._download import (
    DatasetUnavailableError,
    Resource,
    checksum_problem,
    fetch,
    mirrors_from_env,
)
from objectives._idx import CIFAR_DIR, CIFAR_TEST, CIFAR_TRAIN, read_cifar, read_idx
from objectives._loading import LOADER_WORKERS, STREAM_ABOVE_MB
from objectives._root import cache_home, default_root
from objectives._split import stratified_folds, stratified_split
from objectives._streaming import ArrayDataset, StreamedSplit
from spaces import ConfigError, Registry, check_int, is_int

__all__ = [
    "DATASETS",
    "MIRRORS",
    "Augment",
    "Data",
    "DatasetInfo",
    "DatasetUnavailableError",
    "Split",
    "StreamedSplit",
    "default_root",
    "iterate",
    "load",
]

#: Default download mirrors per dataset, tried in order (override: ``mirrors=``/``NPAS_MIRROR``).
MIRRORS: dict[str, tuple[str, ...]] = {
    "mnist": (
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    ),
    "fashion-mnist": (
        "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
        "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
    ),
    "cifar10": ("https://www.cs.toronto.edu/~kriz/",),
}
_CACHE_VERSION = "1"
_DIGITS_TEST_FRACTION = 0.2  # digits has no official test split: a fixed stratified 20%


@dataclass(frozen=True)
class Augment:
    """Per-batch augmentation on the device, label-preserving: for images (N, C, H, W) a random
    pad-crop, then a random horizontal flip; for signals (N, C, L) a random shift in time.

    Attributes:
        pad: Pixels of reflect padding before a random crop back to the input size (0: off).
        flip: Mirror each image left-right with probability 1/2 (wrong for digits).
        shift: Samples of edge padding at both ends of a signal before a random crop back to
            its length, so each signal moves by up to ``shift`` steps either way (0: off).
    """

    pad: int = 0
    flip: bool = False
    shift: int = 0

    def __post_init__(self) -> None:
        check_int("Augment.pad", self.pad, low=0)
        check_int("Augment.shift", self.shift, low=0)
        if not isinstance(self.flip, bool):
            raise ConfigError(f"Augment.flip must be true or false, got {self.flip!r}")
        if self.shift and (self.pad or self.flip):
            raise ConfigError(
                f"Augment: shift {self.shift} with pad {self.pad} and flip {self.flip}; "
                "allowed: shift (signals) or pad and flip (images), not both"
            )

    @property
    def enabled(self) -> bool:
        return self.pad > 0 or self.flip or self.shift > 0

    def to_dict(self) -> dict[str, Any]:
        """``{shift}`` for a signal's, else ``{pad, flip}`` (what records held before shifts
        existed): plain data that ``Augment(**d)`` reads back equal."""
        if self.shift:
            return {"shift": self.shift}
        return {"pad": self.pad, "flip": self.flip}

    def __call__(
        self, x: torch.Tensor, *, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """Augments a (N, C, H, W) or, with ``shift``, a (N, C, L) batch; ``generator`` must
        live on ``x.device``."""
        rank = 3 if self.shift else 4
        if self.enabled and x.ndim != rank:
            raise ConfigError(
                f"Augment {self}: a batch of shape {tuple(x.shape)}; allowed: "
                + ("N×C×L signals (shift)" if self.shift else "N×C×H×W images (pad, flip)")
            )
        if self.shift > 0:
            x = shift_crop(x, self.shift, generator=generator)
        if self.pad > 0:
            x = pad_crop(x, self.pad, generator=generator)
        if self.flip:
            x = random_flip(x, generator=generator)
        return x


def pad_crop(
    x: torch.Tensor, pad: int, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Reflect-pads by ``pad`` then crops each image at its own random offset, in one gather.

    The crops are picked from a strided view of every window of the padded batch, so the
    gather copies whole rows instead of computing an index per pixel (3x faster on CPU).
    """
    n, _, h, w = x.shape
    if pad >= min(h, w):
        raise ConfigError(f"pad must be smaller than the image ({h}x{w}), got {pad}")
    padded = F.pad(x, (pad, pad, pad, pad), mode="reflect")
    shift = torch.randint(0, 2 * pad + 1, (2, n), generator=generator, device=x.device)
    windows = padded.unfold(2, h, 1).unfold(3, w, 1)  # (N, C, 2p+1, 2p+1, H, W), a view
    return windows[torch.arange(n, device=x.device), :, shift[0], shift[1]]


def shift_crop(
    x: torch.Tensor, shift: int, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Pads each (N, C, L) signal's ends by repeating its edge values ``shift`` times, then
    crops each at its own random offset back to length L, in one gather of a strided view.

    Edge values rather than a mirror: a sensor that held still a little longer is a signal
    that could have been recorded; a reflected stretch of a trajectory is not.
    """
    n, _, length = x.shape
    if shift >= length:
        raise ConfigError(f"shift must be smaller than the signal's length {length}, got {shift}")
    padded = F.pad(x, (shift, shift), mode="replicate")
    offset = torch.randint(0, 2 * shift + 1, (n,), generator=generator, device=x.device)
    windows = padded.unfold(2, length, 1)  # (N, C, 2s+1, L), a view
    return windows[torch.arange(n, device=x.device), :, offset]


def random_flip(x: torch.Tensor, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """Mirrors a random half of the batch left-right."""
    mask = torch.rand(x.shape[0], generator=generator, device=x.device) < 0.5
    return torch.where(mask[:, None, None, None], x.flip(3), x)


def iterate(
    x: torch.Tensor,
    y: torch.Tensor,
    batch_size: int,
    *,
    shuffle: bool,
    generator: torch.Generator | None = None,
    augment: Augment | None = None,
    drop_last: bool = False,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yields ``(x, y)`` batches by indexing tensors already on their device.

    Args:
        x: Inputs, first dimension the samples.
        y: Labels, same length.
        batch_size: Samples per batch (>= 1).
        shuffle: Visit samples in a ``torch.randperm`` order drawn on ``x.device``.
        generator: RNG on ``x.device`` for the permutation and the augmentation.
        augment: Applied to each batch after indexing.
        drop_last: Skip a final batch smaller than ``batch_size``.
    """
    check_int("batch_size", batch_size)
    if len(x) != len(y):
        raise ConfigError(f"x and y differ in length: {len(x)} vs {len(y)}")
    n = len(x)
    order = torch.randperm(n, generator=generator, device=x.device) if shuffle else None
    stop = n - n % batch_size if drop_last else n
    for start in range(0, stop, batch_size):
        if order is None:
            xb, yb = x[start : start + batch_size], y[start : start + batch_size]
        else:
            idx = order[start : start + batch_size]
            xb, yb = x[idx], y[idx]
        if augment is not None and augment.enabled:
            xb = augment(xb, generator=generator)
        yield xb, yb


@dataclass(frozen=True)
class Split:
    """Inputs ``x`` (float32, normalised, N×C×H×W) and labels ``y`` (int64) of one split, held
    whole on the device (:class:`objectives._streaming.StreamedSplit` is the streamed kind)."""

    x: torch.Tensor
    y: torch.Tensor

    def __len__(self) -> int:
        return len(self.y)

    @property
    def device(self) -> torch.device:
        return self.x.device

    def to(self, device: torch.device | str) -> Split:
        return Split(self.x.to(device), self.y.to(device))

    def example(self, n: int = 1) -> torch.Tensor:
        """The first ``n`` samples (a view)."""
        return self.x[:n]

    def batches(
        self, batch_size: int, **options: Any
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """:func:`iterate` over this split, with its keyword options (a streamed split has
        the same method)."""
        return iterate(self.x, self.y, batch_size, **options)


@dataclass(frozen=True)
class Data:
    """A loaded dataset: three splits on one device, shapes, normalisation and provenance.

    Attributes:
        name: Registry name.
        train: Training split (validation already removed).
        val: Validation split, carved from the official training set; the search optimises it.
        test: Test split; report it, never optimise on it.
        in_shape: (C, H, W) of one sample.
        num_classes: Number of labels.
        mean: Per-channel mean of the raw training split (pixels scaled to [0, 1]).
        std: Per-channel standard deviation, likewise.
        augment: The dataset's default augmentation.
        provenance: Source files and checksums, folder, split sizes, seed, val_size, cache.
    """

    name: str
    train: Split | StreamedSplit
    val: Split | StreamedSplit
    test: Split | StreamedSplit
    in_shape: tuple[int, ...]
    num_classes: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    augment: Augment
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def device(self) -> torch.device:
        return self.train.device

    @property
    def streamed(self) -> bool:
        """Whether the splits are read batch by batch (:class:`StreamedSplit`)."""
        return isinstance(self.train, StreamedSplit)

    def to(self, device: torch.device | str) -> Data:
        """A copy with every split on ``device``."""
        return dataclasses.replace(
            self, train=self.train.to(device), val=self.val.to(device), test=self.test.to(device)
        )

    def fold(self, index: int, folds: int, *, seed: int) -> Data:
        """A copy for fold ``index`` of ``folds``-fold cross-validation: the training and
        validation splits pooled, the ``index``-th of their stratified folds
        (:func:`~objectives._split.stratified_folds`, drawn with ``seed``) the validation
        split and the others the training split. Small data ranks models better on every
        sample than on one held-out part; the normalisation stays the training split's.

        Raises:
            ConfigError: streamed splits, or more folds than samples.
        """
        pool = self.with_val_in_train().train
        assert isinstance(pool, Split)  # with_val_in_train refuses streamed splits
        labels = pool.y.cpu().numpy()
        if not 2 <= folds <= len(labels) or not 0 <= index < folds:
            raise ConfigError(f"folds: {folds} (fold {index}) for {len(labels)} training "
                              f"samples; allowed: 2..{len(labels)} folds")  # fmt: skip
        held = torch.as_tensor(stratified_folds(labels, folds, seed=seed)[index],
                               device=pool.y.device)  # fmt: skip
        kept = torch.ones(len(labels), dtype=torch.bool, device=pool.y.device)
        kept[held] = False
        splits = {**self.provenance.get("splits", {}), "train": int(kept.sum()), "val": len(held)}
        provenance = {**self.provenance, "splits": splits, "fold": [index, folds]}
        return dataclasses.replace(
            self, train=Split(pool.x[kept], pool.y[kept]), val=Split(pool.x[held], pool.y[held]),
            provenance=provenance,
        )  # fmt: skip

    def with_val_in_train(self) -> Data:
        """A copy whose training split is the training split followed by the validation
        split: a model chosen on validation, retrained on both (``search train --with-val``).
        The validation split stays, now data the model trains on, and so does the training
        split's normalisation; ``provenance["train_on"]`` is ``train+val``.

        Raises:
            ConfigError: streamed splits (only splits held in memory are joined).
        """
        if not isinstance(self.train, Split) or not isinstance(self.val, Split):
            raise ConfigError(
                "training on train+val needs the splits in memory, not streamed; load the "
                "dataset with stream=False"
            )
        train = Split(torch.cat([self.train.x, self.val.x]), torch.cat([self.train.y, self.val.y]))
        splits = {**self.provenance.get("splits", {}), "train": len(train)}
        provenance = {**self.provenance, "splits": splits, "train_on": "train+val"}
        return dataclasses.replace(self, train=train, provenance=provenance)


@dataclass
class _Arrays:
    """Raw arrays as published: uint8 images (N, C, H, W) scaled by ``scale``, int64 labels."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray | None
    y_test: np.ndarray | None
    scale: float = 255.0


#: Reads the paths a dataset's ``find`` returned into raw arrays.
Reader = Callable[[list[Path]], _Arrays]


@dataclass(frozen=True)
class DatasetInfo:
    """A registered dataset.

    Attributes:
        name: Registry name, also the sub-folder of the data root.
        in_shape: (C, H, W).
        num_classes: Number of labels.
        val_size: Default validation size (count, or fraction of the training set).
        augment: Default augmentation.
        resources: Files a download fetches (empty: bundled, nothing to fetch).
        find: ``folder → [(path, resource)]`` of a complete local copy, or None.
        read: Paths from ``find`` → raw arrays.
    """

    name: str
    in_shape: tuple[int, int, int]
    num_classes: int
    val_size: int | float
    augment: Augment
    resources: tuple[Resource, ...]
    find: Callable[[Path], list[tuple[Path, Resource]] | None]
    read: Reader


#: Built-in datasets (:class:`DatasetInfo`) and the user's (``objectives._custom``: registered
#: with :func:`objectives.register_dataset` or declared in a config).
DATASETS: Registry[Any] = Registry("dataset")


def _idx_resources(md5s: dict[str, tuple[str, str]]) -> tuple[Resource, ...]:
    return tuple(Resource(f"{n}.gz", md5, content) for n, (md5, content) in md5s.items())


def _find_idx(resources: tuple[Resource, ...]) -> Callable[[Path], Any]:
    """Finds the four IDX files, gzipped or not."""

    def find(folder: Path) -> list[tuple[Path, Resource]] | None:
        found = []
        for r in resources:
            path = folder / r.filename
            if not path.is_file():
                path = folder / r.filename.removesuffix(".gz")
            if not path.is_file():
                return None
            found.append((path, r))
        return found

    return find


def _read_idx(paths: list[Path]) -> _Arrays:
    x_train, y_train, x_test, y_test = (read_idx(p) for p in paths)
    return _Arrays(
        x_train[:, None], y_train.astype(np.int64), x_test[:, None], y_test.astype(np.int64)
    )


def _builtin(name: str, **info: Any) -> Callable[[Reader], Reader]:
    """Registers the decorated reader as the built-in dataset ``name``; ``info`` holds the
    other :class:`DatasetInfo` fields."""

    def decorator(read: Reader) -> Reader:
        DATASETS.register(name)(DatasetInfo(name=name, read=read, **info))
        return read

    return decorator


def _register_idx(name: str, md5s: dict[str, tuple[str, str]]) -> None:
    resources = _idx_resources(md5s)
    _builtin(name, in_shape=(1, 28, 28), num_classes=10, val_size=5000, augment=Augment(pad=2),
             resources=resources, find=_find_idx(resources))(_read_idx)  # fmt: skip


# (md5 of the published .gz, md5 of its decompressed content), in train/test, images/labels order.
_register_idx(
    "mnist",
    {
        "train-images-idx3-ubyte": (
            "f68b3c2dcbeaaa9fbdd348bbdeb94873",
            "6bbc9ace898e44ae57da46a324031adb",
        ),
        "train-labels-idx1-ubyte": (
            "d53e105ee54ea40749a09fcbcd1e9432",
            "a25bea736e30d166cdddb491f175f624",
        ),
        "t10k-images-idx3-ubyte": (
            "9fb629c4189551a2d022fa330f9573f3",
            "2646ac647ad5339dbf082846283269ea",
        ),
        "t10k-labels-idx1-ubyte": (
            "ec29112dd5afa0611ce80d1b7f02629c",
            "27ae3e4e09519cfbb04c329615203637",
        ),
    },
)
_register_idx(
    "fashion-mnist",
    {
        "train-images-idx3-ubyte": (
            "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
            "f4a8712d7a061bf5bd6d2ca38dc4d50a",
        ),
        "train-labels-idx1-ubyte": (
            "25c81989df183df01b3e8a0aad5dffbe",
            "9018921c3c673c538a1fc5bad174d6f9",
        ),
        "t10k-images-idx3-ubyte": (
            "bef4ecab320f06d8554ea6380940ec79",
            "8181f5470baa50b63fa0f6fddb340f0a",
        ),
        "t10k-labels-idx1-ubyte": (
            "bb300cfdad3c16e7a12a480ee83cd310",
            "15d484375f8d13e6eb1aabb0c3f46965",
        ),
    },
)

_CIFAR_ARCHIVE = Resource("cifar-10-python.tar.gz", "c58f30108f718f92721af3b95e74349a")
_CIFAR_BATCHES = {
    "data_batch_1": "c99cafc152244af753f735de768cd75f",
    "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
    "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
    "data_batch_4": "634d18415352ddfa80567beed471001a",
    "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
    "test_batch": "40351d587109b95175f43aff81a1287e",
}


def _find_cifar(folder: Path) -> list[tuple[Path, Resource]] | None:
    """The extracted ``cifar-10-batches-py/`` folder, else the archive itself."""
    extracted = folder / CIFAR_DIR
    batches = [extracted / n for n in (*CIFAR_TRAIN, CIFAR_TEST)]
    if all(p.is_file() for p in batches):
        return [(p, Resource(p.name, _CIFAR_BATCHES[p.name])) for p in batches]
    archive = folder / _CIFAR_ARCHIVE.filename
    return [(archive, _CIFAR_ARCHIVE)] if archive.is_file() else None


@_builtin(
    "cifar10",
    in_shape=(3, 32, 32),
    num_classes=10,
    val_size=5000,
    augment=Augment(pad=4, flip=True),
    resources=(_CIFAR_ARCHIVE,),
    find=_find_cifar,
)
def _read_cifar(paths: list[Path]) -> _Arrays:
    source = paths[0].parent if len(paths) > 1 else paths[0]
    batches = read_cifar(source, (*CIFAR_TRAIN, CIFAR_TEST))
    x_train = np.concatenate([b[0] for b in batches[:-1]])
    y_train = np.concatenate([b[1] for b in batches[:-1]])
    return _Arrays(x_train, y_train, *batches[-1])


@_builtin("digits", in_shape=(1, 8, 8), num_classes=10, val_size=0.2, augment=Augment(),
          resources=(), find=lambda folder: [])  # fmt: skip
def _read_digits(_: list[Path]) -> _Arrays:
    images, labels = read_digits()  # values 0..16
    return _Arrays(images[:, None], labels, None, None, scale=16.0)


def load(
    name: str,
    *,
    root: str | os.PathLike[str] | None = None,
    device: torch.device | str = "cpu",
    val_size: int | float | None = None,
    train_size: int | None = None,
    seed: int = 0,
    download: bool = True,
    mirrors: Sequence[str] | None = None,
    progress: bool | None = None,
    verify: bool = True,
    stream: bool | None = None,
    stream_above_mb: float = STREAM_ABOVE_MB,
    workers: int = LOADER_WORKERS,
) -> Data:
    """Loads dataset ``name`` as normalised tensors on ``device``, split train/val/test.

    Args:
        name: A name in :data:`DATASETS` (digits, mnist, fashion-mnist, cifar10).
        root: Data root; default :func:`default_root`. Files may sit in ``<root>/<name>/``
            or directly in ``root``.
        device: Where the tensors live.
        val_size: Validation count, or fraction of the official training set; default per
            dataset (digits 0.2, the others 5000). Stratified and drawn with ``seed``.
        train_size: Keep only this many training samples (stratified, drawn with ``seed``;
            after the validation split, whose size it does not change): a search on a subset
            is cheaper, and its ranking usually carries over. None: all of them.
        seed: Seed of the validation split (the test split never depends on it).
        download: Fetch missing files from the mirrors.
        mirrors: Base URLs tried in order; default ``NPAS_MIRROR`` or :data:`MIRRORS`.
        progress: Show a download bar; default when stderr is a terminal.
        verify: Check md5 checksums of local files before decoding them.
        stream: Read the splits batch by batch through a DataLoader (:class:`StreamedSplit`)
            instead of holding them as tensors; None: stream when the training split as
            float32 would take more than ``stream_above_mb``.
        stream_above_mb: The size beyond which ``stream=None`` streams.
        workers: DataLoader worker processes of a streamed split.

    Raises:
        UnknownNameError: Unknown dataset name.
        DatasetUnavailableError: Files missing and not downloadable, or a checksum mismatch.
        ConfigError: Bad ``val_size``.
    """
    info = DATASETS.get(name)
    if not isinstance(info, DatasetInfo):  # a user's dataset: objectives._custom
        return info.load(
            device=device, val_size=val_size, train_size=train_size, seed=seed, stream=stream,
            stream_above_mb=stream_above_mb, workers=workers,
        )  # fmt: skip
    arrays, files = _materialise(
        info, root=root, download=download, mirrors=mirrors, progress=progress, verify=verify
    )
    if arrays.x_test is None or arrays.y_test is None:  # digits: a fixed stratified test split
        train_idx, test_idx = stratified_split(arrays.y_train, _DIGITS_TEST_FRACTION, seed=0)
        x_all, y_all = arrays.x_train, arrays.y_train
        arrays.x_train, arrays.y_train = x_all[train_idx], y_all[train_idx]
        arrays.x_test, arrays.y_test = x_all[test_idx], y_all[test_idx]
        files["test_split"] = f"stratified {_DIGITS_TEST_FRACTION:.0%} (random_state=0)"
    size = info.val_size if val_size is None else val_size
    _check_val_size(size, len(arrays.y_train), info.num_classes)
    train_idx, val_idx = stratified_split(arrays.y_train, size, seed=seed)
    if train_size is not None and train_size != len(train_idx):
        _check_train_size(train_size, len(train_idx), info.num_classes)
        _, kept = stratified_split(arrays.y_train[train_idx], train_size, seed=seed)
        train_idx = train_idx[kept]
    x_train = arrays.x_train[train_idx]
    mean, std = _channel_stats(x_train, arrays.scale)
    streamed = streams(stream, x_train.size * 4, stream_above_mb)

    def split(x: np.ndarray, y: np.ndarray) -> Split | StreamedSplit:
        return make_split(x, y, arrays.scale, mean, std, device, streamed, workers)

    train = split(x_train, arrays.y_train[train_idx])
    val = split(arrays.x_train[val_idx], arrays.y_train[val_idx])
    test = split(arrays.x_test, arrays.y_test)
    provenance = {
        "dataset": info.name,
        **files,
        "splits": {"train": len(train), "val": len(val), "test": len(test)},
        "val_size": size,
        "train_size": train_size,
        "seed": seed,
    }
    return Data(
        name=info.name,
        train=train,
        val=val,
        test=test,
        in_shape=info.in_shape,
        num_classes=info.num_classes,
        mean=tuple(mean.tolist()),
        std=tuple(std.tolist()),
        augment=info.augment,
        provenance=provenance,
    )


def streams(stream: bool | None, nbytes: int, above_mb: float) -> bool:
    """Whether a split streams: as asked, else when its float32 size passes ``above_mb``."""
    return bool(stream) if stream is not None else nbytes > above_mb * 2**20


def make_split(
    x: np.ndarray,
    y: np.ndarray,
    scale: float,
    mean: torch.Tensor,
    std: torch.Tensor,
    device: torch.device | str,
    streamed: bool,
    workers: int,
) -> Split | StreamedSplit:
    """Raw samples (N, C, ...: images, signals, or a table's N×F, a feature per channel) as a
    normalised split: ``x * multiply - subtract`` per channel in float32, with ``multiply =
    1 / (scale * std)`` and ``subtract = mean / std``; held on the device, or streamed (the
    same constants, applied per batch)."""
    multiply, subtract = 1.0 / (scale * std), mean / std
    labels = torch.from_numpy(np.asarray(y, dtype=np.int64))
    if streamed:
        return StreamedSplit(ArrayDataset(x, labels.numpy()), labels, multiply=multiply,
                             subtract=subtract, workers=workers, device=device)  # fmt: skip
    xt = torch.from_numpy(np.ascontiguousarray(x)).to(device).float()
    per_channel = (-1,) + (1,) * (x.ndim - 2)  # broadcast over the axes after the channel
    xt.mul_(multiply.to(device).view(per_channel)).sub_(subtract.to(device).view(per_channel))
    return Split(xt, labels.to(device))


def _channel_stats(x: np.ndarray, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact per-channel mean and std of uint8 images (N, C, H, W), via 256-bin histograms,
    counted a few thousand images at a time (``bincount`` widens its input to int64: on all of
    MNIST at once that was 345 MB, more than the dataset as float32)."""
    levels = np.arange(256, dtype=np.float64) / scale
    means, stds = [], []
    for c in range(x.shape[1]):
        counts = np.zeros(256, dtype=np.float64)
        for i in range(0, len(x), 4096):
            counts += np.bincount(x[i : i + 4096, c].ravel(), minlength=256)
        mean = counts @ levels / counts.sum()
        var = counts @ (levels - mean) ** 2 / max(counts.sum() - 1, 1)
        means.append(mean)
        stds.append(max(np.sqrt(var), 1e-8))
    return torch.tensor(means, dtype=torch.float32), torch.tensor(stds, dtype=torch.float32)


def _check_train_size(size: object, n: int, classes: int) -> None:
    if not is_int(size, classes, n - classes):
        raise ConfigError(
            f"train_size must be None or a count in [{classes}, {n - classes}] (or {n}, all of "
            f"them: {n} training samples after the validation split), got {size!r}"
        )


def _check_val_size(size: object, n: int, classes: int) -> None:
    ok = False
    if isinstance(size, float):
        ok = 0.0 < size < 1.0 and classes <= round(size * n) <= n - classes
    elif isinstance(size, int) and not isinstance(size, bool):
        ok = classes <= size <= n - classes
    if not ok and n < 2 * classes:
        raise ConfigError(
            f"{n} training samples of {classes} classes: a validation split stratified over "
            "them needs two samples of each class, one to train on and one to check it "
            "(labels that hold more than half as many distinct values as samples look like "
            "identifiers, not classes); allowed: at least twice as many training samples as "
            "classes"
        )
    if not ok:
        raise ConfigError(
            f"val_size must be a fraction in (0, 1) or a count in [{classes}, {n - classes}] "
            f"(stratified over {classes} classes, {n} training samples), got {size!r}"
        )


def _materialise(
    info: DatasetInfo,
    *,
    root: str | os.PathLike[str] | None,
    download: bool,
    mirrors: Sequence[str] | None,
    progress: bool | None,
    verify: bool,
) -> tuple[_Arrays, dict[str, Any]]:
    """Raw arrays and their provenance: from the decoded cache, local files, or a download."""
    if not info.resources:
        return info.read([]), {"source": digits_source()}
    base = Path(root).expanduser() if root is not None else default_root()
    target = base / info.name
    found = info.find(target) or info.find(base)
    if found is None:
        tried = tuple(mirrors) if mirrors is not None else mirrors_from_env(MIRRORS[info.name])
        if not download:
            names = ", ".join(r.filename for r in info.resources)
            raise DatasetUnavailableError(
                f"{info.name}: files not found ({names}). Put them in {target} or {base}, "
                "or pass download=True.",
                missing=[r.filename for r in info.resources],
                folder=target,
            )
        fetch(info.resources, target, tried, progress=progress)
        found = info.find(target)
        assert found is not None  # fetch raises unless every resource is in place
    paths = [p for p, _ in found]
    cache = _cache_path(info.name, paths, verified=verify)
    provenance: dict[str, Any] = {
        "folder": str(paths[0].parent),
        "files": [{"path": str(p), "md5": r.md5} for p, r in found],
        "verified": verify,
        "cache": str(cache),
    }
    if cache.is_file():
        with np.load(cache) as z:
            return _Arrays(z["x_train"], z["y_train"], z["x_test"], z["y_test"]), provenance
    if verify:
        problems = {p.name: msg for p, r in found if (msg := checksum_problem(p, r)) is not None}
        if problems:
            raise DatasetUnavailableError(
                f"{info.name}: checksum mismatch in {paths[0].parent} (wrong dataset or a "
                "corrupt copy; delete the files to download them again):\n  "
                + "\n  ".join(problems.values()),
                missing=list(problems),
                folder=paths[0].parent,
            )
    arrays = info.read(paths)
    _save_cache(cache, arrays)
    return arrays, provenance


def _cache_path(name: str, paths: list[Path], *, verified: bool) -> Path:
    """Decoded-array cache keyed by the source files' paths, sizes, mtimes and verification.

    It lives under the cache folder, never beside the files: data folders are often shared or
    read-only (and permission bits do not stop root).
    """
    key = hashlib.sha1(f"{_CACHE_VERSION}|{verified}".encode(), usedforsecurity=False)
    for p in paths:
        stat = p.stat()
        key.update(f"{p.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return cache_home() / "decoded" / f"{name}-{key.hexdigest()[:16]}.npz"


def _save_cache(cache: Path, arrays: _Arrays) -> None:
    """Writes the cache atomically; a failure only costs speed next time."""
    assert arrays.x_test is not None and arrays.y_test is not None  # file datasets have a test
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=cache.name, suffix=".tmp", dir=cache.parent)
    except OSError:
        return
    tmp = Path(name)
    try:
        with os.fdopen(handle, "wb") as out:
            np.savez(
                out,
                x_train=arrays.x_train,
                y_train=arrays.y_train,
                x_test=arrays.x_test,
                y_test=arrays.y_test,
            )
        os.replace(tmp, cache)
    except OSError:
        tmp.unlink(missing_ok=True)
