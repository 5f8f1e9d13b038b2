"""Non-dominated sorting and hypervolume on raw objective arrays (pymoo underneath).

Everything here works on an ``(n, m)`` array of objective values with one direction per column.
pymoo minimises, so maximised columns are negated before sorting; hypervolume is computed on
objectives normalised to ``[0, 1]`` (0 = the best end of the bounds, 1 = the worst) so that
objectives with different units weigh alike and the reference point means the same in every
study.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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


#: What ``bounds`` may be: ``{objective name: (lo, hi)}`` (with ``names``), or an ``(m, 2)``
#: array of ``(lo, hi)`` rows when its shape tells it from its transpose (``m != 2``).
Bounds = Mapping[str, Sequence[float]] | ArrayLike


def _by_name(bounds: Any, names: Sequence[str] | None, m: int) -> NDArray[np.float64] | None:
    """The user's ``bounds`` as ``(m, 2)`` ``(lo, hi)`` rows in the objectives' order.

    A mapping is read by objective name. An array is read as rows only when its transpose
    could not be taken for it: with two objectives a ``2 x 2`` array cannot (``[(0, 1), (300,
    5000)]`` is accuracy 0-1 and params 300-5,000, or accuracy 0-300 and params 1-5,000), so it
    is refused.
    """
    if bounds is None:
        return None
    if isinstance(bounds, Mapping):
        if names is None or len(names) != m:
            raise ConfigError(
                f"bounds by objective name need names=, one per objective ({m}); got {names!r}"
            )
        if set(bounds) != set(names):
            raise ConfigError(
                f"bounds name {sorted(map(str, bounds))}; allowed: exactly the objectives "
                f"{list(names)}"
            )
        rows = [bounds[name] for name in names]
    else:
        rows = bounds
    b = np.asarray(rows, dtype=np.float64) if _numeric(rows) else np.empty(0)
    if b.shape != (m, 2) or not np.isfinite(b).all():
        raise ConfigError(
            f"bounds must be one finite (lo, hi) pair per objective ({m}), got {bounds!r}"
        )
    if m == 2 and not isinstance(bounds, Mapping):
        raise ConfigError(
            f"bounds {np.asarray(bounds).tolist()!r}: a 2 x 2 array reads the same transposed; "
            "pass them by objective name, {name: (lo, hi)}, with names="
        )
    which = list(names) if names is not None and len(names) == m else list(range(m))
    backwards = np.flatnonzero(b[:, 0] >= b[:, 1])
    if backwards.size:
        i = int(backwards[0])
        raise ConfigError(
            f"bounds[{which[i]!r}] is ({b[i, 0]:g}, {b[i, 1]:g}); allowed: (lo, hi) with lo < "
            "hi, one pair per objective (a transposed array puts one objective's lows in a row)"
        )
    return b


def _numeric(rows: Any) -> bool:
    try:
        np.asarray(rows, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True


def _bounds(
    F: NDArray[np.float64], sign: NDArray[np.float64], b: NDArray[np.float64] | None
) -> NDArray[np.float64]:
    """``(m, 2)`` ``(best, worst)`` in minimisation form, from the data or checked rows."""
    m = F.shape[1]
    if b is None:
        if F.shape[0] == 0:
            return np.tile([0.0, 1.0], (m, 1))
        return np.stack([F.min(axis=0), F.max(axis=0)], axis=1)
    signed = np.stack([b[:, 0] * sign, b[:, 1] * sign], axis=1)
    return np.sort(signed, axis=1)


def normalise(
    values: ArrayLike,
    directions: Sequence[str],
    *,
    bounds: Bounds | None = None,
    names: Sequence[str] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Objectives mapped to minimisation on ``[0, 1]``: 0 at the best bound, 1 at the worst.

    Args:
        values: ``(n, m)`` objective values in their own units.
        directions: ``"minimize"`` or ``"maximize"`` per objective.
        bounds: ``{objective: (lo, hi)}`` in its own units, ``lo < hi`` (with ``names``, the
            objectives' names in the columns' order); an ``(m, 2)`` array of ``(lo, hi)`` rows
            only when its shape tells it from its transpose, so never with two objectives.
            None takes the minimum and maximum of the finite rows of ``values``. A zero-width
            range maps every value to 0 (the span counts as 1, so values beyond it stay
            ordered).
        names: The objectives' names, one per column (needed by ``bounds`` by name).

    Returns:
        ``(normalised values, bounds)`` with bounds as ``(best, worst)`` per objective in the
        objectives' own units.
    """
    arr = _values(values)
    return _normalise(arr, directions, _by_name(bounds, names, arr.shape[1]))


def _normalise(
    arr: NDArray[np.float64], directions: Sequence[str], rows: NDArray[np.float64] | None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    sign = _directions(directions, arr.shape[1])
    F = arr * sign
    finite = F[np.isfinite(F).all(axis=1)]
    b = _bounds(finite, sign, rows)
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
    bounds: Bounds | None = None,
    names: Sequence[str] | None = None,
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
        bounds: ``{objective: (lo, hi)}`` in its own units, with ``names`` (see
            :func:`normalise`); fix them to compare studies or to get a monotone history.
            None derives them from the feasible, finite points.
        names: The objectives' names, one per column.
        ref: Reference point in normalised space, a scalar or one value per objective;
            default 1.1 (10 % beyond the worst bound, so boundary points still count).
        feasible: Optional flag per point.

    Returns:
        An :class:`HVResult` stating the value, the reference point and the bounds.

    Example:
        >>> hv = hypervolume([[0.9, 1200.0]], ["maximize", "minimize"],
        ...                  names=["accuracy", "params"],
        ...                  bounds={"accuracy": (0.0, 1.0), "params": (0, 5000)})
        >>> round(hv.value, 2)
        0.86
    """
    arr = _values(values)
    return _hypervolume(arr, directions, _by_name(bounds, names, arr.shape[1]), ref, feasible)


def _hypervolume(
    arr: NDArray[np.float64],
    directions: Sequence[str],
    rows: NDArray[np.float64] | None,
    ref: float | ArrayLike | None,
    feasible: ArrayLike | None,
) -> HVResult:
    sign = _directions(directions, arr.shape[1])
    keep = _usable(arr, feasible)
    pts = arr[keep]
    norm, b = _normalise(pts, directions, rows)
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
    bounds: Bounds | None = None,
    names: Sequence[str] | None = None,
    ref: float | ArrayLike | None = None,
) -> tuple[NDArray[np.float64], HVResult]:
    """Hypervolume of the feasible front after each point, in the order given.

    The bounds (as :func:`hypervolume` takes them) are fixed once over all feasible points
    (unless given), so the history is non-decreasing: a later point can only add volume.

    Returns:
        ``(history, final)``: one value per point, and the :class:`HVResult` of the whole set
        (which states the bounds and reference point used throughout).
    """
    arr = _values(values)
    keep = _usable(arr, feasible)
    final = _hypervolume(arr, directions, _by_name(bounds, names, arr.shape[1]), ref, keep)
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
            history[i] = _hypervolume(arr, directions, fixed, final.ref_point, seen).value
        elif i:
            history[i] = history[i - 1]
    return history, final
