"""Non-dominated sorting and hypervolume on raw objective arrays (pymoo underneath).

Everything here works on an ``(n, m)`` array of objective values with one direction per column.
pymoo minimises, so maximised columns are negated before sorting; hypervolume is computed on
objectives normalised to ``[0, 1]`` (0 = the best end of the bounds, 1 = the worst) so that
objectives with different units weigh alike and the reference point means the same in every
study.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pymoo.indicators.hv import HV
from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

from search._directions import DIRECTIONS, minimisation_signs
from spaces import ConfigError

__all__ = [
    "DEFAULT_REF",
    "HVResult",
    "hypervolume",
    "hypervolume_history",
    "minimisation_form",
    "non_dominated",
    "normalise",
]

#: Default reference point, per objective, in normalised space (1 = the worst bound).
DEFAULT_REF = 1.1


@dataclass(frozen=True)
class HVResult:
    """A hypervolume and everything needed to reproduce it.

    Attributes:
        value: Hypervolume of the normalised points dominating ``ref_point`` (0 for none).
        ref_point: Reference point in normalised space (per objective; 1 = the worst bound).
        ref_point_raw: The same point in the objectives' own units.
        bounds: ``(m, 2)`` array of ``(best, worst)`` per objective in its own units: the value
            mapped to 0 and the value mapped to 1.
        n_points: Number of points that entered the computation (finite, feasible).
    """

    value: float
    ref_point: NDArray[np.float64]
    ref_point_raw: NDArray[np.float64]
    bounds: NDArray[np.float64]
    n_points: int

    def describe(self) -> str:
        """One sentence stating the normalisation and reference point, for reports."""
        pairs = ", ".join(f"[{b:.4g} → 0, {w:.4g} → 1]" for b, w in self.bounds)
        ref = ", ".join(f"{r:.4g}" for r in self.ref_point)
        raw = ", ".join(f"{r:.4g}" for r in self.ref_point_raw)
        return (
            f"hypervolume {self.value:.4g} of {self.n_points} point(s) on objectives normalised "
            f"per objective as {pairs} (0 = best); reference point ({ref}) in normalised "
            f"space, i.e. ({raw}) in the objectives' units"
        )


def _directions(directions: Sequence[str], m: int) -> NDArray[np.float64]:
    """Sign per objective: +1 to minimise, -1 to maximise."""
    dirs = [directions] if isinstance(directions, str) else list(directions)
    if len(dirs) != m:
        raise ConfigError(
            f"directions must give one of {DIRECTIONS} per objective ({m}), got {dirs!r}"
        )
    bad = [d for d in dirs if d not in DIRECTIONS]
    if bad:
        raise ConfigError(f"directions must be 'minimize' or 'maximize', got {bad!r}")
    return np.array(minimisation_signs(dirs))


def _values(values: ArrayLike) -> NDArray[np.float64]:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"values must be numbers, got {values!r}") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ConfigError(f"values must be a (points, objectives) array, got shape {arr.shape}")
    return arr


def _usable(arr: NDArray[np.float64], feasible: ArrayLike | None) -> NDArray[np.bool_]:
    """Rows that may be on a front: feasible and finite in every objective."""
    ok = np.asarray(np.isfinite(arr).all(axis=1))  # an array: numpy's stubs allow a scalar
    if feasible is not None:
        mask = np.asarray(feasible, dtype=bool).reshape(-1)
        if mask.shape[0] != arr.shape[0]:
            raise ConfigError(
                f"feasible must hold one flag per point ({arr.shape[0]}), got {mask.shape[0]}"
            )
        ok &= mask
    return ok


def minimisation_form(values: ArrayLike, directions: Sequence[str]) -> NDArray[np.float64]:
    """The values with maximised objectives negated, as pymoo expects."""
    arr = _values(values)
    return arr * _directions(directions, arr.shape[1])


def non_dominated(
    values: ArrayLike, directions: Sequence[str], feasible: ArrayLike | None = None
) -> NDArray[np.bool_]:
    """Which points are on the Pareto front (pymoo's NonDominatedSorting, first front).

    Infeasible points and points with a non-finite value are never on the front: the sorting
    runs over the others only, so an infeasible point cannot hide a feasible one either. Equal
    points do not dominate each other, so duplicates on the front are all kept.

    Args:
        values: ``(n, m)`` objective values (a 1-D array is one objective).
        directions: ``"minimize"`` or ``"maximize"`` per objective.
        feasible: Optional flag per point; None treats every point as feasible.

    Returns:
        A boolean mask of length ``n``; all False when no point is feasible and finite.
    """
    F = minimisation_form(values, directions)
    usable = _usable(F, feasible)
    mask = np.zeros(F.shape[0], dtype=bool)
    idx = np.flatnonzero(usable)
    if idx.size:
        front = NonDominatedSorting().do(F[idx], only_non_dominated_front=True)
        mask[idx[np.asarray(front, dtype=int)]] = True
    return mask


def _bounds(
    F: NDArray[np.float64], sign: NDArray[np.float64], bounds: ArrayLike | None
) -> NDArray[np.float64]:
    """``(m, 2)`` ``(best, worst)`` in minimisation form, from the data or the user."""
    m = F.shape[1]
    if bounds is None:
        if F.shape[0] == 0:
            return np.tile([0.0, 1.0], (m, 1))
        return np.stack([F.min(axis=0), F.max(axis=0)], axis=1)
    b = np.asarray(bounds, dtype=np.float64)
    if b.shape != (m, 2) or not np.isfinite(b).all():
        raise ConfigError(
            f"bounds must be one finite (lo, hi) pair per objective ({m}), got {bounds!r}"
        )
    backwards = np.flatnonzero(b[:, 0] >= b[:, 1])
    if backwards.size:
        i = int(backwards[0])
        raise ConfigError(
            f"bounds[{i}] is ({b[i, 0]:g}, {b[i, 1]:g}); allowed: (lo, hi) with lo < hi, one "
            "row per objective (a transposed array puts one objective's lows in a row)"
        )
    signed = np.stack([b[:, 0] * sign, b[:, 1] * sign], axis=1)
    return np.sort(signed, axis=1)


def normalise(
    values: ArrayLike,
    directions: Sequence[str],
    *,
    bounds: ArrayLike | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Objectives mapped to minimisation on ``[0, 1]``: 0 at the best bound, 1 at the worst.

    Args:
        values: ``(n, m)`` objective values in their own units.
        directions: ``"minimize"`` or ``"maximize"`` per objective.
        bounds: ``(lo, hi)`` per objective in its own units, ``lo < hi`` (a pair in the other
            order is refused: it is what a transposed array looks like); None takes the
            minimum and maximum of the finite rows of ``values``. A zero-width range maps
            every value to 0 (the span counts as 1, so values beyond it stay ordered).

    Returns:
        ``(normalised values, bounds)`` with bounds as ``(best, worst)`` per objective in the
        objectives' own units.
    """
    arr = _values(values)
    sign = _directions(directions, arr.shape[1])
    F = arr * sign
    finite = F[np.isfinite(F).all(axis=1)]
    b = _bounds(finite, sign, bounds)
    span = b[:, 1] - b[:, 0]
    span = np.where(span > 0, span, 1.0)
    return (F - b[:, 0]) / span, b * sign[:, None]


def _ref(ref: float | ArrayLike | None, m: int) -> NDArray[np.float64]:
    r = np.broadcast_to(np.asarray(DEFAULT_REF if ref is None else ref, dtype=np.float64), (m,))
    if not np.isfinite(r).all() or (r <= 0).any():
        raise ConfigError(f"ref must be > 0 in normalised space (1 = worst bound), got {ref!r}")
    return r.astype(np.float64).copy()


def hypervolume(
    values: ArrayLike,
    directions: Sequence[str],
    *,
    bounds: ArrayLike | None = None,
    ref: float | ArrayLike | None = None,
    feasible: ArrayLike | None = None,
) -> HVResult:
    """Hypervolume of the feasible points on normalised objectives (pymoo ``HV``).

    Objectives are first normalised with :func:`normalise` (bounds from the data unless given),
    then the volume dominated between the points and the reference point is measured. Points
    that do not dominate the reference point add nothing; infeasible and non-finite points are
    left out.

    Args:
        values: ``(n, m)`` objective values in their own units.
        directions: ``"minimize"`` or ``"maximize"`` per objective.
        bounds: ``(lo, hi)`` per objective in its own units; fix them to compare studies or
            to get a monotone history. None derives them from the feasible, finite points.
        ref: Reference point in normalised space, a scalar or one value per objective;
            default 1.1 (10 % beyond the worst bound, so boundary points still count).
        feasible: Optional flag per point.

    Returns:
        An :class:`HVResult` stating the value, the reference point and the bounds.
    """
    arr = _values(values)
    sign = _directions(directions, arr.shape[1])
    keep = _usable(arr, feasible)
    pts = arr[keep]
    norm, b = normalise(pts, directions, bounds=bounds)
    r = _ref(ref, arr.shape[1])
    value = float(HV(ref_point=r)(norm)) if pts.shape[0] else 0.0
    span = b[:, 1] - b[:, 0]
    span = np.where(span != 0, span, sign)
    raw_ref = b[:, 0] + r * span
    return HVResult(value, r, raw_ref, b, int(pts.shape[0]))


def hypervolume_history(
    values: ArrayLike,
    directions: Sequence[str],
    *,
    feasible: ArrayLike | None = None,
    bounds: ArrayLike | None = None,
    ref: float | ArrayLike | None = None,
) -> tuple[NDArray[np.float64], HVResult]:
    """Hypervolume of the feasible front after each point, in the order given.

    The bounds are fixed once over all feasible points (unless given), so the history is
    non-decreasing: a later point can only add volume.

    Returns:
        ``(history, final)``: one value per point, and the :class:`HVResult` of the whole set
        (which states the bounds and reference point used throughout).
    """
    arr = _values(values)
    keep = _usable(arr, feasible)
    final = hypervolume(arr, directions, bounds=bounds, ref=ref, feasible=keep)
    # (best, worst) → (lo, hi); a zero-width range (one distinct value) is widened by 1 on
    # its worst side, which maps its value to 0 as the data-derived bounds did
    sign = _directions(directions, arr.shape[1])
    ends = final.bounds.copy()
    flat = ends[:, 0] == ends[:, 1]
    ends[flat, 1] += sign[flat]
    fixed = np.sort(ends, axis=1)
    history = np.zeros(arr.shape[0])
    for i in range(arr.shape[0]):
        seen = keep.copy()
        seen[i + 1 :] = False
        if seen.any():
            history[i] = hypervolume(
                arr, directions, bounds=fixed, ref=final.ref_point, feasible=seen
            ).value
        elif i:
            history[i] = history[i - 1]
    return history, final
