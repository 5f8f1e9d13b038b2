"""PePR: performance per resource unit (Selvan et al. 2024), vectorised over a set of models.

``PePR = P / (1 + R / α)`` with ``P ∈ [0, 1]`` the performance and ``R ∈ [0, 1]`` the cost
normalised over the compared set, so ``P/2 ≤ PePR ≤ P`` at ``α = 1``. It ranks models by what
they give per unit of cost, and its argmax always lies on the (max P, min cost) Pareto front,
which makes it a knee selector. The formulas follow DESIGN.md (recovered from the authors' code
and data); the paper's text lost them in extraction.

Example:
    >>> pepr([0.9, 0.8], [10.0, 1.0], normalize="max").round(4).tolist()
    [0.45, 0.7273]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from spaces import ConfigError

__all__ = ["normalize", "pepr", "pepr_curve", "pepr_curve_max", "pepr_weighted"]

#: ``"minmax"``, ``"max"`` or fixed ``(lo, hi)`` bounds of the cost.
Normalize = Literal["minmax", "max"] | tuple[float, float]


def normalize(cost: ArrayLike, mode: Normalize = "minmax") -> NDArray[np.float64]:
    """Rescales non-negative costs to ``[0, 1]`` over the compared set.

    Args:
        cost: Costs of the models (1-D, finite, >= 0).
        mode: ``"minmax"``: ``(r - r_min) / (r_max - r_min)``, all 0 when the costs are equal;
            ``"max"``: ``r / r_max`` (reproduces the paper's Table 1), all 0 when every cost is 0;
            ``(lo, hi)``: ``(r - lo) / (hi - lo)`` with fixed bounds, so scores stay comparable
            across sets; every cost must lie within them.

    Returns:
        The normalised costs ``R``, same shape as ``cost``.
    """
    r = _costs(cost, "cost")
    if isinstance(mode, str):
        if mode == "minmax":
            span = r.max() - r.min() if r.size else 0.0
            return (r - r.min()) / span if span > 0 else np.zeros_like(r)
        if mode == "max":
            top = r.max() if r.size else 0.0
            return r / top if top > 0 else np.zeros_like(r)
        raise ConfigError(f"normalize must be 'minmax', 'max' or (lo, hi), got {mode!r}")
    lo, hi = _bounds(mode)
    if r.size and (r.min() < lo or r.max() > hi):
        raise ConfigError(
            f"cost must lie within the fixed bounds ({lo}, {hi}), got values from {r.min()} "
            f"to {r.max()}"
        )
    return (r - lo) / (hi - lo)


def pepr(
    performance: ArrayLike,
    cost: ArrayLike,
    *,
    normalize: Normalize = "minmax",
    alpha: float = 1.0,
) -> NDArray[np.float64]:
    """PePR score of each model: ``P / (1 + R / alpha)``.

    Args:
        performance: Performance ``P`` of each model, in ``[0, 1]`` (e.g. test accuracy).
        cost: Absolute cost of each model (energy, parameters, latency, …), >= 0.
        normalize: How costs become ``R`` (see :func:`normalize`).
        alpha: Weight of performance against cost; 1 is the paper's default, a large value
            ignores cost.

    Returns:
        One score per model, ``P/(1 + 1/alpha) ≤ PePR ≤ P``.
    """
    p = _performance(performance)
    r = _costs(cost, "cost")
    _same_shape(p, r, "cost")
    return p / (1.0 + _normalize(r, normalize) / _alpha(alpha))


def pepr_weighted(
    performance: ArrayLike,
    costs: Mapping[str, ArrayLike] | ArrayLike,
    weights: Mapping[str, float] | Sequence[float] | ArrayLike,
    *,
    normalize: Normalize = "minmax",
    alpha: float = 1.0,
) -> NDArray[np.float64]:
    """PePR over several resources: ``P / (1 + Σ_i w_i R_i / alpha)``.

    Each resource is normalised on its own, then the normalised costs are averaged with the
    weights, so the score keeps ``P/2 ≤ PePR ≤ P`` at ``alpha = 1``.

    Args:
        performance: Performance of each model, in ``[0, 1]``.
        costs: Either a mapping resource name → costs of each model, or a 2-D array of shape
            ``(models, resources)``.
        weights: ``w_i >= 0`` summing to 1: a mapping with the same names as ``costs``, or a
            sequence in the order of the array's columns.
        normalize: How each resource's costs become ``R_i`` (see :func:`normalize`).
        alpha: As in :func:`pepr`.
    """
    p = _performance(performance)
    matrix, names = _cost_matrix(costs)
    w = _weights(weights, names, matrix.shape[1])
    if matrix.shape[0] != p.shape[0]:
        raise ConfigError(
            f"costs must have one row per model ({p.shape[0]}), got {matrix.shape[0]} rows"
        )
    combined = sum(wi * _normalize(matrix[:, i], normalize) for i, wi in enumerate(w))
    return p / (1.0 + np.asarray(combined, dtype=np.float64) / _alpha(alpha))


def pepr_curve(
    performance_by_resource: ArrayLike,
    resource: ArrayLike,
    *,
    normalize: Normalize | None = None,
) -> NDArray[np.float64]:
    """PePR curve ``c(r) = P(r) / (1 + r)`` of one model along a resource (epochs, data, …).

    Args:
        performance_by_resource: ``P(r)`` at each resource value, in ``[0, 1]``.
        resource: The resource values ``r`` (>= 0), normally already scaled to ``[0, 1]``.
        normalize: Optionally rescale ``r`` first (e.g. ``"max"`` turns epochs into a fraction
            of the run); None uses ``r`` as given, as in the formula.
    """
    p = _performance(performance_by_resource)
    r = _costs(resource, "resource")
    _same_shape(p, r, "resource")
    if normalize is not None:
        r = _normalize(r, normalize)
    return p / (1.0 + r)


def pepr_curve_max(
    performance_by_resource: ArrayLike,
    resource: ArrayLike,
    *,
    normalize: Normalize | None = None,
) -> tuple[float, float]:
    """Scalar summary of a PePR curve: ``(max_r c(r), the smallest r attaining it)``.

    ``r`` is reported as given (before any ``normalize``).
    """
    curve = pepr_curve(performance_by_resource, resource, normalize=normalize)
    r = np.asarray(resource, dtype=np.float64)
    if curve.size == 0:
        raise ConfigError("pepr_curve_max needs at least one point, got an empty curve")
    best = curve.max()
    return float(best), float(r[curve == best].min())


def _normalize(r: NDArray[np.float64], mode: Normalize) -> NDArray[np.float64]:
    return normalize(r, mode)


def _as_1d(values: ArrayLike, name: str) -> NDArray[np.float64]:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be numbers, got {values!r}") from None
    if arr.ndim != 1:
        raise ConfigError(f"{name} must be 1-D (one value per model), got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ConfigError(f"{name} must be finite, got {arr[~np.isfinite(arr)][:3].tolist()}")
    return arr


def _performance(values: ArrayLike) -> NDArray[np.float64]:
    p = _as_1d(values, "performance")
    bad = p[(p < 0) | (p > 1)]
    if bad.size:
        raise ConfigError(
            f"performance must lie in [0, 1] (e.g. accuracy, not percent), got {bad[:3].tolist()}"
        )
    return p


def _costs(values: ArrayLike, name: str) -> NDArray[np.float64]:
    r = _as_1d(values, name)
    if (r < 0).any():
        raise ConfigError(f"{name} must be >= 0, got {r[r < 0][:3].tolist()}")
    return r


def _same_shape(p: NDArray[np.float64], r: NDArray[np.float64], name: str) -> None:
    if p.shape != r.shape:
        raise ConfigError(
            f"performance and {name} must have the same shape, got {p.shape} and {r.shape}"
        )


def _alpha(alpha: float) -> float:
    """``alpha > 0``; ``inf`` is allowed and ignores cost entirely."""
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not alpha > 0:
        raise ConfigError(f"alpha must be a number > 0, got {alpha!r}")
    return float(alpha)


def _bounds(mode: object) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in mode)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        raise ConfigError(f"normalize must be 'minmax', 'max' or (lo, hi), got {mode!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 <= lo < hi):
        raise ConfigError(f"normalize bounds must satisfy 0 <= lo < hi (finite), got {mode!r}")
    return lo, hi


def _cost_matrix(costs: Mapping[str, ArrayLike] | ArrayLike) -> tuple[np.ndarray, list[str]]:
    """Costs as a (models, resources) array and the resource names (empty for an array)."""
    if isinstance(costs, Mapping):
        if not costs:
            raise ConfigError("costs must name at least one resource, got an empty mapping")
        names = list(costs)
        columns = [_costs(costs[n], f"costs[{n!r}]") for n in names]
        lengths = {c.shape[0] for c in columns}
        if len(lengths) != 1:
            raise ConfigError(f"costs must give every resource one value per model, got {lengths}")
        return np.stack(columns, axis=1), names
    matrix = np.asarray(costs, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[1] < 1:
        raise ConfigError(
            f"costs must be a mapping or a 2-D (models, resources) array, got shape {matrix.shape}"
        )
    for i in range(matrix.shape[1]):
        _costs(matrix[:, i], f"costs[:, {i}]")
    return matrix, []


def _weights(
    weights: Mapping[str, float] | Sequence[float] | ArrayLike, names: list[str], count: int
) -> NDArray[np.float64]:
    if isinstance(weights, Mapping):
        if not names:
            raise ConfigError("weights is a mapping, so costs must be a mapping of the same names")
        if set(weights) != set(names):
            raise ConfigError(
                f"weights must name the same resources as costs {sorted(names)}, "
                f"got {sorted(weights)}"
            )
        w = np.array([weights[n] for n in names], dtype=np.float64)
    else:
        w = _as_1d(weights, "weights")
    if w.shape[0] != count:
        raise ConfigError(f"weights must hold one weight per resource ({count}), got {w.shape[0]}")
    if not np.isfinite(w).all() or (w < 0).any() or not math.isclose(w.sum(), 1.0, abs_tol=1e-9):
        raise ConfigError(f"weights must be >= 0 and sum to 1, got {w.tolist()} (sum {w.sum()})")
    return w
