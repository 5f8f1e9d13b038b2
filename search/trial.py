"""One trial of a search as a plain function: build, gate, train, evaluate, measure.

:func:`run_trial` takes a :class:`~search.config.TrialConfig` or a hand-writable dict (see
:meth:`TrialConfig.from_dict` for every key and default) and returns a flat JSON-serialisable
dict of metrics. Ray Tune wraps it, but it needs no scheduler: call it directly in a test, a
benchmark or a notebook.

Example:
    >>> from search.trial import run_trial
    >>> result = run_trial({"dataset": "digits", "family": "mlp", "hyper": {"width": 32},
    ...                     "budget": 1000, "train": {"epochs": 2}})  # doctest: +SKIP
    >>> result["params"] <= 1000, result["feasible"]  # doctest: +SKIP
    (True, 1.0)
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import io
import os
import statistics
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from objectives import INDICATORS, EnergyMeter, measure, measuring_data
from objectives.datasets import DATASETS, Data, load
from objectives.train import FitResult, Recipe, evaluate, fit, trained_weights
from search._output import write_atomic
from search.config import FIT_TRIES, Constraint, TrialConfig
from search.errors import ExportError
from search.screening import breach, verdict
from spaces import BudgetError, ConfigError, build_model
from spaces.ssn import shapeshift

__all__ = [
    "ARCHITECTURE",
    "ARTIFACT_NAME",
    "STATE_NAME",
    "EpochFn",
    "StateFn",
    "model_of",
    "read_state",
    "read_weights",
    "rebuild",
    "run_trial",
]

#: File name of the trained model in a trial's ``artifact_dir``.
ARTIFACT_NAME = "model.pt"
#: File name of a trial's resumable state in a checkpoint folder (``on_state``, ``resume``).
STATE_NAME = "trial_state.pt"
#: ``format`` of that state.
STATE_FORMAT = "npas-trial-state/1"
#: Gradient-norm clip of the ``auto`` mapping's probe pretraining: the probe serves every
#: layer from one small store, and at the trial's own learning rate (SGD at 0.1-0.3) a deep
#: probe diverged to NaN within an epoch on MNIST; clipped, it trains (see _net._resized).
PROBE_CLIP = 1.0


#: Receives one dict per trained epoch (see :func:`run_trial`); raising stops the trial.
EpochFn = Callable[[dict[str, Any]], None]
#: Receives, after each epoch, a function that writes the trial's state into a folder.
StateFn = Callable[[Callable[[str | os.PathLike[str]], None]], None]


def run_trial(
    cfg: TrialConfig | Mapping[str, Any],
    *,
    on_epoch: EpochFn | None = None,
    on_state: StateFn | None = None,
    resume: str | os.PathLike[str] | None = None,
    warm: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Runs one trial and returns its metrics.

    Steps: seed; load the dataset (cached per process; with ``train_on: train+val`` its
    validation split joins the training split); build the model; shapeshift it into
    ``budget`` (pretraining first for ``mapping: auto``); measure the analytic indicators and
    stop there, untrained, when they violate a constraint; train; take the validation figures
    of the last epoch (and, only with ``report_test``, evaluate on the test split); measure the
    other indicators; save the model when ``artifact_dir`` is set.

    Args:
        cfg: A trial config (validated once: a dict is checked, a TrialConfig trusted); only
            ``dataset`` and ``family`` are required.
        on_epoch: Called after each epoch with ``epoch``, ``accuracy`` (validation so far),
            ``val_loss``, ``train_time_s`` (so far), every indicator that is an objective
            or a constraint, all measured before training (so a multi-fidelity scheduler ranks
            on every objective at every rung), and ``at_chance``: True when a constant guess
            of the most frequent class, at no cost, is at least as good on every objective
            (so no front needs the trial yet). What it raises stops the trial.
        on_state: Called after each epoch, before ``on_epoch``, with a function that writes
            everything that resumes the trial after that epoch into a folder (the file
            :data:`STATE_NAME`: the training state of :func:`objectives.train.fit`, the store
            mapping, the trial config). A checkpoint of Ray Tune is such a folder.
        resume: A folder so written by a run of the same trial config: the model is rebuilt
            with the saved mapping (no ``auto`` pretraining again) and training continues
            after the saved epoch, ending as the uninterrupted run would (bit-identical on
            the CPU); ``on_epoch`` sees the epochs after it.
        warm: A folder so written by a run of the same architecture (dataset, family,
            hyper-parameters, budget): the model starts from its weights (their average,
            with ``train.ema``: the ones it was validated with) and store mapping, and trains
            this config's whole schedule with a fresh optimiser (a warm start, ``search train
            --from-checkpoint``).

    Returns:
        ``accuracy`` (validation: what the search optimises), ``val_loss``, ``test_accuracy``
        and ``test_loss`` only with ``report_test`` (never optimised or chosen on; without it
        the test split is not read), the indicators measured (``indicators``, plus every
        objective and constraint metric; None: the full panel), ``train_time_s``,
        ``train_energy_j``, ``energy_source``, ``train_loss``, ``train_accuracy``, ``epochs``,
        ``plain_params`` (the model before shapeshifting), ``feasible`` (1.0/0.0),
        ``constraint_<i>`` (violation of constraint i: ≤ 0 met), ``cond_*`` conditions,
        ``trial_time_s``, ``trial_energy_j`` (the whole trial's, measurement included),
        ``artifact`` (a path, when saved). An infeasible trial (a violated
        analytic constraint, or a budget below the model's minimum) is not trained: it has
        no accuracy, an ``infeasible_reason``, the metrics known so far, and
        ``constraint_<i>`` only for the constraints that could be evaluated.

    Raises:
        ConfigError: a bad trial config (the message names the key, value and what is allowed).
        NonFiniteLossError: training diverged. Any other error propagates too: the execution
            layer records it as a failed trial.
    """
    cfg = TrialConfig.from_dict(cfg).prepare()
    if cfg.folds > 1 and resume is not None:
        raise ConfigError(
            f"resume: a cross-validated trial (folds: {cfg.folds}) writes no state to resume "
            "from; run it again from the start"
        )
    device = _device(cfg.device)
    saved = None if resume is None else read_state(resume, cfg)
    warmed = None if warm is None else _warm_state(warm, cfg)
    with EnergyMeter(device) as meter:
        metrics = _run(cfg, device, on_epoch, on_state, saved, warmed)
    metrics["trial_energy_j"] = meter.joules  # training and measurement: the search's cost
    return metrics


def _run(
    cfg: TrialConfig,
    device: torch.device,
    on_epoch: EpochFn | None,
    on_state: StateFn | None = None,
    saved: Mapping[str, Any] | None = None,
    warm: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The steps of :func:`run_trial` (``saved``: the state it resumes; ``warm``: the state
    it starts warm from)."""
    start = time.perf_counter()
    constraints = cfg.constraints
    data = trial_data(cfg, str(device))
    metrics: dict[str, Any] = {}
    given = saved or warm
    try:
        net = _model(cfg, data, device, metrics, None if given is None else given["mapping"])
    except BudgetError as err:
        return _finish(metrics, constraints, start, reason=f"budget: {err}")
    if warm is not None:
        net.load_state_dict(trained_weights(warm["fit"]))  # the average, with ema
    names = _indicator_names(cfg.indicators, [o.name for o in cfg.objectives], constraints)
    ranked = _ranked(cfg) if on_epoch is not None else []
    early = [n for n in names if INDICATORS.get(n).analytic or n in ranked]
    metrics.update(_measure(net, data, early, cfg.measure, device))
    reason = breach(constraints, metrics)
    if reason is not None:
        return _finish(metrics, constraints, start, reason=reason)
    null = _null_model(cfg, data) if on_epoch is not None else None
    report = _epoch_report(on_epoch, metrics, ranked, null)
    if cfg.folds > 1:
        result, last = _cross_validated(net, data, cfg, device, report)
    else:
        result = _train(
            net,
            data,
            cfg,
            device,
            cfg.recipe(),
            on_epoch=report,
            on_state=None if on_state is None else _state_writer(on_state, net, cfg),
            resume=None if saved is None else saved["fit"],
        )
        last = result.history[-1]
    metrics.update(
        accuracy=last["val_accuracy"],
        val_loss=last["val_loss"],
        train_loss=last["train_loss"],
        train_accuracy=last["train_accuracy"],
        epochs=result.epochs,
        train_time_s=result.train_time_s,
        train_energy_j=result.energy_j,
    )
    scored = data.val if cfg.folds == 1 else data.with_val_in_train().train  # the folds' pool
    metrics.update(chance_accuracy=chance_accuracy(scored.y), scored_samples=len(scored.y))
    if cfg.folds > 1:
        metrics.update(folds=cfg.folds, accuracy_folds_std=last["val_accuracy_std"])
        metrics.update({k: last[k] for k in ("fit_accuracy", "fit_tries") if k in last})
    if cfg.report_test:  # opted in: a benchmark's per-trial test figures
        test = evaluate(net, data.test)
        metrics.update(test_accuracy=test["accuracy"], test_loss=test["loss"])
    gate_s = metrics.pop("cond_measure_s", 0.0)
    later = _measure(net, data, [n for n in names if n not in early], cfg.measure, device)
    metrics.update(later)
    metrics["cond_measure_s"] = gate_s + later.get("cond_measure_s", 0.0)
    metrics["energy_source"] = result.energy_source  # the training's meter, as documented
    if cfg.artifact_dir is not None:
        metrics["artifact"] = _save(net, cfg)
    return _finish(metrics, constraints, start)


def rebuild(artifact: str | os.PathLike[str] | Mapping[str, Any]) -> nn.Module:
    """The trained model of a trial, from its ``model.pt`` (a path, its folder, or the loaded
    dict): the family rebuilt from the saved trial config, shapeshifted with the saved mapping
    when it had a budget, and the saved weights loaded. Returned on the CPU in eval mode; call
    ``.materialize()`` on a Shapeshifter network for a plain module.

    Raises:
        ConfigError: the saved trial config is not valid (any more).
    """
    blob = artifact if isinstance(artifact, Mapping) else _read(Path(artifact))
    cfg = TrialConfig.from_dict(blob["trial_config"])
    return model_of(cfg, blob["mapping"], blob["state_dict"])


def model_of(
    cfg: TrialConfig, mapping: Mapping[str, int] | None, state_dict: Mapping[str, Any]
) -> nn.Module:
    """The model of a trial config with saved weights (and the saved store mapping of a
    Shapeshifter network), on the CPU in eval mode."""
    info = DATASETS.get(cfg.prepare().dataset)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        model = build_model(cfg.family, info.in_shape, info.num_classes, **cfg.hyper)
    if cfg.budget is not None and mapping is not None:  # no mapping: trained plain
        assignment = {str(k): int(v) for k, v in mapping.items()}
        model = _shapeshift(model, cfg, stores=max(assignment.values()) + 1, mapping=assignment)
    model.load_state_dict(state_dict)
    return model.eval()


# -- steps ------------------------------------------------------------------------------------


def _device(name: str | None) -> torch.device:
    """The trial's device: the config's, else CUDA when torch sees one (under Ray, the GPUs
    the trial was assigned: Ray sets ``CUDA_VISIBLE_DEVICES``), else the CPU."""
    if name is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def trial_data(cfg: TrialConfig, device: str) -> Data:
    """The data a trial trains and is measured on: its dataset (loaded once per process),
    with the validation split in the training split when ``train_on: train+val``."""
    data = _data(cfg.dataset, cfg.data_root, cfg.val_size, cfg.train_size, cfg.seed, device,
                 tuple(sorted(cfg.loading.items())))  # fmt: skip
    return data.with_val_in_train() if cfg.train_on == "train+val" else data


@functools.lru_cache(maxsize=4)
def _data(
    name: str,
    root: str | None,
    val_size: int | float | None,
    train_size: int | None,
    seed: int,
    device: str,
    loading: tuple[tuple[str, Any], ...] = (),
) -> Data:
    """The dataset on ``device``, loaded once per process (trials in one worker reuse it)."""
    return load(
        name,
        root=root,
        val_size=val_size,
        train_size=train_size,
        seed=seed,
        device=device,
        progress=False,
        **dict(loading),
    )


def _model(
    cfg: TrialConfig,
    data: Data,
    device: torch.device,
    metrics: dict,
    mapping: Mapping[str, int] | None = None,
) -> nn.Module:
    """The seeded model on ``device``: the family's, shapeshifted when there is a budget
    (with ``mapping``, a resumed trial's saved one, when given)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        model = build_model(cfg.family, data.in_shape, data.num_classes, **cfg.hyper)
    metrics["plain_params"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if not cfg.shares(metrics["plain_params"]):
        return model.to(device)
    if mapping is not None:
        assignment = {str(k): int(v) for k, v in mapping.items()}
        stores = max(assignment.values()) + 1
        return _shapeshift(model, cfg, stores=stores, mapping=assignment).to(device)
    ssn = cfg.ssn
    pretrain = None
    if ssn["mapping"] == "auto":

        def pretrain(probe: nn.Module) -> None:
            recipe = cfg.recipe(epochs=ssn["pretrain_epochs"], grad_clip=PROBE_CLIP)
            _train(probe, data, cfg, device, recipe)

    net = _shapeshift(model, cfg, pretrain=pretrain)
    return net.to(device)


def _shapeshift(
    model: nn.Module,
    cfg: TrialConfig,
    *,
    pretrain: Callable[[nn.Module], None] | None = None,
    **changes: Any,
) -> nn.Module:
    """``model`` in the trial's budget with its SSN options (searched, or rebuilt as saved:
    ``changes`` give the saved ``stores`` and ``mapping``)."""
    assert cfg.budget is not None  # a trial without a budget trains the plain model
    return shapeshift(model, cfg.budget, pretrain=pretrain, **cfg.ssn_options(**changes))


def _train(
    model: nn.Module,
    data: Data,
    cfg: TrialConfig,
    device: torch.device,
    recipe: Recipe,
    *,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
    on_state: Callable[[dict[str, Any]], None] | None = None,
    resume: Mapping[str, Any] | None = None,
    seed: int | None = None,
) -> FitResult:
    return fit(
        model,
        data,
        recipe,
        seed=cfg.seed if seed is None else seed,
        device=device,
        progress=cfg.progress,
        on_epoch=on_epoch,
        on_state=on_state,
        resume=resume,
    )


def _cross_validated(
    net: nn.Module,
    data: Data,
    cfg: TrialConfig,
    device: torch.device,
    report: Callable[[dict[str, float]], None] | None,
) -> tuple[FitResult, dict[str, float]]:
    """``cfg.folds``-fold cross-validation: ``net`` trained from its first weights once per
    fold (:meth:`Data.fold`), and, when the trial saves its model, once more on every
    training sample (the model saved and measured). The validation figures are pooled over
    the folds, each sample scored once by the model that did not train on it; ``report``
    hears them once, at the end (no fold's epoch is the trial's). Returns the last training's
    result, its times and energy the sum of all, and the figures (``val_accuracy_std``: the
    folds' spread)."""
    first = copy.deepcopy(net.state_dict())
    runs: list[tuple[int, dict[str, float]]] = []
    results: list[FitResult] = []
    for index in range(cfg.folds):
        net.load_state_dict(first)
        fold = data.fold(index, cfg.folds, seed=cfg.seed)
        results.append(_train(net, fold, cfg, device, cfg.recipe()))
        runs.append((len(fold.val), results[-1].history[-1]))
    seen = sum(n for n, _ in runs)
    accuracies = [last["val_accuracy"] for _, last in runs]
    pooled = {
        "val_accuracy": sum(n * last["val_accuracy"] for n, last in runs) / seen,
        "val_loss": sum(n * last["val_loss"] for n, last in runs) / seen,
        "val_accuracy_std": statistics.pstdev(accuracies),
    }
    if cfg.artifact_dir is not None:
        fitted, tries = _fit_all(net, first, data.with_val_in_train(), cfg, device,
                                 pooled["val_accuracy"], results)  # fmt: skip
        pooled |= {"fit_accuracy": fitted, "fit_tries": tries}
    pooled |= {"train_loss": results[-1].history[-1]["train_loss"],
               "train_accuracy": results[-1].history[-1]["train_accuracy"]}  # fmt: skip
    elapsed = sum(r.train_time_s for r in results)
    if report is not None:
        report({"epoch": results[-1].epochs, **pooled, "elapsed_s": elapsed})
    whole = dataclasses.replace(results[-1], train_time_s=elapsed,
                                energy_j=sum(r.energy_j for r in results))  # fmt: skip
    return whole, pooled


def _fit_all(
    net: nn.Module,
    first: Mapping[str, Any],
    pool: Data,
    cfg: TrialConfig,
    device: torch.device,
    expected: float,
    results: list[FitResult],
) -> tuple[float, int]:
    """``net`` trained from ``first`` on every training sample (``pool``), its training
    appended to ``results``. Nothing is held out to check it, so its own samples are: a
    model that fits them worse than the folds' models scored on samples they never saw
    (``expected``) is a failed run (a GunPoint net fitted 77 % of its samples against a 92 %
    cross-validated estimate, and scored 75 % on the test split), and it trains again with
    another shuffle, up to :data:`FIT_TRIES` times; the best fit is kept. Returns its
    accuracy on the pool and the trainings it took."""
    best: tuple[float, dict[str, Any]] | None = None
    for attempt in range(FIT_TRIES):
        net.load_state_dict(first)
        results.append(_train(net, pool, cfg, device, cfg.recipe(), seed=cfg.seed + attempt))
        fitted = float(evaluate(net, pool.train)["accuracy"])
        if best is None or fitted > best[0]:
            best = (fitted, copy.deepcopy(net.state_dict()))
        if fitted >= expected:
            break
    assert best is not None  # FIT_TRIES >= 1
    net.load_state_dict(best[1])
    return best[0], attempt + 1


def _state_writer(
    on_state: StateFn, net: nn.Module, cfg: TrialConfig
) -> Callable[[dict[str, Any]], None]:
    """``fit``'s ``on_state``, handing ``on_state`` a writer of the trial's whole state."""
    mapping = getattr(net, "mapping", None)

    def hand_out(fit_state: dict[str, Any]) -> None:
        state = {"format": STATE_FORMAT, "trial_config": cfg.to_dict(), "mapping": mapping,
                 "epoch": fit_state["epoch"], "fit": fit_state}  # fmt: skip

        def write(folder: str | os.PathLike[str]) -> None:
            torch.save(state, Path(folder) / STATE_NAME)

        on_state(write)

    return hand_out


def read_state(folder: str | os.PathLike[str], cfg: TrialConfig | None = None) -> dict[str, Any]:
    """A trial's state from a checkpoint folder (``on_state``'s file), loaded with
    ``weights_only=True``; with ``cfg``, checked to be that trial config's.

    Raises:
        ExportError: no state file there, or one that cannot be read (see
            :func:`read_weights`).
        ConfigError: the state is of another trial config.
    """
    state = read_weights(Path(folder) / STATE_NAME)
    if state.get("format") != STATE_FORMAT:
        raise ExportError(f"{str(folder)!r} holds no trial state of format {STATE_FORMAT!r}")
    if cfg is not None and state["trial_config"] != cfg.to_dict():
        differ = sorted(k for k, v in cfg.to_dict().items() if state["trial_config"].get(k) != v)
        raise ConfigError(
            f"resume: the checkpoint in {str(folder)!r} is of another trial config "
            f"(differs in {differ})"
        )
    return state


#: The trial-config keys that fix which weights a model has: a warm start must share them
#: with the run that wrote its state.
ARCHITECTURE = ("dataset", "family", "hyper", "budget")


def _warm_state(folder: str | os.PathLike[str], cfg: TrialConfig) -> dict[str, Any]:
    """A state to start warm from (:func:`run_trial`'s ``warm``), of ``cfg``'s architecture.

    Raises:
        ExportError: no readable state in ``folder``.
        ConfigError: the state is of another architecture.
    """
    state = read_state(folder)
    theirs, ours = state["trial_config"], cfg.to_dict()
    differ = [k for k in ARCHITECTURE if theirs.get(k) != ours.get(k)]
    if differ:
        raise ConfigError(
            f"warm start: the checkpoint in {str(folder)!r} is of another architecture "
            f"(differs in {differ})"
        )
    return state


def _ranked(cfg: TrialConfig) -> list[str]:
    """The indicators a rung ranks on: every objective and constraint that is one."""
    wanted = [*(o.name for o in cfg.objectives), *(c.indicator for c in cfg.constraints)]
    return [n for n in dict.fromkeys(wanted) if n in INDICATORS]


def _null_model(cfg: TrialConfig, data: Data) -> dict[str, tuple[str, float]] | None:
    """The objectives of the null model, a constant guess of the validation split's most
    frequent class at no cost: direction and value per objective (accuracy: that class's
    share; a cost indicator: 0, a throughput: infinity). None when an objective has no such
    value (a loss, a test metric) or accuracy is none, so no trial is judged against it."""
    if "accuracy" not in (o.name for o in cfg.objectives):
        return None  # costs alone: nothing would beat doing nothing
    null = {}
    for o in cfg.objectives:
        if o.name == "accuracy":
            value = chance_accuracy(data.val.y)
        elif o.name in INDICATORS:
            value = 0.0 if INDICATORS.get(o.name).direction == "minimize" else float("inf")
        else:
            return None
        null[o.name] = (o.direction, value)
    return null


def chance_accuracy(labels: torch.Tensor) -> float:
    """The accuracy of a constant guess of the most frequent of ``labels``: what a model must
    beat to have learned anything."""
    return torch.bincount(labels).max().item() / len(labels)


def _at_chance(point: Mapping[str, Any], null: Mapping[str, tuple[str, float]] | None) -> bool:
    """Whether the null model is at least as good as ``point`` on every objective: then no
    front needs the trial (a multi-fidelity scheduler stops it)."""
    if not null or any(not isinstance(point.get(name), int | float) for name in null):
        return False
    return all(
        value >= point[name] if direction == "maximize" else value <= point[name]
        for name, (direction, value) in null.items()
    )


def _epoch_report(
    on_epoch: EpochFn | None,
    metrics: Mapping[str, Any],
    ranked: list[str],
    null: Mapping[str, tuple[str, float]] | None,
) -> Callable[[dict[str, float]], None] | None:
    """``fit``'s epoch callback, passing each epoch on as a learning-curve point, with
    ``at_chance`` when the null model (:func:`_null_model`) is as good on every objective."""
    if on_epoch is None:
        return None
    known = {n: _python_scalar(metrics[n]) for n in ranked if n in metrics}

    def report(record: dict[str, float]) -> None:
        point = {
            "epoch": int(record["epoch"]),
            "accuracy": record["val_accuracy"],
            "val_loss": record["val_loss"],
            "train_time_s": record["elapsed_s"],
            **known,
        }
        on_epoch({**point, "at_chance": _at_chance(point, null)})

    return report


def _indicator_names(
    requested: tuple[str, ...] | None,
    objectives: list[str],
    constraints: tuple[Constraint, ...],
) -> list[str]:
    """The indicators to measure: those requested (None: all), plus every objective and
    constraint that is one."""
    wanted = INDICATORS.names() if requested is None else list(requested)
    needed = [*objectives, *(c.indicator for c in constraints)]
    return list(dict.fromkeys([*wanted, *(n for n in needed if n in INDICATORS)]))


def _measure(
    net: nn.Module,
    data: Data,
    names: list[str],
    options: dict[str, Any],
    device: torch.device,
) -> dict[str, Any]:
    """The indicators on one training sample (an indicator taking ``data`` gets ``data``)."""
    if not names:
        return {}
    with measuring_data(data):
        return measure(net, data.train.example(1), names, device=device, **options)


def _finish(
    metrics: dict[str, Any],
    constraints: tuple[Constraint, ...],
    start: float,
    *,
    reason: str | None = None,
) -> dict[str, Any]:
    """Adds feasibility and the constraint violations that can be evaluated (as the screen
    does for a proposal it refuses: :func:`search.config.verdict`)."""
    verdict(metrics, constraints, reason)
    metrics["trial_time_s"] = time.perf_counter() - start
    return {k: _python_scalar(v) for k, v in metrics.items()}


def _python_scalar(value: Any) -> Any:
    """Python scalars only (torch/numpy scalars would not serialise)."""
    if hasattr(value, "item") and not isinstance(value, str):
        return value.item()
    return value


def _save(net: nn.Module, cfg: TrialConfig) -> str:
    assert cfg.artifact_dir is not None  # run_trial saves only into a given folder
    folder = Path(cfg.artifact_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ARTIFACT_NAME
    blob = {
        "state_dict": {k: v.detach().cpu() for k, v in net.state_dict().items()},
        "mapping": getattr(net, "mapping", None),
        "trial_config": cfg.to_dict(),
    }
    # serialised in memory first: torch's own writer turns a full disk into a RuntimeError,
    # Python's into the OSError that says so; written whole or not at all
    buffer = io.BytesIO()
    torch.save(blob, buffer)
    write_atomic(path, lambda tmp: tmp.write_bytes(buffer.getbuffer()))
    return str(path)


def _read(path: Path) -> dict[str, Any]:
    if path.is_dir():
        path = path / ARTIFACT_NAME
    return read_weights(path)


def read_weights(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A saved model file, loaded with ``weights_only=True`` (no code runs from it).

    Raises:
        ExportError: the file is missing, truncated, empty, not a torch file, or holds
            anything but tensors and plain data; torch's advice to load it unsafely is never
            passed on (the file is untrusted).
    """
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise ExportError(f"{str(path)!r} does not exist") from None
    except Exception as err:  # torch raises many kinds for a bad file
        raise ExportError(
            f"{str(path)!r} cannot be read as a model file ({type(err).__name__}): it is "
            "truncated, empty, not a torch file, or holds objects other than weights"
        ) from None
    if not isinstance(blob, dict):
        raise ExportError(f"{str(path)!r} holds a {type(blob).__name__}, not a saved model")
    return blob
