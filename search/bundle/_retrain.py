"""``search train``: a bundle's configuration trained again at a full schedule (or from the
checkpoint it holds), measured as the search measured it, compared with the search, and
exported as the bundle was (``trained/model.onnx`` and ``trained/model.pt2`` beside
``trained/model.pt``; the bundle's own ``model.*`` stay the search's model, and its
metrics.json's ``models`` says which file is which)."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

import pandas as pd
import torch
import yaml

from search._output import check_folder, write_atomic
from search.bundle._files import BUNDLE_FORMAT, metrics_json, read_bundle, versions
from search.bundle._portable import ONNX_FILE, PROGRAM_FILE, write_onnx
from search.bundle._write import MODELS, deployable
from search.config import TrialConfig
from search.config import _checks as checks
from search.errors import ConfigError, ExportError, OutputError
from search.trial import ARCHITECTURE, ARTIFACT_NAME, STATE_NAME, model_of, read_weights, run_trial

__all__ = ["FULL_SCHEDULE", "Trained", "check_device", "train_bundle"]

#: ``search train`` retrains for this many times the search's epochs unless told otherwise.
FULL_SCHEDULE = 4


@dataclass(frozen=True)
class Trained:
    """What :func:`train_bundle` measured: the comparison table and where it is saved;
    ``onnx_error`` says why ``trained/model.onnx`` and ``model.pt2`` are missing (None when
    they were written)."""

    table: pd.DataFrame
    metrics: dict[str, Any]
    path: Path
    onnx_error: str | None = None


def _retrain_config(
    cfg: TrialConfig,
    mapping: Mapping[str, int] | None,
    *,
    epochs: int | None,
    out: Path,
    device: str | None,
    seed: int | None = None,
    train_on: str | None = None,
) -> TrialConfig:
    """The bundle's trial config at the full schedule, with the bundle's SSN mapping fixed,
    scored on the test split once trained (``report_test``: the one model, not a search). A
    cross-validated trial's model is its fit of every sample: it is trained once, on the
    training and validation splits (unless ``train_on`` says otherwise), not k+1 times."""
    if epochs is None:
        epochs = FULL_SCHEDULE * cfg.train["epochs"]
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ConfigError(f"epochs: got {epochs!r}; allowed: an int >= 1")
    ssn = cfg.ssn
    if cfg.budget is not None and mapping:
        stores = max(int(v) for v in mapping.values()) + 1
        ssn = {**ssn, "mapping": dict(mapping), "stores": stores}
    return cfg.replace(
        train={"epochs": epochs, "max_steps": None},
        ssn=ssn,
        artifact_dir=str(out / "trained"),
        device=device,
        seed=cfg.seed if seed is None else checks.seed(seed, "seed"),
        train_on=train_on or ("train+val" if cfg.folds > 1 else cfg.train_on),
        folds=1,
        report_test=True,
    )


#: The metrics of the validation split, which a model trained on train+val trained on.
_VALIDATION_METRICS = ("accuracy", "val_loss")
#: What ``config.yaml`` may not change against ``model.pt``: what the saved mapping fits.
_ARCHITECTURE = (*ARCHITECTURE, "ssn")


def _bundle_config(folder: Path, saved: TrialConfig) -> TrialConfig:
    """The bundle's ``config.yaml`` (validated), which may change how it is trained but not
    what is trained: an architecture that differs from ``model.pt`` is refused."""
    path = folder / "config.yaml"
    if not path.is_file():
        return saved
    try:
        edited = TrialConfig.from_dict(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    except (ConfigError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: {err}") from None
    differ = [k for k in _ARCHITECTURE if getattr(edited, k) != getattr(saved, k)]
    if differ:
        raise ExportError(
            f"{path} differs from model.pt in {differ}: a bundle retrains the architecture it "
            "was exported with; edit only the training options (train, seed), or export the "
            "trial you want"
        )
    return edited


def check_device(device: str | None) -> None:
    """A device that this torch can use (a CUDA index it does not see is refused)."""
    if device is None:
        return
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ConfigError(f"--device: got {device!r}; allowed: cpu, cuda, cuda:<n>") from None
    if dev.type == "cuda" and (dev.index or 0) >= torch.cuda.device_count():
        raise ConfigError(
            f"--device: got {device!r}, but torch sees {torch.cuda.device_count()} CUDA "
            "device(s); allowed: cpu" + (", cuda, cuda:<n>" if torch.cuda.is_available() else "")
        )


def train_bundle(
    folder: str | os.PathLike[str],
    *,
    epochs: int | None = None,
    out: str | os.PathLike[str] | None = None,
    device: str | None = None,
    seed: int | None = None,
    from_checkpoint: bool = False,
    with_val: bool = False,
) -> Trained:
    """Retrains a bundle's configuration and compares it with the search: from scratch, or
    from the checkpoint the bundle holds.

    Same family, hyper-parameters, budget and SSN options; the parameter-store mapping is the
    bundle's (an ``auto`` mapping is not searched again). Accuracy and the same indicators are
    measured as the search did (:func:`search.trial.run_trial`); the retrained model, and it
    alone, is also scored on the test split (``test_accuracy``, compared with the exported
    model's, which ``search export`` read).

    Args:
        folder: The bundle.
        epochs: Training epochs; None: :data:`FULL_SCHEDULE` times the search's.
        out: Where ``train.json`` and the retrained ``trained/model.pt`` go (default: the
            bundle folder).
        device: Torch device; None: CUDA when available.
        seed: Seed of the initialisation, the data order and the validation split; None: the
            bundle's. The test split is the dataset's own, so test accuracies of several
            seeds compare (``benchmarks/leaderboard.py`` retrains each winner with three).
        from_checkpoint: Start from the weights of the checkpoint the bundle holds (exported
            with ``from_checkpoint``) instead of a fresh initialisation: a warm start, with the
            optimiser and learning-rate schedule of the retraining's ``epochs`` begun anew.
        with_val: Train on the training and validation splits (``train_on: train+val``): the
            model was chosen on validation, which may now train it. ``train.json`` says so
            (``train_on``), and its comparison leaves out the retrained validation metrics,
            which are then of data the model trained on. False: the bundle's ``train_on``.

    Raises:
        ExportError: not a bundle, or ``from_checkpoint`` and the bundle holds no checkpoint.
        ConfigError: bad epochs or device.
        OutputError: ``out`` is a file, read-only or full (refused before training), or
            filled up while the results were written (no file is left cut short).
    """
    folder = Path(folder)
    check_device(device)
    blob = read_bundle(folder)
    target = Path(out) if out is not None else folder
    searched = _bundle_config(folder, TrialConfig.from_dict(blob["trial_config"]))
    cfg = _retrain_config(searched, blob.get("mapping"), epochs=epochs, out=target, device=device,
                          seed=seed, train_on="train+val" if with_val else None)  # fmt: skip
    recorded = _recorded(folder)
    warm = folder if from_checkpoint else None
    if warm is not None and not (folder / STATE_NAME).is_file():
        raise ExportError(
            f"{folder} holds no checkpoint ({STATE_NAME}): export the trial with `search "
            "export --from-checkpoint`, or retrain from scratch without --from-checkpoint"
        )
    check_folder(target, flag="--out")  # before any training, not after it
    check_folder(target / "trained", flag="--out")
    result = run_trial(cfg, warm=warm)
    held_out = result if cfg.train_on == "train" else {
        k: v for k, v in result.items() if k not in _VALIDATION_METRICS
    }  # fmt: skip
    table = _compare({**_exported_test(folder), **recorded}, held_out, blob["trial_config"])
    onnx = _export(cfg, target / "trained", blob["in_shape"])
    models = _retrained_models(cfg, result, onnx)
    path = target / "train.json"
    payload = {
        "format": BUNDLE_FORMAT,
        "bundle": str(folder.resolve()),
        "epochs": cfg.train["epochs"],
        "search_epochs": searched.train["epochs"],
        "train_on": cfg.train_on,
        "from_checkpoint": _from_checkpoint(folder) if from_checkpoint else None,
        "trial_config": {**cfg.to_dict(), "artifact_dir": None},
        "metrics": result,
        "search_metrics": recorded,
        "comparison": table.to_dict(orient="records"),
        "onnx": onnx,
        "models": {**_bundle_models(folder, target), **models},
        "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "versions": versions(),
    }
    text = json.dumps(payload, indent=2, default=str)
    write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    if folder.resolve() == target.resolve():
        _say_models(folder, models)
    return Trained(table=table, metrics=result, path=path, onnx_error=onnx["error"])


def _export(cfg: TrialConfig, trained: Path, in_shape: list[int]) -> dict[str, Any]:
    """``model.onnx`` and ``model.pt2`` of the retrained model (materialised, as ``search
    export`` writes the bundle's) beside its ``model.pt`` in ``trained``; metrics.json's
    ``onnx`` record. Written in a fresh folder and renamed into place, so a failed export
    leaves neither file, not even an earlier retraining's (it would be another model)."""
    blob = read_weights(trained / ARTIFACT_NAME)
    model = deployable(model_of(cfg, blob["mapping"], blob["state_dict"]))
    example = torch.randn(2, *in_shape, generator=torch.Generator().manual_seed(0))
    stage: Path | None = None
    try:
        stage = Path(tempfile.mkdtemp(prefix=".npas-onnx-", dir=trained))
        record = write_onnx(model, example, stage)
        for name in (ONNX_FILE, PROGRAM_FILE):
            (trained / name).unlink(missing_ok=True)
            if (stage / name).is_file():
                os.replace(stage / name, trained / name)
    except OSError as err:
        raise OutputError(f"{str(trained)!r}: the retrained model's {ONNX_FILE} and "
                          f"{PROGRAM_FILE} could not be written ({err})") from None  # fmt: skip
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
    for key in ("file", "program"):
        if record[key]:
            record[key] = f"trained/{record[key]}"
    return record


def _retrained_models(
    cfg: TrialConfig, result: Mapping[str, Any], onnx: Mapping[str, Any]
) -> dict[str, str]:
    """What each file of ``trained/`` holds, for ``models`` in train.json and metrics.json."""
    test = result.get("test_accuracy")
    said = (f"the retrained model (search train: {cfg.train['epochs']} epoch(s) on "
            f"{cfg.train_on}, seed {cfg.seed}, test accuracy "
            f"{'n/a' if test is None else f'{test:.4f}'})")  # fmt: skip
    models = {
        f"trained/{ARTIFACT_NAME}": f"{said}, as search.trial.run_trial saves it (a "
        "Shapeshifter network's stores and mapping; search.trial.rebuild reads it)"
    }
    for key, form in (("file", "materialised, for onnxruntime"),
                      ("program", "materialised, for torch.export.load")):  # fmt: skip
        if onnx[key]:
            models[str(onnx[key])] = f"{said}, {form}"
    return models


def _bundle_models(folder: Path, target: Path) -> dict[str, str]:
    """The bundle's own files as its metrics.json names them (the search's model), by their
    path from ``target`` when train.json is written elsewhere."""
    named = {k: v for k, v in (metrics_json(folder).get("models") or MODELS).items()
             if not k.startswith("trained/") and (folder / k).is_file()}  # fmt: skip
    if folder.resolve() == target.resolve():
        return named
    return {str((folder / name).resolve()): said for name, said in named.items()}


def _say_models(folder: Path, models: Mapping[str, str]) -> None:
    """The bundle's metrics.json ``models`` with the retrained files added (those of an
    earlier retraining replaced): which file is which model."""
    record = metrics_json(folder)
    if not record:
        return
    kept = {k: v for k, v in (record.get("models") or MODELS).items()
            if not k.startswith("trained/") and (folder / k).is_file()}  # fmt: skip
    record["models"] = {**kept, **models}
    text = json.dumps(record, indent=2, default=str)
    write_atomic(folder / "metrics.json", lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _from_checkpoint(folder: Path) -> dict[str, Any]:
    """train.json's ``from_checkpoint``: the bundle's checkpoint, as metrics.json names it."""
    named = metrics_json(folder).get("checkpoint") or {}
    return {**named, "file": str((folder / STATE_NAME).resolve())}


def _recorded(folder: Path) -> dict[str, Any]:
    metrics = metrics_json(folder).get("metrics") or {}
    if not isinstance(metrics, dict):
        raise ExportError(f"{folder / 'metrics.json'}: its metrics are not a JSON object")
    return metrics


def _exported_test(folder: Path) -> dict[str, Any]:
    """The exported model's test figures (metrics.json's ``exported``), which the comparison
    sets beside the retrained model's: the search's trials read none."""
    exported = metrics_json(folder).get("exported") or {}
    return {k: exported[k] for k in ("test_accuracy", "test_loss") if _number(exported.get(k))}


def _compare(
    search: Mapping[str, Any], train: Mapping[str, Any], cfg: Mapping[str, Any]
) -> pd.DataFrame:
    """One row per metric both runs have: search value, retrained value, difference."""
    first = ["accuracy", "test_accuracy", *(o[0] for o in cfg.get("objectives") or [])]
    rest = [k for k in train if k not in first]
    rows = []
    for name in dict.fromkeys([*first, *rest, "train_time_s", "epochs"]):
        a, b = search.get(name), train.get(name)
        if not (_number(a) or _number(b)) or name.startswith(("constraint_", "cond_")):
            continue
        if name in ("feasible", "trial_time_s"):
            continue
        diff = b - a if _number(a) and _number(b) else math.nan
        rows.append({"metric": name, "search": a, "train": b, "change": diff})
    return pd.DataFrame(rows, columns=["metric", "search", "train", "change"])


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)
