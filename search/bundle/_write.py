"""``search export``: one chosen trial of a search written as a bundle (its config, materialised
weights, metrics and conditions, the model as ONNX and a torch.export program, a README)."""

from __future__ import annotations

import datetime as dt
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
import torch
import yaml
from torch import nn

from objectives.datasets import DATASETS, load
from objectives.train import evaluate, trained_weights
from search._urls import masked_url
from search.bundle._files import BUNDLE_FORMAT, FILES, versions
from search.bundle._folder import MANIFEST, bundle_target, staged_bundle, write_manifest
from search.bundle._portable import ONNX_FILE, PROGRAM_FILE, data_record, write_onnx
from search.bundle._readme import readme
from search.config import TrialConfig
from search.errors import ExportError
from search.pareto import (
    Selection,
    front_of,
    objectives_of,
    parse_spec,
    select,
    trials_frame,
    why_none,
)
from search.record import (
    TrialRecord,
    conditions_of,
    constraints_of,
    latest_checkpoint,
    read_trial,
    recommendation_of,
)
from search.trial import STATE_NAME, model_of, read_state, read_weights

__all__ = ["MODELS", "Exported", "deployable", "export_bundle"]

#: metrics.json's ``models`` as export writes it: which model each model file holds
#: (``search train`` adds its ``trained/`` files).
MODELS = {
    "model.pt": "the search's model: the trial's weights as the search trained them, "
    "materialised (a Shapeshifter network's generated weights)",
    ONNX_FILE: "the search's model, as model.pt, for onnxruntime",
    PROGRAM_FILE: "the search's model, as model.pt, for torch.export.load",
}

#: ``models`` when the recommendation's refit model is exported (``search.run._finalists``).
REFIT_MODELS = {
    "model.pt": "the recommendation's refit: the trial trained again after the finalists "
    "chose it, on the training and validation splits together, with its search seed, "
    "materialised",
    ONNX_FILE: "the refit model, as model.pt, for onnxruntime",
    PROGRAM_FILE: "the refit model, as model.pt, for torch.export.load",
}


@dataclass(frozen=True)
class Exported:
    """What :func:`export_bundle` wrote.

    Attributes:
        folder: The bundle folder.
        number: The exported trial's number.
        selection: The selector's choice and its reason.
        paths: File name → path.
        test_accuracy: The exported (materialised) model's accuracy on the dataset's test
            split: read once, here, for this model only (no trial of a search reads it unless
            its config sets ``report_test``).
        test_rows: The test split's size.
        onnx_error: Why the bundle has no model.onnx and model.pt2; None when it has them.
        params: The parameters the trial trained (a Shapeshifter net's stores: what
            ``params`` constraints see); None when the search did not record them.
        deployed: The exported model's parameters (a Shapeshifter net's weights materialised:
            what model.pt and model.onnx hold).
        fallback: Why the knee was exported when no selection was given (the search has no
            recommendation); None otherwise.
    """

    folder: Path
    number: int
    selection: Selection
    paths: dict[str, Path]
    test_accuracy: float
    test_rows: int
    onnx_error: str | None
    params: int | None
    deployed: int
    fallback: str | None = None


def _frozen(study: optuna.Study, number: int) -> optuna.trial.FrozenTrial:
    for trial in study.get_trials(deepcopy=False):
        if trial.number == number:
            return trial
    raise ExportError(f"study {study.study_name!r} has no trial {number}")


def _artifact(trial: TrialRecord) -> Path:
    where = trial.artifact
    if not where or not Path(where).is_file():
        why = f" (it was not trained: {trial.why_infeasible})" if trial.refused else ""
        raise ExportError(
            f"trial {trial.number} has no saved model{why}: artifact {where!r} is missing; "
            "searches run with `search launch` save one per trained trial under "
            "<out>/<name>/trials/<number>/model.pt"
        )
    return Path(where)


def _refit(study: optuna.Study, chosen: Selection) -> Path | None:
    """The recommendation's refit model (trained on train and validation together after the
    finalists chose it, ``search.run._finalists``) when the recommendation is exported and
    its file is here; None otherwise: the trial's own saved model."""
    if chosen.selector != "recommended":
        return None
    refit = (recommendation_of(study) or {}).get("refit") or {}
    where = refit.get("artifact")
    if refit.get("trial") != chosen.number or not where or not Path(where).is_file():
        return None
    return Path(where)


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
        why = front.message or why_none(frame, spec) or "no trial qualifies"
        raise ExportError(f"selection {spec!r} chose no trial of {study.study_name!r}: {why}")
    return chosen


def deployable(net: nn.Module) -> nn.Module:
    """The deployable module: a Shapeshifter network materialised, anything else as it is."""
    materialize = getattr(net, "materialize", None)
    return (materialize() if callable(materialize) else net).eval()


def export_bundle(
    study: optuna.Study,
    out_dir: str | os.PathLike[str],
    *,
    select: str | None = None,
    objectives: Sequence[Any] | None = None,
    storage_url: str | None = None,
    from_checkpoint: bool = False,
    replace: bool = False,
) -> Exported:
    """Writes the bundle of one trial of ``study``, chosen by a selection spec.

    The trial's saved model is rebuilt (:func:`search.trial.rebuild`), materialised, and
    evaluated on the dataset's test split: the one read of the test split for it, after the
    search chose it (metrics.json's ``exported.test_accuracy``).
    The plain model is also written as ONNX and as a ``torch.export`` program; when that
    fails, the rest of the bundle is still written, metrics.json's ``onnx.error`` and the
    README say why, a warning is issued and :attr:`Exported.onnx_error` holds the reason.
    The bundle is written into a fresh folder beside ``out_dir`` and renamed into place
    (:mod:`search.bundle._folder`): a failed export leaves ``out_dir`` as it was, and a
    user's own files are never written over or deleted.

    Args:
        study: A study written by ``search launch``.
        out_dir: The bundle folder: a new or empty one, or one holding an npas bundle and
            nothing else (with ``replace``); a symlink is followed.
        select: ``recommended``, ``knee``, ``pepr:<indicator>``, ``best:<metric>``,
            ``trial:<n>``, ... (see :func:`search.pareto.select`); None: the search's
            recommendation (its finalists' choice), else the knee when it has none
            (:attr:`Exported.fallback` then says why).
        objectives: The front's objectives; None: the study's.
        storage_url: Recorded in metrics.json (password removed) as where the trial came from.
        from_checkpoint: Take the weights from the trial's latest Ray Tune checkpoint instead
            of its saved model, and copy that checkpoint into the bundle
            (:data:`search.trial.STATE_NAME`) so ``search train --from-checkpoint`` starts
            from it; metrics.json's ``checkpoint`` says which one it was.
        replace: Replace the npas bundle in ``out_dir`` (else it is refused).

    Raises:
        ConfigError: a bad selection spec or objective name.
        ExportError: nothing qualifies, the chosen trial has no saved model (with
            ``from_checkpoint``: no checkpoint); or, before anything is read, ``out_dir`` is a
            file, holds a symlink leading out of it or files that are not an npas bundle's,
            or holds a bundle and not ``replace``.
    """
    if select is not None:
        parse_spec(select)  # a bad spec or --out fails before anything is read or written
    bundle_target(out_dir, replace=replace)
    fallback = None
    if select is None:
        select = "recommended" if recommendation_of(study) is not None else "knee"
        if select == "knee":
            fallback = (f"search {study.study_name!r} has no recommendation (no finalists key "
                        "in its config, or launched before npas recorded one): the knee is "
                        "exported instead; --select names another trial (search selectors)")
    chosen = _choose(study, select, objectives)
    trial = _frozen(study, chosen.number)
    recorded = read_trial(trial, conditions_of(study), constraints_of(study))
    refit = None  # a checkpoint's weights are the trial's own
    if from_checkpoint:
        checkpoint = _checkpoint(trial)
        state = read_state(checkpoint)
        blob = {"trial_config": state["trial_config"], "mapping": state["mapping"],
                "state_dict": trained_weights(state["fit"])}  # fmt: skip
        source = {"folder": str(checkpoint), "epoch": int(state["epoch"]), "file": STATE_NAME}
    else:
        refit = _refit(study, chosen)
        blob, source = read_weights(refit or _artifact(recorded)), None
    cfg = TrialConfig.from_dict(blob["trial_config"])
    model = deployable(model_of(cfg, blob["mapping"], blob["state_dict"]))
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
        "trial_config": _shareable(cfg),
        "state_dict": {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
    }
    with staged_bundle(out_dir, replace=replace) as staged:  # moved to out_dir once written
        onnx = write_onnx(model, data.test.example(2).cpu(), staged)
        names = [*FILES, *(name for name in (onnx["file"], onnx["program"]) if name)]
        torch.save(saved, staged / "model.pt")
        if source is not None:
            (staged / STATE_NAME).write_bytes((checkpoint / STATE_NAME).read_bytes())
            names.append(STATE_NAME)
        (staged / "config.yaml").write_text(
            _config_yaml(study, trial.number, cfg), encoding="utf-8"
        )
        deploy = {"onnx": onnx, "data": described, "checkpoint": source}
        labels = MODELS if refit is None else REFIT_MODELS
        models = {k: v for k, v in labels.items() if k in names}
        deploy = {**deploy, "models": models}
        record = _metrics_record(study, recorded, chosen, model, test, storage_url, deploy)
        (staged / "metrics.json").write_text(
            json.dumps(record, indent=2, default=str), encoding="utf-8"
        )
        (staged / "README.md").write_text(
            readme(study, trial.number, chosen, saved, record), "utf-8"
        )
        write_manifest(staged, study=study.study_name, trial=trial.number, files=names)
    folder = Path(out_dir)
    paths = {name: folder / name for name in (*names, MANIFEST)}
    if onnx["error"] is not None:
        warnings.warn(
            f"{folder}: no {ONNX_FILE} or {PROGRAM_FILE} ({onnx['error']}); the rest of the "
            "bundle is written and metrics.json's onnx.error says why",
            stacklevel=2,
        )
    trained = recorded.metrics.get("params")
    return Exported(
        folder=folder,
        number=trial.number,
        selection=chosen,
        paths=paths,
        test_accuracy=float(test["accuracy"]),
        test_rows=len(data.test),
        onnx_error=onnx["error"],
        params=None if trained is None else int(trained),
        deployed=int(record["exported"]["materialised_params"]),
        fallback=fallback,
    )


def _shareable(cfg: TrialConfig) -> dict[str, Any]:
    """The trial config without this machine's paths: no artifact folder, the default device."""
    return {**cfg.to_dict(), "artifact_dir": None, "device": None, "progress": False}


def _config_yaml(study: optuna.Study, number: int, cfg: TrialConfig) -> str:
    header = (
        f"# Trial {number} of search {study.study_name!r}, as npas trained it.\n"
        "# search.trial.run_trial(yaml.safe_load(open('config.yaml'))) trains it again;\n"
        "# `search train <this folder>` does so at a full schedule with the same SSN mapping.\n"
    )
    return header + yaml.safe_dump(_shareable(cfg), sort_keys=False)


def _metrics_record(
    study: optuna.Study,
    trial: TrialRecord,
    chosen: Selection,
    model: nn.Module,
    test: Mapping[str, float],
    storage_url: str | None,
    deploy: Mapping[str, Any],
) -> dict[str, Any]:
    """metrics.json; ``deploy`` holds its ``onnx``, ``data``, ``checkpoint`` and ``models``
    sections; a recommendation's selection keeps the finalists' record (every seed's
    validation accuracy)."""
    behind = {"finalists": recommendation_of(study)} if chosen.selector == "recommended" else {}
    return {
        "format": BUNDLE_FORMAT,
        "study": study.study_name,
        "storage": masked_url(storage_url),
        "trial": trial.number,
        "selection": {
            "spec": chosen.selector,
            "reason": chosen.reason,
            "scores": dict(chosen.scores),
            **behind,
        },
        "objectives": [list(o) for o in objectives_of(study)],
        "constraints": list(constraints_of(study)),
        "violations": trial.violations,
        "params": trial.params,
        "metrics": {k: v for k, v in trial.metrics.items() if k != "artifact"},
        "conditions": trial.conditions,
        "exported": {
            "materialised_params": sum(p.numel() for p in model.parameters()),
            "test_accuracy": float(test["accuracy"]),
            "test_correct": round(test["accuracy"] * deploy["data"]["test"]["size"]),
            "test_loss": float(test["loss"]),
            "note": _test_note(trial.metrics),
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "versions": versions(),
        },
        **deploy,
    }


def _test_note(metrics: Mapping[str, Any]) -> str:
    """metrics.json's ``exported.note``: where the test figure comes from."""
    note = ("the materialised model evaluated on the CPU on the dataset's test split, once, "
            "after the search chose it")  # fmt: skip
    if "test_accuracy" in metrics:
        return note + "; test_accuracy under metrics is the trial's own (report_test: true)"
    return note + "; no trial of the search read the test split"
