"""Knowledge distillation: the loss, and the teacher's soft targets cached on disk.

A teacher (:class:`objectives.Recipe`'s ``teacher``) is trained once per training split: its
logits on that split, in the split's order, are saved under ``<cache>/teachers/`` with the
provenance that made them, and a file is named by a hash of that provenance, so another
teacher, another split, another torch or another kind of device never reads a file it did not
make. :func:`objectives.train.fit` trains the teacher when the file is missing; this module
only names, reads and writes the file, and locks it (:func:`teacher_lock`): trials running at
once that distil from the same teacher train it once, the others wait and read its file.

The file (``torch.save``, loadable with ``weights_only=True``)::

    {"provenance": {format, teacher: {family, hyper, train, seed}, dataset,
                    train_split: {size, labels_sha256, mean, std, val_size, train_size,
                                  seed}, device, torch},
     "targets": float32 (N, classes) logits on the CPU,
     "targets_sha256": the SHA-256 of the targets' bytes,
     "teacher": {trained_on: "train", history, train_time_s}}

A file is read only when it is whole and right (:func:`read_targets`): its provenance, the
checksum of its targets (``torch.load`` checks no CRC: flipped bytes in a tensor load
silently), their shape (one row per training sample, one column per class) and their values
(all finite). Anything else is a miss: the teacher is trained again and the file replaced,
never a distilled trial failing on a poisoned target.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from filelock import FileLock

from objectives._recipe import Teacher
from objectives._root import cache_home
from objectives.datasets import Data, Split
from spaces import ConfigError

__all__ = [
    "TARGETS_FORMAT",
    "check_teachers_folder",
    "distill_loss",
    "provenance",
    "read_targets",
    "targets_digest",
    "targets_path",
    "teacher_lock",
    "write_targets",
]

#: ``provenance.format`` of a teacher's cached targets.
TARGETS_FORMAT = "npas-teacher-targets/2"  # /2: with the targets' checksum


def distill_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    soft: torch.Tensor,
    *,
    temperature: float,
    weight: float,
    label_smoothing: float,
) -> torch.Tensor:
    """``(1 - weight) * CE(logits, labels) + weight * T**2 * KL(softmax(soft / T) ||
    softmax(logits / T))``, batch-averaged (Hinton et al., 2015): the T² keeps the soft term's
    gradients on the scale of the hard term's whatever the temperature."""
    hard = F.cross_entropy(logits, labels, label_smoothing=label_smoothing)
    t = temperature
    kl = F.kl_div(F.log_softmax(logits / t, dim=1), F.log_softmax(soft / t, dim=1),
                  reduction="batchmean", log_target=True)  # fmt: skip
    return (1 - weight) * hard + weight * t * t * kl


def provenance(teacher: Teacher, data: Data, device: torch.device) -> dict[str, Any]:
    """What the targets of ``teacher`` on ``data``'s training split depend on: the teacher's
    spec, the split (its size, a hash of its labels in order, the normalisation, and how it
    was carved), the kind of device it trains on and torch's version."""
    split = data.train
    assert isinstance(split, Split)  # fit refuses to distil on a streamed split
    labels = split.y.detach().to("cpu").numpy().tobytes()
    carved = {k: data.provenance.get(k) for k in ("val_size", "train_size", "seed")}
    return {
        "format": TARGETS_FORMAT,
        "teacher": teacher.to_dict(),
        "dataset": data.name,
        "train_split": {"size": len(split), "labels_sha256": hashlib.sha256(labels).hexdigest(),
                        "mean": list(data.mean), "std": list(data.std), **carved},
        "device": device.type,
        "torch": str(torch.__version__),  # a str subclass torch.load(weights_only) refuses
    }  # fmt: skip


def targets_path(made_by: Mapping[str, Any]) -> Path:
    """``<npas cache>/teachers/<dataset>-<hash of the provenance>.pt``: beside the decoded
    datasets (``$XDG_CACHE_HOME/npas/data``), never in a data folder, which may be shared."""
    text = json.dumps(made_by, sort_keys=True, default=str)
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    return cache_home() / "teachers" / f"{made_by['dataset']}-{key}.pt"


def check_teachers_folder() -> Path:
    """The folder of the teachers' targets, once shown to take a file (written, removed): a
    search that distils is refused before it starts where it cannot cache its teacher, not
    trial after trial once it runs.

    Raises:
        ConfigError: the folder cannot be created or written (read-only, full, no permission).
    """
    folder = cache_home() / "teachers"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder) as probe:
            probe.write(b"\0" * 4096)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as err:
        raise ConfigError(
            f"train.teacher: the teachers' cache {str(folder)!r} cannot be written "
            f"({err.strerror or type(err).__name__}), so no trial could cache its teacher's "
            "targets; make it writable, or set XDG_CACHE_HOME to a writable folder"
        ) from None
    return folder


def teacher_lock(path: Path) -> FileLock:
    """An inter-process lock on the targets at ``path`` (``<path>.lock``, beside it), held
    while one process trains the teacher: without it, every trial that starts before the
    file exists trains the same teacher (minutes each, on every worker at once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(path.with_name(path.name + ".lock"))


def _plain(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists), to compare provenances."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def targets_digest(targets: torch.Tensor) -> str:
    """The SHA-256 of ``targets``' bytes (float32, contiguous, on the CPU)."""
    data = targets.detach().to("cpu", torch.float32).contiguous().numpy().tobytes()
    return hashlib.sha256(data).hexdigest()


def read_targets(
    path: Path, made_by: Mapping[str, Any], shape: tuple[int, int]
) -> torch.Tensor | None:
    """The cached targets at ``path``, or None (a miss: computed again) when there are none,
    they were made by anything else than ``made_by`` (a hash collision, an edited file), or
    they are damaged: a checksum that differs, a shape other than ``shape`` (training
    samples, classes), a value that is not finite."""
    if not path.is_file():
        return None
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, EOFError, ValueError, pickle.UnpicklingError):
        return None
    if not isinstance(blob, dict) or _plain(blob.get("provenance")) != _plain(made_by):
        return None
    targets = blob.get("targets")
    if (
        not isinstance(targets, torch.Tensor)
        or targets.dtype != torch.float32
        or tuple(targets.shape) != tuple(shape)
        or not bool(torch.isfinite(targets).all())
        or blob.get("targets_sha256") != targets_digest(targets)
    ):
        return None
    return targets


def write_targets(
    path: Path, made_by: Mapping[str, Any], targets: torch.Tensor, teacher: Mapping[str, Any]
) -> None:
    """Writes the file atomically (a concurrent reader sees the old file or the new one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(handle, "wb") as out:
            cpu = targets.detach().to("cpu")
            torch.save({"provenance": dict(made_by), "targets": cpu,
                        "targets_sha256": targets_digest(cpu), "teacher": dict(teacher)},
                       out)  # fmt: skip
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
