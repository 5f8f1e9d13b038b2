"""Training-ready bundles: one chosen trial of a search, its config, materialised weights and
metrics, loadable with nothing but ``spaces.build_model`` — and retrained at a full schedule.

A bundle is a folder::

    config.yaml    the trial config (``search.trial.run_trial`` takes it as it is)
    model.pt       {"state_dict" (the plain, materialised model), "family", "in_shape",
                    "num_classes", "hyper", "mapping", "trial_config", "format", ...}
    metrics.json   the recorded metrics and their conditions, the trial and why it was chosen;
                   ``onnx`` (opset, input and output names and shapes, or why ONNX is missing)
                   and ``data`` (the test split and preprocessing that reproduce test_accuracy)
    model.onnx     the plain model for onnxruntime & co. (opset 18, dynamic batch)
    model.pt2      the same traced program for ``torch.export.load`` (no npas code needed)
    README.md      how to load it in your own code, with npas or without
    train.json     written by ``search train``: the retrained metrics next to the search's

Shapeshifter networks are materialised (:meth:`ShapeshiftNet.materialize`): the weights are the
generated ones, in the original architecture, so deployment needs no npas code. The SSN mapping
is kept so that :func:`train_bundle` retrains with the same parameter sharing. An ONNX export
that fails leaves the other files written and says why (see :mod:`search._deploy`).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import platform
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import optuna
import pandas as pd
import torch
import yaml
from torch import nn

from objectives.datasets import DATASETS, load
from objectives.train import evaluate
from search._deploy import ONNX_FILE, PROGRAM_FILE, data_record, write_onnx
from search._urls import masked_url
from search._usercode import import_modules
from search.config import TrialConfig
from search.config import _checks as checks
from search.errors import ConfigError, ExportError
from search.pareto._frame import format_value, objectives_of, trials_frame
from search.pareto._selectors import Selection, parse_spec, select
from search.pareto._study_front import front_of
from search.run._checkpoint_files import latest_checkpoint
from search.run._records import conditions_of, metrics_of
from search.trial import ARCHITECTURE, STATE_NAME, model_of, read_state, read_weights, run_trial
from spaces._build import build_model

__all__ = [
    "BUNDLE_FORMAT",
    "FULL_SCHEDULE",
    "ExportError",
    "Exported",
    "Trained",
    "export_bundle",
    "load_bundle",
    "read_bundle",
    "train_bundle",
]

#: ``format`` of a bundle's model.pt and metrics.json.
BUNDLE_FORMAT = "npas-bundle/1"
#: ``search train`` retrains for this many times the search's epochs unless told otherwise.
FULL_SCHEDULE = 4
_FILES = ("config.yaml", "model.pt", "metrics.json", "README.md")


@dataclass(frozen=True)
class Exported:
    """What :func:`export_bundle` wrote.

    Attributes:
        folder: The bundle folder.
        number: The exported trial's number.
        selection: The selector's choice and its reason.
        paths: File name → path.
        recorded_test_accuracy: ``test_accuracy`` the search recorded for the trial.
        test_accuracy: The exported (materialised) model's accuracy on the same test split.
        onnx_error: Why the bundle has no model.onnx and model.pt2; None when it has them.
    """

    folder: Path
    number: int
    selection: Selection
    paths: dict[str, Path]
    recorded_test_accuracy: float | None
    test_accuracy: float
    onnx_error: str | None


@dataclass(frozen=True)
class Trained:
    """What :func:`train_bundle` measured: the comparison table and where it is saved."""

    table: pd.DataFrame
    metrics: dict[str, Any]
    path: Path


# -- export -------------------------------------------------------------------------------------


def _frozen(study: optuna.Study, number: int) -> optuna.trial.FrozenTrial:
    for trial in study.get_trials(deepcopy=False):
        if trial.number == number:
            return trial
    raise ExportError(f"study {study.study_name!r} has no trial {number}")


def _artifact(trial: optuna.trial.FrozenTrial) -> Path:
    metrics = metrics_of(trial)
    where = trial.user_attrs.get("artifact") or metrics.get("artifact")
    if not where or not Path(where).is_file():
        reason = metrics.get("infeasible_reason")
        why = f" (it was not trained: {reason})" if reason else ""
        raise ExportError(
            f"trial {trial.number} has no saved model{why}: artifact {where!r} is missing; "
            "searches run with `search launch` save one per trained trial under "
            "<out>/<name>/trials/<number>/model.pt"
        )
    return Path(where)


def _refuse_existing(folder: Path) -> None:
    """A bundle already in ``folder`` is not written over unless asked (``replace``)."""
    if not any((folder / name).exists() for name in _FILES if name != "README.md"):
        return
    try:
        record = _metrics_json(folder)
        what = f"trial {record['trial']} of {record['study']!r}"
    except (ExportError, KeyError, TypeError):
        what = "a bundle"
    raise ExportError(
        f"{folder} already holds {what}; --replace writes over it (replace=True), or give "
        "another --out"
    )


def _checkpoint(trial: optuna.trial.FrozenTrial) -> Path:
    """The trial's latest checkpoint folder, for ``--from-checkpoint``."""
    found = latest_checkpoint(trial)
    if found is None or not (found / STATE_NAME).is_file():
        raise ExportError(
            f"trial {trial.number} has no checkpoint on this machine (a search deletes the "
            "checkpoints of trials stopped at a rung, and a trial run by your own trial "
            "function may write none); export without --from-checkpoint uses its saved model"
        )
    return found


def _choose(study: optuna.Study, spec: str, objectives: Sequence[Any] | None) -> Selection:
    frame = trials_frame(study)
    pairs = list(objectives) if objectives else objectives_of(study)
    chosen = select(frame, spec, pairs)
    if chosen is None:
        front = front_of(frame, pairs)
        why = front.message or "the selector found no trial that qualifies"
        raise ExportError(f"selection {spec!r} chose no trial of {study.study_name!r}: {why}")
    return chosen


def _materialized(net: nn.Module) -> nn.Module:
    """The deployable module: a Shapeshifter network materialised, anything else as it is."""
    materialize = getattr(net, "materialize", None)
    return (materialize() if callable(materialize) else net).eval()


def _versions() -> dict[str, str]:
    try:
        npas = metadata.version("npas")
    except metadata.PackageNotFoundError:
        npas = "unknown"
    return {
        "npas": npas,
        "torch": torch.__version__,
        "optuna": optuna.__version__,
        "python": platform.python_version(),
    }


def export_bundle(
    study: optuna.Study,
    out_dir: str | os.PathLike[str],
    *,
    select: str = "knee",
    objectives: Sequence[Any] | None = None,
    storage_url: str | None = None,
    from_checkpoint: bool = False,
    replace: bool = False,
) -> Exported:
    """Writes the bundle of one trial of ``study``, chosen by a selection spec.

    The trial's saved model is rebuilt (:func:`search.trial.rebuild`), materialised, and
    evaluated once more on the dataset's test split so the bundle records both accuracies.
    The plain model is also written as ONNX and as a ``torch.export`` program; when that
    fails, the rest of the bundle is still written, metrics.json's ``onnx.error`` and the
    README say why, a warning is issued and :attr:`Exported.onnx_error` holds the reason.

    Args:
        study: A study written by ``search launch``.
        out_dir: The bundle folder (created; one holding a bundle only with ``replace``).
        select: ``knee``, ``pepr:<indicator>``, ``best:<metric>``, ``trial:<n>``, ... (see
            :func:`search.pareto.select`).
        objectives: The front's objectives; None: the study's.
        storage_url: Recorded in metrics.json (password removed) as where the trial came from.
        from_checkpoint: Take the weights from the trial's latest Ray Tune checkpoint instead
            of its saved model, and copy that checkpoint into the bundle
            (:data:`search.trial.STATE_NAME`) so ``search train --from-checkpoint`` starts
            from it; metrics.json's ``checkpoint`` says which one it was.
        replace: Write over a bundle already in ``out_dir`` (else it is refused).

    Raises:
        ConfigError: a bad selection spec or objective name.
        ExportError: nothing qualifies, the chosen trial has no saved model (with
            ``from_checkpoint``: no checkpoint), or ``out_dir`` holds a bundle and not
            ``replace``.
    """
    parse_spec(select)  # a bad spec fails before anything is read or written
    if not replace:
        _refuse_existing(Path(out_dir))
    chosen = _choose(study, select, objectives)
    trial = _frozen(study, chosen.number)
    if from_checkpoint:
        checkpoint = _checkpoint(trial)
        state = read_state(checkpoint)
        blob = {"trial_config": state["trial_config"], "mapping": state["mapping"],
                "state_dict": state["fit"]["model"]}  # fmt: skip
        source = {"folder": str(checkpoint), "epoch": int(state["epoch"]), "file": STATE_NAME}
    else:
        blob, source = read_weights(_artifact(trial)), None
    cfg = TrialConfig.from_dict(blob["trial_config"])
    model = _materialized(model_of(cfg, blob["mapping"], blob["state_dict"]))
    data = load(
        cfg.dataset,
        root=cfg.data_root,
        val_size=cfg.val_size,
        train_size=cfg.train_size,
        seed=cfg.seed,
        progress=False,
        **cfg.loading,
    )
    test = evaluate(model, data.test)
    described = data_record(data)  # it reads the dataset again: before anything is written
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    onnx = write_onnx(model, data.test.example(2).cpu(), folder)
    metrics = metrics_of(trial, conditions_of(study))
    info = DATASETS.get(cfg.dataset)
    saved = {
        "format": BUNDLE_FORMAT,
        "family": cfg.family,
        "in_shape": [int(n) for n in info.in_shape],
        "num_classes": int(info.num_classes),
        "hyper": cfg.hyper,
        "budget": cfg.budget,
        "mapping": blob.get("mapping"),
        "normalisation": {"mean": list(data.mean), "std": list(data.std)},
        "trial_config": _portable(cfg),
        "state_dict": {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
    }
    paths = {name: folder / name for name in _FILES}
    paths.update({name: folder / name for name in (onnx["file"], onnx["program"]) if name})
    torch.save(saved, paths["model.pt"])
    kept = folder / STATE_NAME  # an earlier export's checkpoint is not this bundle's
    if source is None:
        kept.unlink(missing_ok=True)
    else:
        kept.write_bytes((checkpoint / STATE_NAME).read_bytes())
        paths[STATE_NAME] = kept
    paths["config.yaml"].write_text(_config_yaml(study, trial.number, cfg), encoding="utf-8")
    deploy = {"onnx": onnx, "data": described, "checkpoint": source}
    record = _metrics_record(study, trial, chosen, metrics, model, test, storage_url, deploy)
    paths["metrics.json"].write_text(json.dumps(record, indent=2, default=str), encoding="utf-8")
    paths["README.md"].write_text(_readme(study, trial.number, chosen, saved, record), "utf-8")
    if onnx["error"] is not None:
        warnings.warn(
            f"{folder}: no {ONNX_FILE} or {PROGRAM_FILE} ({onnx['error']}); the rest of the "
            "bundle is written and metrics.json's onnx.error says why",
            stacklevel=2,
        )
    recorded = metrics.get("test_accuracy")
    return Exported(
        folder=folder,
        number=trial.number,
        selection=chosen,
        paths=paths,
        recorded_test_accuracy=None if recorded is None else float(recorded),
        test_accuracy=float(test["accuracy"]),
        onnx_error=onnx["error"],
    )


def _portable(cfg: TrialConfig) -> dict[str, Any]:
    """The trial config without this machine's paths: no artifact folder, the default device."""
    return {**cfg.to_dict(), "artifact_dir": None, "device": None, "progress": False}


def _config_yaml(study: optuna.Study, number: int, cfg: TrialConfig) -> str:
    header = (
        f"# Trial {number} of search {study.study_name!r}, as npas trained it.\n"
        "# search.trial.run_trial(yaml.safe_load(open('config.yaml'))) trains it again;\n"
        "# `search train <this folder>` does so at a full schedule with the same SSN mapping.\n"
    )
    return header + yaml.safe_dump(_portable(cfg), sort_keys=False)


def _metrics_record(
    study: optuna.Study,
    trial: optuna.trial.FrozenTrial,
    chosen: Selection,
    metrics: Mapping[str, Any],
    model: nn.Module,
    test: Mapping[str, float],
    storage_url: str | None,
    deploy: Mapping[str, Any],
) -> dict[str, Any]:
    """metrics.json; ``deploy`` holds its ``onnx``, ``data`` and ``checkpoint`` sections."""
    conditions = {k: v for k, v in metrics.items() if k.startswith("cond_")}
    return {
        "format": BUNDLE_FORMAT,
        "study": study.study_name,
        "storage": masked_url(storage_url),
        "trial": trial.number,
        "selection": {
            "spec": chosen.selector,
            "reason": chosen.reason,
            "scores": dict(chosen.scores),
        },
        "objectives": [list(o) for o in objectives_of(study)],
        "constraints": list(study.user_attrs.get("constraints") or []),
        "params": dict(trial.params),
        "metrics": {
            k: v for k, v in metrics.items() if not k.startswith("cond_") and k != "artifact"
        },
        "conditions": conditions,
        "exported": {
            "materialised_params": sum(p.numel() for p in model.parameters()),
            "test_accuracy": float(test["accuracy"]),
            "test_correct": round(test["accuracy"] * deploy["data"]["test"]["size"]),
            "test_loss": float(test["loss"]),
            "note": "the materialised model evaluated on the CPU on the dataset's test split; "
            "test_accuracy under metrics is what the search recorded",
            "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "versions": _versions(),
        },
        **deploy,
    }


def _readme(
    study: optuna.Study,
    number: int,
    chosen: Selection,
    saved: Mapping[str, Any],
    record: Mapping[str, Any],
) -> str:
    metrics = record["metrics"]
    shown = [n for n, _ in record["objectives"]] + ["test_accuracy"]
    lines = "\n".join(
        f"| {n} | {format_value(metrics.get(n))} |" for n in dict.fromkeys(shown) if n in metrics
    )
    budget = saved["budget"]
    ssn = (
        f"It was searched as a Shapeshifter network with a budget of {budget} parameters; the "
        "weights here are materialised (generated once), so the module is a plain "
        f"`{saved['family']}` with {record['exported']['materialised_params']} parameters."
        if budget is not None
        else "It was searched as a plain model (no parameter budget)."
    )
    norm = saved["normalisation"]
    return f"""# npas bundle: trial {number} of `{study.study_name}`

Chosen by `{chosen.selector}`: {chosen.reason}.

Family `{saved["family"]}`, hyper-parameters `{json.dumps(saved["hyper"])}`, input shape
{tuple(saved["in_shape"])}, {saved["num_classes"]} classes. {ssn}

| metric (as the search recorded it) | value |
|---|---|
{lines}

The exported model scores {record["exported"]["test_accuracy"]:.4f} on the test split.
`metrics.json` holds every indicator with the conditions it was measured under.
{_checkpoint_readme(record["checkpoint"])}
## Load it in your own code

```python
import torch
from spaces import build_model

blob = torch.load("model.pt", map_location="cpu", weights_only=True)
model = build_model(blob["family"], blob["in_shape"], blob["num_classes"], **blob["hyper"])
model.load_state_dict(blob["state_dict"])
model.eval()
```

Inputs are normalised as `objectives.datasets.load("{saved["trial_config"]["dataset"]}")`
does it: pixels scaled to [0, 1], then per channel `(x - mean) / std` with mean
{[round(m, 6) for m in norm["mean"]]} and std {[round(s, 6) for s in norm["std"]]}.

{_deploy_readme(record)}
## Train it again

`search train <this folder> [--epochs N]` retrains the configuration from scratch at a full
schedule (same family, budget and parameter-store mapping) and writes `train.json` with the
accuracy and cost panel next to the search's values. `config.yaml` is the trial config:
`search.trial.run_trial(config)` runs it as the search did.
"""


def _checkpoint_readme(source: Mapping[str, Any] | None) -> str:
    """The README's line on where the weights came from, when from a checkpoint."""
    if source is None:
        return ""
    return (
        f"\nThe weights are the trial's checkpoint after epoch {source['epoch']} "
        f"(`{source['folder']}`), kept here as `{source['file']}`: `search train <this "
        "folder> --from-checkpoint` starts from it.\n"
    )


def _deploy_readme(record: Mapping[str, Any]) -> str:
    """The README's section on running the bundle with onnxruntime or torch alone."""
    onnx, data = record["onnx"], record["data"]
    test, source = data["test"], data["source"]
    where = test["split"] + (
        " (`data.test.indices`: positions in the source)" if test["indices"] is not None else ""
    )
    origin = source if isinstance(source, str) else "the files in `data.source`"
    common = (
        f"The test split is {test['size']} samples of `{data['dataset']}` from {origin}: "
        f"{where}. Raw pixels are the published values, channels first (`pixel_scale` "
        f"{data['preprocessing']['pixel_scale']:g} maps them to [0, 1]); the exported model "
        f"gets {record['exported']['test_correct']} of them right.\n"
    )
    if onnx["file"] is None:
        return f"""## Run it without npas

This bundle has no `{ONNX_FILE}` or `{PROGRAM_FILE}`: {onnx["error"]}. `model.pt` loads
as above. {common}"""
    inp, out = onnx["input"], onnx["output"]
    shape_in, shape_out = (", ".join(map(str, v["shape"])) for v in (inp, out))
    return f"""## Run it without npas

`{ONNX_FILE}` (ONNX opset {onnx["opset"]}) takes `{inp["name"]}`, {inp["dtype"]} of shape
({shape_in}) (the `batch` dimension is dynamic), and returns `{out["name"]}` ({shape_out}).
Preprocess with the float32 constants in `metrics.json` → `data.preprocessing`: this gives
exactly what npas fed the model, while `(raw / pixel_scale - mean) / std` can round differently
in the last bit:

```python
import json, numpy as np, onnxruntime as ort
pre = json.load(open("metrics.json"))["data"]["preprocessing"]
scale, shift = (np.asarray(pre[k], np.float32)[:, None, None] for k in ("multiply", "subtract"))
x = raw.astype(np.float32) * scale - shift  # raw: N×C×H×W pixel values as published
logits = ort.InferenceSession("{ONNX_FILE}").run(None, {{"{inp["name"]}": x}})[0]
```

{common}
`{PROGRAM_FILE}` is the same model as a `torch.export` program, for torch alone:
`torch.export.load("{PROGRAM_FILE}").module()(torch.from_numpy(x))`.
"""


# -- loading ------------------------------------------------------------------------------------


def read_bundle(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """A bundle's model.pt as a dict (on the CPU).

    Raises:
        ExportError: the folder holds no npas bundle.
    """
    path = Path(folder) / "model.pt"
    if not path.is_file():
        raise ExportError(
            f"{str(folder)!r} is not a bundle: no model.pt in it (make one with `search export`)"
        )
    blob = read_weights(path)
    if blob.get("format") != BUNDLE_FORMAT:
        raise ExportError(f"{str(path)!r} is not an {BUNDLE_FORMAT} model file")
    return dict(blob)


def load_bundle(folder: str | os.PathLike[str]) -> nn.Module:
    """The bundle's model: ``spaces.build_model`` plus its materialised weights, in eval mode.
    The modules its trial config imports (a family of the user's) are imported first.

    Raises:
        ExportError: the folder holds no npas bundle.
        ConfigError: a module it imports cannot be imported here.
    """
    blob = read_bundle(folder)
    import_modules(blob["trial_config"].get("imports") or [], path="the bundle's imports")
    model = build_model(blob["family"], blob["in_shape"], blob["num_classes"], **blob["hyper"])
    model.load_state_dict(blob["state_dict"])
    return model.eval()


# -- retraining ---------------------------------------------------------------------------------


def _retrain_config(
    cfg: TrialConfig, mapping: Mapping[str, int] | None, *, epochs: int | None, out: Path,
    device: str | None, seed: int | None = None,
) -> TrialConfig:
    """The bundle's trial config at the full schedule, with the bundle's SSN mapping fixed."""
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
    )


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


def _check_device(device: str | None) -> None:
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
) -> Trained:
    """Retrains a bundle's configuration and compares it with the search: from scratch, or
    from the checkpoint the bundle holds.

    Same family, hyper-parameters, budget and SSN options; the parameter-store mapping is the
    bundle's (an ``auto`` mapping is not searched again). Accuracy and the same indicators are
    measured as the search did (:func:`search.trial.run_trial`).

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

    Raises:
        ExportError: not a bundle, or ``from_checkpoint`` and the bundle holds no checkpoint.
        ConfigError: bad epochs or device.
    """
    folder = Path(folder)
    _check_device(device)
    blob = read_bundle(folder)
    target = Path(out) if out is not None else folder
    searched = _bundle_config(folder, TrialConfig.from_dict(blob["trial_config"]))
    cfg = _retrain_config(searched, blob.get("mapping"), epochs=epochs, out=target, device=device,
                          seed=seed)  # fmt: skip
    recorded = _recorded(folder)
    warm = folder if from_checkpoint else None
    if warm is not None and not (folder / STATE_NAME).is_file():
        raise ExportError(
            f"{folder} holds no checkpoint ({STATE_NAME}): export the trial with `search "
            "export --from-checkpoint`, or retrain from scratch without --from-checkpoint"
        )
    result = run_trial(cfg, warm=warm)
    table = _compare(recorded, result, blob["trial_config"])
    target.mkdir(parents=True, exist_ok=True)
    path = target / "train.json"
    payload = {
        "format": BUNDLE_FORMAT,
        "bundle": str(folder.resolve()),
        "epochs": cfg.train["epochs"],
        "search_epochs": searched.train["epochs"],
        "from_checkpoint": _from_checkpoint(folder) if from_checkpoint else None,
        "trial_config": {**cfg.to_dict(), "artifact_dir": None},
        "metrics": result,
        "search_metrics": recorded,
        "comparison": table.to_dict(orient="records"),
        "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": _versions(),
    }
    path.write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")
    return Trained(table=table, metrics=result, path=path)


def _from_checkpoint(folder: Path) -> dict[str, Any]:
    """train.json's ``from_checkpoint``: the bundle's checkpoint, as metrics.json names it."""
    named = _metrics_json(folder).get("checkpoint") or {}
    return {**named, "file": str((folder / STATE_NAME).resolve())}


def _metrics_json(folder: Path) -> dict[str, Any]:
    """The bundle's metrics.json ({} when it has none).

    Raises:
        ExportError: it is not a JSON object.
    """
    path = folder / "metrics.json"
    if not path.is_file():
        return {}
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ExportError(f"{path} is not valid JSON ({err}); export the bundle again") from None
    if not isinstance(record, dict):
        raise ExportError(f"{path} holds no JSON object; export the bundle again")
    return record


def _recorded(folder: Path) -> dict[str, Any]:
    metrics = _metrics_json(folder).get("metrics") or {}
    if not isinstance(metrics, dict):
        raise ExportError(f"{folder / 'metrics.json'}: its metrics are not a JSON object")
    return metrics


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


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
