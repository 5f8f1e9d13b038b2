"""The screen: what :func:`search.trial.run_trial` would refuse before training, told without
running it, so a search trains what it proposes.

``run_trial`` refuses a trial untrained when Shapeshifting cannot meet its budget (``budget:
...``) or when an analytic indicator violates a constraint (``violates params <= 1000``).
Both are known from shapes: the trial's model is built on the meta device
(:mod:`search.screening._meta`), the budget planned without building the network, and the
counted indicators (``params``, ``weights``, ``flops_infer``) counted there. The shape is a
built-in dataset's declared one, or a user's dataset's read from its data (declared in the
config or registered by an import: the launch has read them already, to check them). The
screen returns the metrics that refused trial records (its ``plain_params``, the counted
indicators, the reason with ``run_trial``'s text, ``constraint_<i>`` and ``feasible`` written
by the same :func:`~search.screening._verdict.verdict`), or None.

It never refuses a trial ``run_trial`` would train: it returns None whenever it cannot be
sure (a dataset not registered in this process or whose data cannot be read, a model that
fails on the meta device, a constraint on an indicator other than those counted, ``mapping:
auto``, whose stores a trained probe assigns). A Shapeshifted trial's ``params`` are its
network's as planned (90-100 % of its budget, as ``run_trial`` measures them), not the
budget, and its ``weights`` and ``flops_infer`` are its plain model's: ``run_trial`` measures
them on the materialised network, the same model.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from objectives import INDICATORS
from objectives.datasets import DATASETS, DatasetInfo
from search.config import TrialConfig
from search.screening._meta import Shape, meta_counts, meta_model, planned_params, trainable
from search.screening._verdict import breach, verdict
from spaces import BudgetError

__all__ = ["COUNTED", "Screen", "screen"]

#: The indicators the screen counts exactly on the meta device.
COUNTED = ("params", "weights", "flops_infer")


def screen(cfg: TrialConfig, models: dict[str, nn.Module] | None = None) -> dict[str, Any] | None:
    """The metrics ``run_trial`` would record refusing ``cfg`` before training; None when it
    would not refuse it, or the screen cannot be sure (see the module's docstring).

    Args:
        cfg: The trial config.
        models: A cache of meta-device models by family and hyper-parameters (a searcher
            keeps one: proposals often share a model).
    """
    info = _shape_known(cfg)
    bounded = [c.indicator for c in cfg.constraints if c.indicator in INDICATORS]
    budget = cfg.budget
    if info is None or (budget is not None and cfg.ssn.get("mapping") in ("auto", "none", None)):
        return None
    models = {} if models is None else models
    try:
        model = meta_model(cfg, info, models)
        metrics: dict[str, Any] = {"plain_params": trainable(model)}
        if budget is not None:
            try:
                params = planned_params(cfg, info, models)
            except BudgetError as err:
                return verdict(metrics, cfg.constraints, f"budget: {err}")
        if not bounded or any(name not in COUNTED for name in bounded):
            return None  # nothing to violate, or what run_trial measures is not all counted
        wanted = {*bounded, *(o.name for o in cfg.objectives if o.name in COUNTED)}
        metrics.update(_counted(model, info, wanted))
        if budget is not None:
            metrics["params"] = params
        reason = breach(cfg.constraints, metrics)
    except Exception:  # such a trial fails, or trains, on its own: run_trial says which
        return None
    return None if reason is None else verdict(metrics, cfg.constraints, reason)


class Screen:
    """:func:`screen` with its own cache of meta-device models (a searcher holds one; Ray
    Tune pickles the searcher, and the cache is left out)."""

    def __init__(self) -> None:
        self.models: dict[str, nn.Module] = {}

    def __call__(self, cfg: TrialConfig) -> dict[str, Any] | None:
        return screen(cfg, self.models)

    def __getstate__(self) -> dict[str, Any]:
        return {"models": {}}


def _shape_known(cfg: TrialConfig) -> Shape | None:
    """The dataset of ``cfg`` as registered in this process: a built-in, whose shape is
    declared, or a user's (declared in the config, or registered by an import), whose shape
    is read from its data; None when it is not registered here or cannot be read."""
    if cfg.dataset not in DATASETS:
        return None
    info = DATASETS.get(cfg.dataset)
    if isinstance(info, DatasetInfo):
        return info
    try:  # the launch read the data already (check_user_code): their splits are cached
        info.in_shape, info.num_classes  # noqa: B018 (reads and checks them)
    except Exception:  # unreadable data: every trial fails on its own, with the reason
        return None
    return info


def _counted(model: nn.Module, info: Shape, wanted: set[str]) -> dict[str, Any]:
    """The counted indicators in ``wanted``, as ``measure`` reports them (FLOPs per sample
    as a float: a total divided by the batch)."""
    if not wanted & {"weights", "flops_infer"}:
        return {"params": trainable(model)}
    # FLOPs load torch._dynamo: counted only when asked
    counts: dict[str, Any] = meta_counts(model, info, flops="flops_infer" in wanted)
    if "flops_infer" in counts:
        counts["flops_infer"] = float(counts["flops_infer"])
    return {k: v for k, v in counts.items() if k == "params" or k in wanted}
