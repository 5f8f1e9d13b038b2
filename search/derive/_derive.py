"""A data-only config made whole: every key a search needs, derived from the data and the
constraints by fixed rules (no training, no timing), each value with the rule that set it.

The rules, in order (``docs/guides/unaided.md`` states them for users):

- families: the built-in families of the data's layout (:data:`LAYOUT_FAMILIES`) whose
  shallowest, narrowest model fits the reach (:data:`SHARE_REACH` × the parameter limit);
- depths: each family's range, its top lowered until a model twice the narrowest width fits
  the reach;
- widths: for each family, the widest first width whose plain model at the deepest depth fits
  the reach, and a third of it (at least the family's narrowest) as the low end, on a log scale;
- validation: at least 50 samples (or 30 % of the training split); under
  :data:`FOLDS_BELOW`, with trials cheap enough to run to their end, 5-fold cross-validation;
- Shapeshifting: with a params limit, models up to 4× the limit and a budget from a quarter
  of the limit to the limit: a model within its budget trains plain, a larger one shares one
  store (``single``, the wavg generator) within it; no limit, plain only;
- recipe: SGD-Nesterov with one-cycle, each family's learning-rate range, weight decay
  1e-5..1e-3, no label smoothing; batch the largest power of two up to a sixteenth of the
  training samples (16..128); epochs per trial the largest rung (3, 9, 27, 81, 243) that one
  trial (every fit of it) trains within a tenth of the time limit (a minute without one), at
  a stated rate of 3 ms an optimiser step, and each sample's forward multiply-adds (the
  costliest family's plain net within the limit) at 1.5 G a second;
- augmentation: the dataset's own, searched on and off, for images and signals; a declared
  image dataset without one gets pad-crop of 1/14 of its shorter side, a declared signal
  dataset a shift in time of 1/10 of its length (both at least 1); tables none;
- start: the layout's learned points (``search.derive._learned``: configurations good across
  other datasets of the layout: signals only), then each family's plain net at the
  limit (``search.derive._start``), trained first when there are two or more (a portfolio to
  seed; one family's one net alone starts from TPE's own);
- search: TPE and stopping-type MOASHA (first rung 1/27 of the epochs, η 3), as the presets,
  or FIFO for short or cross-validated trials; trials as many as the time could end;
  finalists (top 3, 3 seeds, a fifth of the time) and the refit.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import functools
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from search.config import FASTEST_TRIAL_S, LimitsConfig, parse_constraints
from search.derive._data import DataFacts, read_facts
from search.derive._families import FamilySpec, families_of
from search.derive._learned import learned_points
from search.derive._start import start_points
from search.schedulers import GRACE_EPOCHS, REDUCTION_FACTOR, milestones
from spaces import ConfigError

__all__ = ["Derivation", "Derived", "derive", "derive_from"]

#: The epoch rule's rate: an epoch costs each optimiser step :data:`STEP_S` whatever its
#: batch holds (the framework's per-step work: a tiny net's step is mostly that), and each
#: sample its forward multiply-adds at :data:`TRAIN_MACS_PER_SECOND` (forward, backward and
#: update of one CPU thread, trials side by side). Fitted (least squares on the log, each study
#: weighing the same) to 1,389 recorded trials of five development studies
#: (benchmarks/results/epoch_rate.md: the unseen-data probes and a 20,000-row table; no
#: protocol set), and checked on two MNIST studies not fitted: it prices their trials' epochs
#: at 0.77 and 1.35 of what they took, where the rule before (0.2 ms a sample at 5,000
#: parameters plus the same MACs rate) priced 2.2 and 2.5 times, and 13.5 times on the table.
STEP_S = 0.003
TRAIN_MACS_PER_SECOND = 1.5e9
#: Start points are derived only when this many families have one (a portfolio to seed).
PORTFOLIO = 2
#: The widest first width the price's reference net is looked for in.
MAX_REFERENCE_WIDTH = 4096
#: Seconds an epoch costs whatever its size: the validation pass, the report to the scheduler
#: and the checkpoint (a 35-sample GunPoint epoch took 0.07-0.13 s in a search on two loaded
#: cores, where the rate above gives 0.007 s).
EPOCH_OVERHEAD_S = 0.05
#: One fully trained trial may take this share of the time limit (not of the CPUs: the space
#: and the recipe do not depend on the machine, so a relaunch elsewhere resumes the search).
FULL_TRIAL_SHARE = 10
#: A fully trained trial's seconds without a time limit.
UNTIMED_TRIAL_S = 60.0
#: Seconds a trial costs besides its epochs (start, measurement).
TRIAL_OVERHEAD_S = 3.0
#: The rungs a trial's epochs are chosen from (MOASHA's, grace 1, η 3).
RUNGS = (3, 9, 27, 81, 243)
#: A derived trial's first rung is this fraction of its epochs (at least GRACE_EPOCHS): the
#: scheduler lab measured MOASHA on 27-epoch curves with rungs at 1, 3 and 9, and one-cycle's
#: warm-up is a quarter of any schedule, so a 243-epoch trial judged at its first epoch is
#: judged on 1/60 of its warm-up (a 10-minute search of 400 signals of 3x2000 stopped 187 of
#: its 293 trials at epoch 1 of 81, and its first finished trial was its 48th:
#: docs/guides/unaided.md).
FIRST_RUNG_SHARE = 27
#: The derived MOASHA's rungs: audited, pooled over the rungs, under the promotion type, so
#: that a refutation resumes what the rungs paused (the seventh design's rule, seeds 250-299:
#: docs/guides/replay.md).
AUDITED_RUNGS = {"trust_rungs": True, "trust_by": "pooled"}
#: Early stopping saves training time; below this many seconds of training a whole trial
#: (ten trial starts) there is nothing worth saving, and MOASHA's first rungs, in one-cycle's
#: warm-up, would judge nets on a few steps: FIFO then.
STOPPING_PAYS_S = 10 * TRIAL_OVERHEAD_S
#: The indicators every derived search measures: the cheap ones, as the presets.
INDICATORS = ["params", "weights", "flops_infer", "activations", "latency_ms"]
MEASURE = {"threads": 1, "latency_budget_s": 0.2, "latency_max_repeats": 50}
#: The fewest validation samples a derived search ranks trials on (one sample is 2 points of
#: accuracy at 50), and the largest share of the training split carved for them.
MIN_VALIDATION = 50
MAX_VALIDATION_SHARE = 0.3
#: Cross-validation (``folds``): below this many validation samples one split ranks trials
#: by chance (at 90 % accuracy its standard error is 2.1 points at 200, more than the gap
#: between a search's best trials), so a search whose trials are cheap (no early stopping)
#: scores each on :data:`FOLDS` folds of every training sample, as AutoGluon and
#: auto-sklearn do for small data.
FOLDS_BELOW = 200
FOLDS = 5
#: Seconds an epoch of a cross-validated fit costs besides its samples: its validation pass
#: only (no report to the scheduler, no checkpoint; GunPoint's 81-epoch fits took 3 ms an
#: epoch each on two loaded cores).
FOLD_EPOCH_OVERHEAD_S = 0.005
#: How far past the params limit a model of the space may reach (its plain count): a model
#: over its budget is Shapeshifted into it, so the search can weigh a wider net sharing its
#: weights against a narrower plain one, which is what Shapeshifting is for.
SHARE_REACH = 4
#: A Shapeshifted model's budget, as shares of the params limit.
BUDGET_SHARE = (0.25, 1.0)


@dataclass(frozen=True)
class Derived:
    """One derived value: its config key, the value, and the rule that set it."""

    key: str
    value: Any
    because: str

    def line(self) -> str:
        return f"{self.key}: {_shown(self.value)}  because {self.because}"


@dataclass
class Derivation:
    """A data-only config made whole.

    Attributes:
        config: The plain data of the whole config (what ``SearchConfig.from_dict`` takes).
        values: Every derived value with its rule, in config order (overridden ones left out).
        given: The keys the user wrote that replaced a derived value.
        facts: The data as read.
    """

    config: dict[str, Any]
    values: list[Derived] = field(default_factory=list)
    given: list[str] = field(default_factory=list)
    facts: DataFacts | None = None

    def lines(self) -> list[str]:
        """What ``search check`` prints: one line per derived value, then the user's."""
        out = [f"Derived from the data and the constraints ({len(self.values)} values):"]
        out += [f"  {d.line()}" for d in self.values]
        out += [f"  {key}: yours, kept over the derived value" for key in self.given]
        return out


def derive(data: Mapping[str, Any], *, base: str | None = None) -> Derivation:
    """The whole config of a data-only one (no ``space``), each derived value with its rule;
    what the user wrote wins over what is derived.

    Args:
        data: The config's plain data (a parsed YAML file).
        base: The folder a declared dataset's relative paths are taken from.

    Raises:
        ConfigError: no time limit or trial count, or data the derivation cannot read.
    """
    from search._usercode import import_modules, normalise_imports

    if "space" in data:
        raise ConfigError("space: given; a derivation completes configs without one")
    data = dict(data)
    limits = data.get("limits") or {}
    if isinstance(limits, Mapping) and "trials" in limits:  # limits.trials: the search's trials
        limits = {k: v for k, v in limits.items() if k != "trials"}
        data["trials"], data["limits"] = data["limits"]["trials"], limits
    time_s = LimitsConfig.from_dict(limits).time
    if time_s is None and "trials" not in data:
        raise ConfigError(
            "limits: a data-only config needs limits.time (e.g. 30m) or limits.trials; got neither"
        )
    if "dataset" not in data:
        raise ConfigError("dataset: missing; it is required (a name or a declaration)")
    import_modules(normalise_imports(data.get("imports"), base=base))
    return derive_from(read_facts(data, base=base), data)


def derive_from(facts: DataFacts, data: Mapping[str, Any]) -> Derivation:
    """:func:`derive` from data facts already read (``data``'s ``limits.trials`` moved to
    ``trials``)."""
    time_s = LimitsConfig.from_dict(data.get("limits") or {}).time
    limit = _params_limit(data.get("constraints"))
    out: list[Derived] = []
    derived: dict[str, Any] = {"dataset": facts.declaration}
    held = min(MIN_VALIDATION, round(MAX_VALIDATION_SHARE * facts.total))
    # Stratified: a sample of each class held out, and one of each left to train on.
    held = min(max(held, facts.classes), facts.total - facts.classes)
    if "val_size" not in data and held > facts.held:
        derived["val_size"] = held
        share = f"{MAX_VALIDATION_SHARE:.0%}"
        out.append(Derived("val_size", held, f"the dataset's default held {facts.held} of "
                           f"{facts.total:,} training samples: {MIN_VALIDATION} or {share} of "
                           "them, the fewer, rank trials less by chance, and at least one of "
                           f"each of the {facts.classes} classes"))  # fmt: skip
        kept = max(1, facts.train - (held - facts.held))
        facts = dataclasses.replace(facts, held=held, train=kept)
    if facts.size is not None:
        out.append(Derived("dataset.size", facts.size, facts.size_why))
    if facts.augment is not None and facts.declaration != data.get("dataset"):
        out.append(Derived("dataset.augment", facts.augment, facts.augment_why))
    space, fixed = _space(facts, limit, out)
    batch = _batch_of(facts, data)
    folds = _folds(facts, limit, time_s, batch, data, out)
    train, space_train = _recipe(facts, limit, time_s, folds, batch, out)
    space.update(space_train)
    derived.update(space=space, fixed=fixed, train=train)
    derived.update(_start(facts, limit, space, out))
    if folds > 1:
        derived["folds"] = folds
    user_train = data.get("train")
    given = user_train.get("epochs") if isinstance(user_train, Mapping) else None
    epochs = given if isinstance(given, int) and given > 0 else train["epochs"]
    derived.update(_search(facts, limit, time_s, data.get("trials"), epochs, folds, batch, out))
    return _merged(data, derived, out, facts)


def _params_limit(constraints: Any) -> int | None:
    """The tightest ``params <= N`` (or ``< N``) of the constraints; None without one."""
    bounds = [
        int(c.value) - (1 if c.op == "<" and float(c.value).is_integer() else 0)
        for c in parse_constraints(constraints)
        if c.indicator == "params" and c.op in ("<=", "<")
    ]
    return min(bounds) if bounds else None


# -- the space -------------------------------------------------------------------------------


def _space(facts: DataFacts, limit: int | None, out: list[Derived]
           ) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """Families, their depths and widths, and Shapeshifting."""
    target = SHARE_REACH * limit if limit is not None else _free_params(facts)
    why_target = (f"{SHARE_REACH} × the params limit {limit:,} (a model over its budget is "
                  "Shapeshifted into it)" if limit is not None else
                  f"no params limit: sized for {target:,} parameters (10 per training sample, "
                  "20,000..500,000)")  # fmt: skip
    space: dict[str, Any] = {}
    fixed: dict[str, Any] = {}
    chosen: list[str] = []
    for spec in families_of(facts.layout):
        fitted = _widths(spec, facts, target)
        if fitted is None:
            out.append(Derived(f"family {spec.name}", "left out",
                               f"its shallowest, narrowest model ({spec.min_width} wide) has "
                               f"more parameters than {why_target}"))  # fmt: skip
            continue
        chosen.append(spec.name)
        key, low, _ = spec.depth
        high, widths = fitted
        space[f"{spec.name}.{key}"] = {"low": low, "high": high, "step": spec.depth_step}
        space[f"{spec.name}.{spec.width}"] = {"low": widths[0], "high": widths[1], "log": True}
        for name, choices in spec.searched.items():
            space[f"{spec.name}.{name}"] = {"choices": list(choices)}
        for name, value in spec.fixed.items():
            fixed[f"{spec.name}.{name}"] = value
        space[f"{spec.name}.train.lr"] = {"low": spec.lr[0], "high": spec.lr[1], "log": True}
        out.append(
            Derived(
                f"{spec.name}.{key}",
                [low, high],
                f"{spec.name}'s depths ({spec.why}), the deepest whose model "
                f"{2 * spec.min_width} wide fits {why_target}",
            )
        )
        out.append(Derived(
            f"{spec.name}.{spec.width}", list(widths),
            f"the widest whose plain model at the deepest depth fits {why_target}, and a third "
            f"of it (at least {spec.min_width})",
        ))  # fmt: skip
        if spec.searched or spec.fixed:
            out.append(
                Derived(
                    f"{spec.name} levers",
                    {**spec.fixed, **{k: list(v) for k, v in spec.searched.items()}},
                    "fixed at what trains tiny nets well; the choices searched",
                )
            )
        out.append(
            Derived(
                f"{spec.name}.train.lr",
                list(spec.lr),
                "the family's range of "
                "SGD peak rates (nets with batch norm take high ones, an MLP lower)",
            )
        )
    if not chosen:
        every = [spec.name for spec in families_of(facts.layout)]
        raise ConfigError(
            f"constraints: no built-in {facts.layout} family ({every}) has a model within "
            f"{why_target} for samples of shape {facts.in_shape} and {facts.classes} classes; "
            "allowed: a larger params limit, or a space of your own"
        )
    family = {"choices": chosen} if len(chosen) > 1 else {"value": chosen[0]}
    space = {"family": family, **space}
    out.insert(0, Derived("family", chosen, f"the built-in {facts.layout} families that fit"))
    if limit is None:
        fixed["ssn.mapping"] = "none"
        out.append(Derived("ssn.mapping", "none", "no params limit: no sharing to meet one"))
        return space, fixed
    low, high = max(1, round(limit * BUDGET_SHARE[0])), max(1, round(limit * BUDGET_SHARE[1]))
    space["budget"] = {"low": low, "high": high, "log": True}
    fixed.update({"ssn.mapping": "single", "ssn.generator": "wavg", "ssn.upsampler": "inter",
                  "ssn.templates": 4})  # fmt: skip
    out += [
        Derived("budget", [low, limit], "the parameters a model may have, everything counted: "
                "a quarter of the params limit up to it; a model within its budget trains "
                f"plain, a larger one (up to {SHARE_REACH}× the limit) is Shapeshifted into it"),
        Derived("ssn.mapping", "single", "one store shared by every layer, for the models over "
                "their budget: on MNIST a net sharing one store beat the same net narrowed to its "
                "count by 1.55 points at 758 parameters and 2.78 at 316 "
                "(benchmarks/results/leaderboard.md)"),
        Derived("ssn.generator", "wavg", "emb's per-layer embeddings cost more than a tiny "
                "net's budget spares (searched with wavg, the screen refused 14 of 200 random "
                "proposals on digits at params <= 500, 5 with wavg alone)"),
        Derived("ssn.upsampler, ssn.templates", ["inter", 4], "the leaderboard's Shapeshifted "
                "winners' upsampler; mask's per-layer masks raise a net's minimum budget 4-5× "
                "(an MLP of 6,730 weights: 598 against 131), and with mask a quarter of a 1,000 "
                "limit was unmet for 1 in 5 random proposals of a table's space"),
    ]  # fmt: skip
    return space, fixed


def _free_params(facts: DataFacts) -> int:
    return int(min(500_000, max(20_000, 10 * facts.train)))


def _cap(facts: DataFacts, limit: int | None) -> int:
    """The parameters a plain net may have: the limit, or without one a size from the data."""
    return limit if limit is not None else _free_params(facts)


def _widths(spec: FamilySpec, facts: DataFacts, target: int
            ) -> tuple[int, tuple[int, int]] | None:  # fmt: skip
    """The family's deepest depth and width range: the deepest of its range whose plain model
    fits ``target`` at twice ``min_width`` (the shallowest: at ``min_width``); at it, the widest
    width whose plain model fits, and a third of that (at least ``min_width``). None when no
    depth fits."""
    _, low, high = spec.depth
    for deepest in range(high, low - 1, -spec.depth_step):
        count = lambda w: spec.params(deepest, w, facts.in_shape, facts.classes)  # noqa: B023, E731
        if count(spec.min_width) > target:
            continue
        top = spec.min_width
        while top < 4096 and count(top + 1) <= target:
            top += 1
        if top < 2 * spec.min_width and deepest > low:
            continue  # too narrow to search widths: one depth less
        return deepest, (max(spec.min_width, math.ceil(top / 3)), top)
    return None


def _start(facts: DataFacts, limit: int | None, space: Mapping[str, Any],
           out: list[Derived]) -> dict[str, Any]:  # fmt: skip
    """The start points: the layout's learned points (``search.derive._learned``), then each
    family's plain net at the limit (``search.derive._start``), when two or more."""
    cap = _cap(facts, limit)
    learned = learned_points(facts.layout, space)
    plain = start_points(_families_in(facts, space), space, cap, facts.in_shape, facts.classes)
    points = [*learned, *(p for _, p in plain if p not in learned)]
    if len(points) < PORTFOLIO:
        out.append(_no_start(cap))
        return {}
    if learned:
        out.append(Derived("start (learned)", "; ".join(_brief(p) for p in learned),
                           f"trained first: the {facts.layout} layout's {len(learned)} learned "
                           "points (configurations good across other datasets of the layout: "
                           f"benchmarks/portfolio.py --layout {facts.layout}) mapped into this "
                           "space's ranges"))  # fmt: skip
    if plain:
        shown = "; ".join(f"{spec.name} {spec.depth[0]} {p[f'{spec.name}.{spec.depth[0]}']} "
                          f"{spec.width} {p[f'{spec.name}.{spec.width}']}"
                          for spec, p in plain)  # fmt: skip
        out.append(Derived("start", shown, f"trained {'next' if learned else 'first'}: each "
                           f"family's plain net within {cap:,} parameters (its budget the "
                           "limit), at its deepest depth that is still twice its "
                           "narrowest width and the widest width there, levers at their first "
                           "choice, the middle of the learning-rate and weight-decay ranges, "
                           "augmentation on (the net a careful user tries first), so that TPE's "
                           "random start-up misses no family"))  # fmt: skip
    return {"start": points}


def _brief(point: Mapping[str, Any]) -> str:
    """A start point's family and its depth and width keys, for the derived line."""
    return " ".join(f"{k.split('.')[-1]} {v}" if "." in k else str(v) for k, v in point.items()
                    if k == "family" or k.split(".")[-1] in ("depth", "stages", "width"))


def _no_start(cap: int | None) -> Derived:
    """Why a search of one family has no derived start point."""
    within = f" within {cap:,} parameters" if cap is not None else ""
    return Derived("start", "none", f"fewer than two families have a plain net{within}: start "
                   "points seed a portfolio of families, and one family is explored from TPE's "
                   "random start-up (a plain net at the limit trained first pulls its model "
                   "there)")  # fmt: skip


def _families_in(facts: DataFacts, space: Mapping[str, Any]) -> list[FamilySpec]:
    """The families of the layout the derived space searches."""
    return [s for s in families_of(facts.layout) if f"{s.name}.{s.depth[0]}" in space]


# -- the recipe ------------------------------------------------------------------------------


def _recipe(facts: DataFacts, limit: int | None, time_s: float | None, folds: int, batch: int,
            out: list[Derived]) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """The ``train`` section and the training options searched; ``batch`` is the one the
    trials train with (the user's, or the derived one), which the epochs are priced at."""
    epochs, where = _epochs(facts, limit, time_s, folds, batch)
    derived_batch = _batch(facts)
    fits = "" if folds == 1 else f" ({_fits(folds)} fits a trial: {folds} folds and one on all)"
    epoch_s = _epoch_seconds(facts, limit, batch, folds)
    overhead = EPOCH_OVERHEAD_S if folds == 1 else FOLD_EPOCH_OVERHEAD_S
    train = {"epochs": epochs, "batch_size": derived_batch, "optimizer": "sgd",
             "schedule": "onecycle", "label_smoothing": 0.0}  # fmt: skip
    space: dict[str, Any] = {"train.weight_decay": {"low": 1e-5, "high": 1e-3, "log": True}}
    out += [
        Derived("train.optimizer, train.schedule", ["sgd", "onecycle"],
                "SGD-Nesterov with one-cycle trains every built-in family (presets)"),
        Derived("train.weight_decay", [1e-5, 1e-3], "log range: tiny nets underfit more "
                "than they overfit"),
        Derived("train.label_smoothing", 0.0, "tiny nets cannot spare the accuracy"),
        Derived("train.batch_size", derived_batch, f"the largest power of two up to a "
                f"sixteenth of the {facts.train:,} training samples, 16..128"),
        Derived("train.epochs", epochs, f"the longest rung {list(RUNGS)} whose training fits "
                f"{where}{fits}, at {epoch_s:.3f} s an epoch (the rule's {STEP_S * 1e3:g} ms a "
                f"step of {batch}, {_macs(facts, _cap(facts, limit)):,} multiply-adds a "
                f"sample at {TRAIN_MACS_PER_SECOND / 1e9:g} G/s, and {overhead:g} s an epoch "
                "besides)"),
    ]  # fmt: skip
    if facts.layout in ("image", "signal") and facts.augment is not None:
        space["train.augment"] = {"choices": [False, True]}
        out.append(Derived("train.augment", [False, True],
                           f"label-preserving {_shown(facts.augment)} ({facts.augment_why}), "
                           "searched on and off"))  # fmt: skip
    else:
        train["augment"] = False
        why = {
            "signal": "the dataset has none (a declared dataset may give augment: {shift: N})",
            "table": "a table's features have no label-preserving transform",
            "image": "the dataset has none (a declared dataset may give augment: {pad: N})",
        }
        out.append(Derived("train.augment", False, why[facts.layout]))
    return train, space


def _epochs(facts: DataFacts, limit: int | None, time_s: float | None, folds: int, batch: int
            ) -> tuple[int, str]:  # fmt: skip
    """The longest rung whose whole trial (every fit of it) trains within its share of the
    time, and that share in words."""
    if time_s is None:
        allowed, where = UNTIMED_TRIAL_S, f"{UNTIMED_TRIAL_S:.0f} s (no time limit)"
    else:
        allowed = time_s / FULL_TRIAL_SHARE
        where = f"1/{FULL_TRIAL_SHARE} of the time limit ({time_s:,.0f} s)"
    epoch_s = _epoch_seconds(facts, limit, batch, folds) * _fits(folds)
    fitting = [e for e in RUNGS if e * epoch_s <= allowed]
    return (fitting[-1] if fitting else RUNGS[0]), where


def _fits(folds: int) -> int:
    """Trainings a trial runs: one, or one a fold and one on every sample (saved)."""
    return 1 if folds == 1 else folds + 1


def _epoch_seconds(facts: DataFacts, limit: int | None, batch: int, folds: int = 1) -> float:
    """One epoch of one fit at the rule's rate, in steps of ``batch``; a cross-validated fit
    trains on the pool less a fold and pays only its validation pass besides."""
    samples = facts.train if folds == 1 else (facts.train + facts.held) * (folds - 1) / folds
    steps = math.ceil(samples / batch)
    work = samples * _macs(facts, _cap(facts, limit)) / TRAIN_MACS_PER_SECOND
    return steps * STEP_S + work + (EPOCH_OVERHEAD_S if folds == 1 else FOLD_EPOCH_OVERHEAD_S)


def _batch(facts: DataFacts) -> int:
    """The largest power of two up to a sixteenth of the training samples, 16..128."""
    return int(min(128, max(16, 2 ** math.floor(math.log2(max(1, facts.train / 16))))))


def _batch_of(facts: DataFacts, data: Mapping[str, Any]) -> int:
    """The batch the trials train with: the user's ``train.batch_size``, else the derived."""
    train = data.get("train")
    given = train.get("batch_size") if isinstance(train, Mapping) else None
    return given if isinstance(given, int) and not isinstance(given, bool) and given > 0 else (
        _batch(facts))  # fmt: skip


def _macs(facts: DataFacts, cap: int) -> int:
    return reference_macs(facts.layout, facts.in_shape, facts.classes, cap)


@functools.cache
def reference_macs(layout: str, in_shape: tuple[int, ...], classes: int, cap: int) -> int:
    """Forward multiply-adds on one sample of the costliest family's plain net within ``cap``
    parameters: at its deepest depth that holds its narrowest width, the widest width there
    (what a trial of the search typically computes: larger ones share their weights, not
    their work, and smaller ones do less)."""
    costs = [0]
    for spec in families_of(layout):
        _, low, high = spec.depth
        for depth in range(high, low - 1, -spec.depth_step):
            count = functools.partial(spec.params, depth, in_shape=in_shape, classes=classes)
            if count(width=spec.min_width) > cap:
                continue
            widths = range(spec.min_width, MAX_REFERENCE_WIDTH + 1)
            width = widths[bisect.bisect_right(widths, cap, key=lambda w: count(width=w)) - 1]
            costs.append(spec.macs(depth, width, in_shape, classes))
            break
    return max(costs)


def _folds(facts: DataFacts, limit: int | None, time_s: float | None, batch: int,
           data: Mapping[str, Any], out: list[Derived]) -> int:  # fmt: skip
    """Cross-validate (:data:`FOLDS`) when the validation split holds fewer than
    :data:`FOLDS_BELOW` samples and a trial is cheap enough to train to its end (a
    multi-fidelity scheduler ranks epochs, which a cross-validated trial does not report);
    1 otherwise or when the user sets a scheduler other than fifo; the user's own ``folds``
    when set (the epochs and the scheduler are derived for it)."""
    if "folds" in data:  # checked against the data with the config (``check_sizes``)
        given = data["folds"]
        return given if isinstance(given, int) and not isinstance(given, bool) else 1
    scheduler = data.get("scheduler", "fifo")
    if (scheduler.get("name") if isinstance(scheduler, Mapping) else scheduler) != "fifo":
        return 1  # the user's multi-fidelity scheduler ranks epochs
    epochs, _ = _epochs(facts, limit, time_s, 1, batch)
    full_s = epochs * _epoch_seconds(facts, limit, batch)
    if facts.held >= FOLDS_BELOW or full_s >= STOPPING_PAYS_S:
        return 1
    spread = 100 * math.sqrt(0.9 * 0.1 / max(1, facts.held))
    pool = facts.train + facts.held
    folds = min(FOLDS, pool)  # a fold holds one sample at least
    out.append(Derived("folds", folds, f"the validation split holds {facts.held} samples "
                       f"(under {FOLDS_BELOW}: at 90 % accuracy one split's figure has a "
                       f"standard error of {spread:.1f} points), and a trial is cheap: each is "
                       f"scored on {folds} folds of all {pool:,} training samples (at most "
                       f"{FOLDS}, one a sample at most), then trained on all of them"
                       ))  # fmt: skip
    return folds


def _workers() -> int:
    return max(1, os.cpu_count() or 1)


# -- the search ------------------------------------------------------------------------------

#: A data-only search's finalists: the top 3, 3 fresh seeds each (up to 10 while whole rounds
#: fit), a fifth of the time.
FINALISTS = {"top": 3, "seeds": 3, "fill": 10, "share": 0.2}


def _search(facts: DataFacts, limit: int | None, time_s: float | None, trials: Any,
            epochs: int, folds: int, batch: int, out: list[Derived]
            ) -> dict[str, Any]:  # fmt: skip
    """Algorithm, scheduler, trials, indicators and resources."""
    trial_s = epochs * _epoch_seconds(facts, limit, batch, folds) * _fits(folds)
    scheduler, mean_epochs, why = _scheduler(epochs, trial_s, folds)
    derived: dict[str, Any] = {
        "algorithm": {"name": "tpe"},
        "scheduler": scheduler,
        "indicators": list(INDICATORS),
        "measure": dict(MEASURE),
        "resources": {"cpu": 1, "gpu": 0},
        "finalists": dict(FINALISTS),
    }  # fmt: skip
    out += [
        Derived("algorithm", "tpe", "the presets' optimiser (highest hypervolume in "
                "benchmarks/results/search_quality.md)"),
        Derived("scheduler", _shown_scheduler(scheduler), why),
        Derived("indicators", INDICATORS, "the cheap ones: a throughput or energy sweep "
                "would cost more than training a tiny net"),
        Derived("resources", {"cpu": 1, "gpu": 0}, "one CPU per trial, trials side by side; "
                "no GPU even where there is one: for nets this small the cores ran five times "
                "as many trials (benchmarks/results/gpu_check.md, run 4); a resources key of "
                "yours gives a larger net its share"),
        Derived("finalists", FINALISTS, "one validation accuracy is noisy (the more so the "
                "smaller the data): the best feasible trials are retrained with fresh seeds "
                "(each its own initialisation and validation split) and the best mean is "
                "recommended, in the last share of the time (more seeds while whole rounds "
                "fit it: the share is not left unused)"),
    ]  # fmt: skip
    if trials is None:
        assert time_s is not None
        fit_s = _epoch_seconds(facts, limit, batch, folds) * _fits(folds)
        per_trial = mean_epochs * fit_s + TRIAL_OVERHEAD_S
        expected = math.ceil(time_s * _workers() / per_trial)
        count = math.ceil(time_s * _workers() / FASTEST_TRIAL_S)
        derived["trials"] = count
        out.append(Derived("trials", count, f"the time ({time_s:,.0f} s × {_workers()} CPUs) "
                           f"over the fastest a trial ends ({FASTEST_TRIAL_S:g} s: stopped at "
                           "its first report), so that the time, not the count, ends the "
                           f"search; about {expected:,} expected at the rule's rate (a trial's "
                           f"{per_trial:.1f} s: {mean_epochs:.2f} epochs on average, "
                           f"{TRIAL_OVERHEAD_S:g} s overhead)"))  # fmt: skip
    return derived


def _scheduler(epochs: int, full_s: float, folds: int = 1) -> tuple[dict[str, Any], float, str]:
    """The scheduler, the epochs a trial trains on average under it (with every rung
    trusted; a refuted rung resumes what it paused, and trials then train longer), and why."""
    if folds > 1:
        why = ("cross-validated trials are scored once all their folds have trained: "
               "nothing to rank epoch by epoch")  # fmt: skip
        return {"name": "fifo"}, float(epochs), why
    if full_s < STOPPING_PAYS_S:
        why = (f"a whole trial trains in about {full_s:.1f} s, under {STOPPING_PAYS_S:g} s (ten "
               "trial starts): stopping early has nothing to save, and its first rungs would "
               "judge nets on a few warm-up steps")
        return {"name": "fifo"}, float(epochs), why
    grace = max(GRACE_EPOCHS, epochs // FIRST_RUNG_SHARE)
    rungs = milestones(grace, REDUCTION_FACTOR, epochs)
    mean = grace + sum((b - a) / REDUCTION_FACTOR ** (i + 1)
                       for i, (a, b) in enumerate(zip(rungs, [*rungs[1:], epochs], strict=True)))
    moasha = {"name": "moasha", "type": "promotion", "grace_epochs": grace,
              "reduction_factor": REDUCTION_FACTOR, **AUDITED_RUNGS}  # fmt: skip
    why = (f"a whole trial trains for about {full_s:,.0f} s: MOASHA pauses the unpromising ones "
           "at its rungs, and audits the rungs (one in four trials it would pause goes on); "
           "while the audits show that a rung's best third does not beat the rest later, every "
           "paused trial resumes (in the scheduler lab it was the one MOASHA that ended no "
           "worse than FIFO on both curve tables, where stopping MOASHA ended worse on the "
           "table whose early epochs swing: docs/guides/replay.md, \"A seventh design\"); its "
           f"first rung at epoch {grace} of {epochs} (1/{FIRST_RUNG_SHARE} of a trial, at least "
           f"{GRACE_EPOCHS}: the share of its schedule the scheduler lab's curves were ranked "
           "at, and one-cycle's warm-up is a share of the schedule too)")
    return moasha, mean, why


def _shown_scheduler(scheduler: Mapping[str, Any]) -> str:
    if scheduler["name"] == "fifo":
        return "fifo"
    return (f"moasha (promotion, pooled audits, grace {scheduler['grace_epochs']}, "
            f"η {REDUCTION_FACTOR:g})")


# -- the user's keys over the derived ones ---------------------------------------------------


def _merged(data: Mapping[str, Any], derived: dict[str, Any], out: list[Derived],
            facts: DataFacts) -> Derivation:  # fmt: skip
    """The derived config with the user's keys on top: a section the user gives replaces the
    derived one, except ``train`` and ``fixed``, merged key by key; a searched dimension of a
    key the user fixes is dropped."""
    config = copy.deepcopy(derived)
    given: list[str] = []
    for key, value in data.items():
        if key in ("train", "fixed"):
            continue
        if key in config and key != "dataset":
            given.append(key)
        config[key] = copy.deepcopy(value)
    if isinstance(derived["dataset"], Mapping):
        config["dataset"] = derived["dataset"]
    user_train = dict(data.get("train") or {})
    user_fixed = dict(data.get("fixed") or {})
    space, fixed, train = config["space"], config["fixed"], config["train"]
    for option in user_train:
        given.append(f"train.{option}")
        train.pop(option, None)
        for name in [n for n in space if n == f"train.{option}" or n.endswith(f".train.{option}")]:
            del space[name]
    for name in user_fixed:
        given.append(f"fixed.{name}")
        space.pop(name, None)
        fixed.pop(name, None)
    gone = ({f.name for f in families_of(facts.layout)} - {user_fixed["family"]}
            if "family" in user_fixed else set())  # fmt: skip
    for name in [n for n in [*space, *fixed] if n.split(".")[0] in gone]:
        space.pop(name, None)  # another family's dimension or value applies to no trial
        fixed.pop(name, None)
    for name, entry in list(space.items()):  # a condition on a dimension the user fixed
        when = dict(entry.get("when") or {})
        for on in [k for k in when if k in user_fixed]:
            if user_fixed[on] not in when.pop(on):
                del space[name]
                break
        else:
            if "when" in entry:
                space[name] = (
                    {**entry, "when": when}
                    if when
                    else {k: v for k, v in entry.items() if k != "when"}
                )
    config["train"] = {**train, **user_train}
    config["fixed"] = {**fixed, **user_fixed}
    if "start" not in data and "start" in derived:
        config["start"] = _kept_points(derived["start"], space, user_fixed)
        if config["start"] != derived["start"]:  # the derived lines name points now cut
            out = [d for d in out if d.key.split(" ")[0] != "start"] + [_kept(config["start"])]
    overridden = set(given)
    kept = [d for d in out
            if not _overridden(d.key, overridden) and _family_of(d.key) not in gone]
    return Derivation(config=config, values=kept, given=given, facts=facts)


def _kept(points: list[dict[str, Any]]) -> Derived:
    """The start line once the user's fixed keys cut the derived points."""
    if not points:
        return _no_start(None)
    return Derived("start", "; ".join(_brief(p) or "one point" for p in points),
                   "trained first: the derived start points (learned, then plain nets) that "
                   "agree with your fixed keys, on the dimensions still searched")  # fmt: skip


def _kept_points(points: list[dict[str, Any]], space: Mapping[str, Any],
                 fixed: Mapping[str, Any]) -> list[dict[str, Any]]:  # fmt: skip
    """The derived start points on what is still searched once the user fixed some of it:
    a point of another value of a dimension the user fixed (another family) dropped, the
    others kept on the dimensions still searched (each once; none left empty), and none
    when fewer than two are left (one family: no portfolio to seed)."""
    kept: list[dict[str, Any]] = []
    for point in points:
        if any(k in fixed and fixed[k] != v for k, v in point.items()):
            continue
        left = {k: v for k, v in point.items() if k in space}
        if left and left not in kept:
            kept.append(left)
    return kept if len(kept) >= PORTFOLIO else []


def _family_of(key: str) -> str:
    """The family a derived value's key names first (``convnet.depth``, ``convnet levers``,
    ``family convnet`` for one left out); the key's head otherwise."""
    return key.removeprefix("family ").split(" ")[0].split(".")[0]


def _overridden(key: str, given: set[str]) -> bool:
    head = key.split(" ")[0].split(",")[0]
    return head in given or head.split(".")[0] in given - {"train", "fixed"}


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_shown(v)}" for k, v in value.items()) + "}"
    return str(value)
