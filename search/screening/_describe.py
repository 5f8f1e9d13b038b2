"""The resolved search in words: what ``search check`` prints before anything starts, and the
warnings ``search check`` and ``search launch`` give on a config that is valid but suspect.

Everything here reads the validated :class:`SearchConfig`; nothing is created, no Ray is
started, no data are downloaded and nothing trains. The cost of one trial comes from models
built on the meta device (:func:`search.screening._floor.trial_cost`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from search._format import duration, format_value
from spaces import Categorical, Dimension, Fixed, Float, Int, Space, describe_when

if TYPE_CHECKING:
    from search.config import SearchConfig

__all__ = ["describe", "points", "suspicions"]


def points(space: Space) -> float:
    """How many distinct points ``space`` holds (inactive dimensions count once), or ``inf``
    when an active dimension is continuous."""
    names = space.names
    parents = {parent for name in names for parent, _ in space[name].when}

    def walk(index: int, point: dict[str, Any]) -> float:
        if index == len(names):
            return 1.0
        name = names[index]
        if not space.is_active(name, point):
            return walk(index + 1, point)
        dim = space[name]
        if name in parents:  # its value decides which later dimensions are active
            return sum(walk(index + 1, {**point, name: v}) for v in _choices(dim))
        return _size(dim) * walk(index + 1, point)

    return walk(0, {})


def _size(dim: Dimension) -> float:
    if isinstance(dim, Int):
        return float((dim.top - dim.low) // dim.step + 1)
    if isinstance(dim, Float):
        return math.inf
    if isinstance(dim, Categorical):
        return float(len(dim.choices))
    return 1.0


def _choices(dim: Dimension) -> list[Any]:
    if isinstance(dim, Categorical):
        return list(dim.choices)
    if isinstance(dim, Fixed):
        return [dim.value]
    if isinstance(dim, Int):
        return list(range(dim.low, dim.top + 1, dim.step))
    return [dim.low]  # a continuous parent: conditions on a real value are not counted


def _range(dim: Dimension) -> tuple[str, str]:
    """``(kind, values)`` of one dimension as the table shows them."""
    if isinstance(dim, Int | Float):
        scale = ", log scale" if dim.log else ""
        step = f" in steps of {dim.step}" if isinstance(dim, Int) and dim.step != 1 else ""
        return dim.kind, f"{format_value(dim.low)} to {format_value(dim.high)}{step}{scale}"
    if isinstance(dim, Categorical):
        return dim.kind, ", ".join(str(c) for c in dim.choices)
    assert isinstance(dim, Fixed)
    return dim.kind, str(dim.value)


def _size_of(space: Space) -> str:
    n = points(space)
    if math.isfinite(n):
        return f"{int(n):,} point(s)"
    real = [name for name in space.names if isinstance(space[name], Float)]
    return f"continuous (real-valued: {', '.join(real)})"


def describe(config: SearchConfig, *, cost: bool = True) -> list[str]:
    """The lines of ``search check``: dataset, space, fixed values, objectives, constraints,
    optimiser, budgets, scheduler, loggers and what one trial costs (``cost``: build the
    models)."""
    lines = [f"Search {config.name!r} on {config.dataset} (seed {config.seed})"]
    lines.append(f"Space: {len(config.space)} dimension(s), {_size_of(config.space)}")
    rows = []
    for name in config.space.names:
        dim = config.space[name]
        kind, values = _range(dim)
        when = describe_when(dim)
        rows.append((name, kind, values + (f"  (when {when})" if when else "")))
    width = [max((len(r[i]) for r in rows), default=0) for i in range(2)]
    lines += [f"  {a:<{width[0]}}  {b:<{width[1]}}  {c}" for a, b, c in rows]
    if config.fixed:
        lines.append("Fixed: " + ", ".join(f"{k}={v}" for k, v in config.fixed.items()))
    if config.start:
        lines.append(f"Start: {len(config.start)} point(s) trained first")
        lines += [
            f"  {i}: " + ", ".join(f"{k}={v}" for k, v in point.items())
            for i, point in enumerate(config.start)
        ]
    lines.append(
        "Objectives: " + ", ".join(f"{o.name} ({o.direction})" for o in config.objectives)
    )
    lines.append("Constraints: " + (", ".join(config.constraint_texts) or "none"))
    options = "".join(f", {k}={v}" for k, v in config.algorithm.options.items())
    lines.append(f"Algorithm: {config.algorithm.name}{options}")
    lines.append("Limits: " + _limits(config))
    lines.append("Scheduler: " + _scheduler(config))
    lines.append("Finalists: " + _finalists(config))
    if config.loggers:
        lines.append("Logged to: " + ", ".join(config.loggers))
    share = ", ".join(f"{k} {format_value(v)}" for k, v in config.resources.ray().items())
    lines.append(f"Each trial asks for: {share}")
    if cost:
        lines += _cost(config)
    return lines


def _limits(config: SearchConfig) -> str:
    b = config.limits
    parts = [f"{config.trials} trials"]
    parts.append(f"time {duration(b.time)}" if b.time is not None else "no time limit")
    if b.energy_j is not None:
        parts.append(f"energy {format_value(b.energy_j)} J")
    if b.co2_g is not None:
        parts.append(f"CO2 {format_value(b.co2_g)} g")
    if b.trial_timeout is not None:
        parts.append(f"{duration(b.trial_timeout)} of training per trial")
    return ", ".join(parts)


def _finalists(config: SearchConfig) -> str:
    f = config.finalists
    if not f.on:
        return "none (no recommendation; search export takes the knee)"
    kept = "" if config.limits.time is None else (
        f", {format_value(100 * f.share)} % of the time limit kept for them")  # fmt: skip
    more = "" if config.limits.time is None or f.fill <= f.seeds else (
        f" (up to {f.fill} while whole rounds fit the time kept)")  # fmt: skip
    return (f"the {f.top} most accurate feasible trials retrained with {f.seeds} fresh seed(s) "
            f"each{more}, the best mean validation accuracy recommended{kept}")  # fmt: skip


def _scheduler(config: SearchConfig) -> str:
    s = config.scheduler
    if s.name == "fifo":
        return f"fifo: every trial trains to its end (at most {config.max_epochs} epoch(s))"
    from search.schedulers import milestones

    rungs = milestones(s.grace_epochs, s.reduction_factor, config.max_epochs)
    verb = "pause" if s.type == "promotion" else "stop"
    says = {"chain": ", each rung once the search's curves show it ranks the next (trust_rungs)",
             "audit": ", each rung until its audits show it does not rank the next (trust_rungs, "
                      f"by audit: one in four trials it would {verb} goes on)",
             "pooled": ", every rung until the audits of all rungs together show they do not "
                       f"rank the next (trust_rungs, pooled: one in four trials it would {verb} "
                       "goes on)",
             "own": ", each rung once its own pairs show it ranks the next (trust_rungs, own)"}
    trust = says[s.trust_by] if s.trust_rungs else ""
    if s.trust_rungs and s.type == "promotion":
        trust += "; a rung not trusted promotes the trials it paused"
    return (
        f"{s.name} ({s.type}): rungs at epoch(s) {', '.join(map(str, rungs)) or 'none'} of "
        f"{config.max_epochs}; the top 1/{format_value(s.reduction_factor)} of a rung go on"
        f"{trust}"
    )


def _promotion_warning(config: SearchConfig) -> str | None:
    """Promotion-type MOASHA promotes the top floor(n / η) of a rung, so one trial reaches the
    last epoch only once ceil(η · ceil(η · ...)) trials reached the first rung; with fewer
    ``trials`` the search ends with every trial paused and none complete."""
    s = config.scheduler
    if s.name != "moasha" or s.type != "promotion" or s.early_promotion:
        return None
    from search.schedulers import milestones

    needed = 1
    for _ in milestones(s.grace_epochs, s.reduction_factor, config.max_epochs):
        needed = math.ceil(needed * s.reduction_factor - 1e-9)
    if config.trials >= needed:
        return None
    return (
        f"trials: {config.trials} is fewer than the {needed} that promotion-type moasha needs "
        f"before its first trial trains all {config.max_epochs} epochs (the top "
        f"1/{format_value(s.reduction_factor)} of each rung is promoted): no trial would "
        f"complete; raise trials, or set scheduler.early_promotion: true or type: stopping"
    )


def _cost(config: SearchConfig) -> list[str]:
    """What one trial costs: models built on the meta device, epochs x training samples."""
    from search.screening._floor import trial_cost

    found = trial_cost(config)
    lines = ["One trial:"]
    if found is None:
        lines.append("  no model of the space could be built (its trials will fail)")
    else:
        lines.append(
            f"  unshared model: {_span(found.params)} parameters, {_span(found.flops_infer)} "
            "inference FLOPs per sample"
        )
        lines.append(
            f"    ({found.models} model(s) built on the meta device, at the corners of the space)"
        )
        deployed = "the unshared model's"
        if found.budgets is not None:
            lines.append(
                f"  Shapeshifted: a budget of {_span(found.budgets)} parameters (everything "
                "counted); FLOPs as unshared"
            )
            deployed += ", Shapeshifted or not"
        lines.append(f"  deployed: {_span(found.weights)} weights ({deployed})")
    lines.append(f"  training: {_training(config)}")
    return lines


def _span(pair: tuple[int, int]) -> str:
    low, high = pair
    return f"{low:,}" if low == high else f"{low:,} to {high:,}"


def _training(config: SearchConfig) -> str:
    """``8 epoch(s) x 1,437 training samples = 11,496 samples seen``, the split's size from
    the data when they are already here (check downloads nothing)."""
    epochs = config.max_epochs
    size = _train_size(config)
    if size is None:
        cap = f" (train_size {config.train_size})" if config.train_size else ""
        return (
            f"up to {epochs} epoch(s) x the training split of {config.dataset}{cap} (its size "
            "is known once the data are here; check downloads nothing)"
        )
    return f"up to {epochs} epoch(s) x {size:,} training samples = {epochs * size:,} samples"


def _train_size(config: SearchConfig) -> int | None:
    """The training split's size, from the data if they are on this machine, else None."""
    from objectives.datasets import load

    options = {k: getattr(config, k) for k in ("val_size", "train_size", "seed")}
    try:
        data = load(config.dataset, root=config.data_root, download=False, **options)
    except Exception:  # not here (or not loadable): the launch says why, with the fix
        return None
    return len(data.train)


def suspicions(config: SearchConfig, *, floor: bool = True) -> list[str]:
    """Warnings on a valid config: an objective pointed against its metric's meaning, start
    points over a params or FLOPs constraint, a parameter budget above every plain model's
    own size, and with ``floor``, a parameter budget that no model of the space can meet
    (``launch`` checks that one itself, once it knows where it runs)."""
    from search.config import metric_direction
    from search.screening._floor import budget_above_warning, budget_warning, start_warnings

    found = []
    for i, objective in enumerate(config.objectives):
        natural = metric_direction(objective.name, path=f"objectives[{i}]")
        if objective.direction != natural:
            prefers = "largest" if objective.direction == "maximize" else "smallest"
            found.append(
                f"objectives[{i}]: {objective.direction} {objective.name!r} contradicts its "
                f"meaning (the indicator registry's direction is {natural}): the search will "
                f"prefer the {prefers} {objective.name}; write [{objective.name}, {natural}] "
                "unless that is what you want"
            )
    found += start_warnings(config)
    few = _promotion_warning(config)
    if few is not None:
        found.append(few)
    below = budget_warning(config) if floor else None
    above = budget_above_warning(config)
    found += [line for line in (below, above) if line is not None]
    return found
