"""What a derivation knows of the data: layout, sample shape, classes, training samples and the
augmentation the dataset has, read without loading what is not needed (a built-in's registry
entry; a user's dataset registered once and its first sample and labels read).

Bad data the reading meets (one class, a layout the arrays cannot have, an unreadable file) is
refused here with the dataset's own message, before a study exists; values (NaN) are read by
``search.config.check_user_code``, which ``search check`` and ``search launch`` run next.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DataFacts", "read_facts"]

#: Training samples of the built-in datasets before validation is carved (digits: 1,797 less
#: its fixed 20 % test split); their registry entries hold shapes and classes, not sizes.
BUILTIN_TRAIN_SAMPLES = {"cifar10": 50_000, "digits": 1_437, "fashion-mnist": 60_000,
                         "mnist": 60_000}  # fmt: skip
#: An image folder without a ``size`` is read with its first image's shorter side brought down
#: to this many pixels (the built-in image families' presets were measured at 28 and 32 px).
FOLDER_SIDE = 32
#: A declared signal dataset's derived shift is its length over this (at least 1).
SHIFT_FRACTION = 10


@dataclass(frozen=True)
class DataFacts:
    """The data as a derivation reads them.

    Attributes:
        name: The dataset's registered name.
        layout: ``image``, ``signal`` or ``table``.
        in_shape: One sample's shape (C×H×W, C×L or F).
        classes: Number of classes.
        train: Samples the models train on (the training split less validation, or
            ``train_size``).
        total: The training split before validation is carved from it.
        held: Samples the validation split holds (as configured, or the dataset's default).
        augment: The dataset's default augmentation as ``{pad, flip}`` or ``{shift}`` (None:
            none).
        augment_why: Where that augmentation comes from.
        declaration: The dataset entry to write in the derived config (a name, or the user's
            declaration with a derived ``augment`` and an image folder's ``size`` added).
        size: An image folder's derived ``size`` (None: given, or not an image folder).
        size_why: Where that size comes from.
    """

    name: str
    layout: str
    in_shape: tuple[int, ...]
    classes: int
    train: int
    total: int
    held: int
    augment: dict[str, Any] | None
    augment_why: str
    declaration: Any
    size: list[int] | None = None
    size_why: str = ""


def read_facts(data: Mapping[str, Any], *, base: str | None = None) -> DataFacts:
    """The facts of a config's ``dataset`` (its ``imports`` already imported).

    Raises:
        ConfigError: the dataset's own refusal (unknown name, unreadable file, one class, a
            layout its arrays cannot have).
    """
    from objectives import declare
    from objectives.datasets import DATASETS, DatasetInfo

    spec = data.get("dataset")
    added: dict[str, Any] | None = None
    why = ""
    folder_size, size_why = None, ""
    if isinstance(spec, Mapping):
        spec = dict(spec)
        if "image_folder" in spec and "size" not in spec:
            folder_size, size_why = _folder_size(spec, base)
            if folder_size is not None:
                spec["size"] = folder_size
        if "augment" not in spec:
            added, why = _image_pad(spec, base)
            if added is None:
                added, why = _signal_shift(spec, base)
            if added is not None:
                spec["augment"] = added
        name = declare(spec, path="dataset", base=base)["name"]
    else:
        name = spec
    entry = DATASETS.get(name)
    val_size = data.get("val_size")
    if isinstance(entry, DatasetInfo):
        total = BUILTIN_TRAIN_SAMPLES[entry.name]
        shape, layout, classes = tuple(entry.in_shape), "image", int(entry.num_classes)
        default = entry.val_size if val_size is None else val_size
        augment = _plain(entry.augment)
        why = why or f"the built-in dataset {name}'s own augmentation"
    else:
        total = int(entry.train_samples)
        shape, layout = tuple(entry.in_shape), entry.sample_layout
        classes = int(entry.num_classes)
        default = entry.val_size if val_size is None else val_size
        augment = _plain(entry.augment)
        why = why or (f"dataset {name!r} declares it" if augment else "")
    held = _held(default, total)
    train = max(1, total - held)
    size = data.get("train_size")
    if isinstance(size, int) and not isinstance(size, bool) and size > 0:
        train = min(train, size)  # a bad train_size is refused when the config is validated
    return DataFacts(
        name=name, layout=layout, in_shape=shape, classes=classes, train=train, total=total,
        held=held, augment=augment, augment_why=why, declaration=spec,
        size=folder_size, size_why=size_why,
    )  # fmt: skip


def _held(val_size: Any, total: int) -> int:
    """Samples a validation split of ``val_size`` (a fraction or a count) holds; 0 for a value
    the config's validation will refuse."""
    if isinstance(val_size, bool) or not isinstance(val_size, int | float) or val_size < 0:
        return 0
    return round(val_size * total) if val_size < 1 else min(total - 1, int(val_size))


def _plain(augment: Any) -> dict[str, Any] | None:
    """An :class:`objectives.datasets.Augment` as ``{pad, flip}`` (images) or ``{shift}``
    (signals); None when it does nothing."""
    if augment is None or not augment.enabled:
        return None
    return augment.to_dict()


def _image_pad(spec: Mapping[str, Any], base: str | None) -> tuple[dict[str, Any] | None, str]:
    """The pad-crop a declared image dataset without ``augment`` is given: 1/14 of the shorter
    side (MNIST's 2 pixels on 28), at least 1 and less than the side; None for images 1 pixel
    wide (nothing to crop), signals, tables or what cannot be peeked (the declaration then
    says why, when it is read)."""
    side = _image_side(spec, base)
    if side is None or side < 2:
        return None, ""
    pad = min(side - 1, max(1, round(side / 14)))
    return {"pad": pad}, (f"pad-crop of 1/14 of the image's shorter side ({side} px), at "
                          "least 1")  # fmt: skip


def _folder_size(spec: Mapping[str, Any], base: str | None) -> tuple[list[int] | None, str]:
    """The size an image folder without one is read at: its first image's, its shorter side
    brought down to :data:`FOLDER_SIDE` pixels where it is longer (the aspect kept); None
    where the first cannot be peeked (its reading then says why)."""
    from PIL import Image

    from objectives import IMAGE_SUFFIXES

    train = _path(spec["image_folder"], base) / "train"
    try:
        folders = sorted(p for p in train.iterdir() if p.is_dir())
        first = next(f for d in folders for f in sorted(d.iterdir())
                     if f.suffix.lower() in IMAGE_SUFFIXES)  # fmt: skip
        with Image.open(first) as image:
            width, height = image.size
    except (OSError, StopIteration, ValueError):
        return None, ""
    if min(height, width) <= FOLDER_SIDE:
        return [height, width], (f"the first image's, as it is read (its shorter side at most "
                                 f"{FOLDER_SIDE} px): every other image is resized to it")
    scale = FOLDER_SIDE / min(height, width)
    size = [max(FOLDER_SIDE, round(height * scale)), max(FOLDER_SIDE, round(width * scale))]
    ratio = height * width / (size[0] * size[1])
    return size, (f"the first image's {height}×{width} with its shorter side brought to "
                  f"{FOLDER_SIDE} px, the aspect kept: the built-in image families are sized "
                  "for images of 28-32 px (MNIST, CIFAR-10), and at full size a net costs "
                  f"{ratio:,.{0 if ratio >= 10 else 1}f} times the multiply-adds; a size of "
                  "yours wins")


def _signal_shift(spec: Mapping[str, Any], base: str | None
                  ) -> tuple[dict[str, Any] | None, str]:  # fmt: skip
    """The shift a declared signal dataset without ``augment`` is given: 1/10 of the length,
    at least 1 (and less than the length); None for other layouts, signals of length 1 or
    arrays that cannot be peeked."""
    if spec.get("layout") != "signal":
        return None, ""
    shape = _array_shape(spec, base)
    if shape is None or len(shape) not in (2, 3) or shape[-1] < 2:
        return None, ""
    length = int(shape[-1])
    shift = min(length - 1, max(1, round(length / SHIFT_FRACTION)))
    return {"shift": shift}, (f"a shift in time of 1/{SHIFT_FRACTION} of the signal's length "
                              f"({length} samples), at least 1")  # fmt: skip


def _image_side(spec: Mapping[str, Any], base: str | None) -> int | None:
    """The shorter side of a declared dataset's images, read from the files' headers (no data
    loaded); None when its samples are not images or cannot be peeked."""
    layout = spec.get("layout")
    if layout not in (None, "image"):
        return None
    if "image_folder" in spec:
        size = spec.get("size")
        return min(int(s) for s in size) if isinstance(size, list) and size else None
    shape = _array_shape(spec, base)
    if shape is None or len(shape) not in (3, 4):
        return None
    return int(min(shape[-2:]))


def _array_shape(spec: Mapping[str, Any], base: str | None) -> tuple[int, ...] | None:
    """``x``'s shape from its ``.npy`` header, in an ``.npz`` or alone; None if unreadable."""
    try:
        if "npz" in spec:
            with zipfile.ZipFile(_path(spec["npz"], base)) as z, z.open("x_train.npy") as f:
                return _header_shape(f)
        if "npy" in spec:
            with open(_path(spec["npy"][0], base), "rb") as f:
                return _header_shape(f)
    except (OSError, KeyError, ValueError, TypeError, IndexError, zipfile.BadZipFile):
        return None
    return None


def _header_shape(f: Any) -> tuple[int, ...]:
    version = np.lib.format.read_magic(f)
    reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
              else np.lib.format.read_array_header_2_0)  # fmt: skip
    shape, _, _ = reader(f)
    return tuple(int(n) for n in shape)


def _path(value: Any, base: str | None) -> Path:
    return Path(base or Path.cwd()) / Path(str(value)).expanduser()
