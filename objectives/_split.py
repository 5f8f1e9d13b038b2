"""The stratified split of scikit-learn's ``train_test_split(..., stratify=y)``, index for index,
without importing scikit-learn.

Every dataset load splits validation off the training set, and every Ray worker loads its data:
importing scikit-learn for that cost 1.6–2 s per process (it loads pandas and scipy.stats), on
the critical path of a search's first trials. The algorithm is scikit-learn's
``StratifiedShuffleSplit`` (1.x) for one split, with ``RandomState(seed)``; a test compares it
with scikit-learn's own on many labels, sizes and seeds, so that a split, and with it every
recorded search, stays the same.
"""

from __future__ import annotations

from math import ceil

import numpy as np

__all__ = ["stratified_folds", "stratified_split"]


def stratified_split(
    y: np.ndarray, test_size: int | float, *, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (kept, held-out) index arrays: ``test_size`` samples (a count, or a fraction of
    ``len(y)`` rounded up) held out in the class proportions of ``y``."""
    n = len(y)
    n_test = ceil(test_size * n) if isinstance(test_size, float) else int(test_size)
    n_train = n - n_test
    _, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    by_class = np.split(np.argsort(inverse, kind="stable"), np.cumsum(counts)[:-1])
    rng = np.random.RandomState(seed)
    kept_per_class = _approximate_mode(counts, n_train, rng)
    held_per_class = _approximate_mode(counts - kept_per_class, n_test, rng)
    kept: list[np.ndarray] = []
    held: list[np.ndarray] = []
    for members, k, h in zip(by_class, kept_per_class, held_per_class, strict=True):
        shuffled = members.take(rng.permutation(len(members)), mode="clip")
        kept.append(shuffled[:k])
        held.append(shuffled[k : k + h])
    return np.sort(np.concatenate(kept)), np.sort(np.concatenate(held))


def _approximate_mode(counts: np.ndarray, draws: int, rng: np.random.RandomState) -> np.ndarray:
    """How many of ``draws`` each class gets: the floor of its share, then one more to the
    largest remainders, ties broken at random (scikit-learn's ``_approximate_mode``)."""
    continuous = counts / counts.sum() * draws
    floored = np.floor(continuous)
    need = int(draws - floored.sum())
    remainder = continuous - floored
    for value in np.sort(np.unique(remainder))[::-1]:
        if need <= 0:
            break
        (tied,) = np.where(remainder == value)
        chosen = rng.choice(tied, size=min(len(tied), need), replace=False)
        floored[chosen] += 1
        need -= len(chosen)
    return floored.astype(int)


def stratified_folds(y: np.ndarray, k: int, *, seed: int) -> list[np.ndarray]:
    """``k`` sorted, disjoint index arrays covering ``y``, each class dealt across them in
    turn after a seeded shuffle, so every fold holds the class proportions of ``y`` (to one
    sample per class) and the folds' sizes differ by at most one per class.

    Raises:
        ValueError: ``k`` below 2 or above ``len(y)``.
    """
    if not 2 <= k <= len(y):
        raise ValueError(f"folds must be 2..{len(y)} (the samples); got {k}")
    rng = np.random.RandomState(seed)
    folds: list[list[np.ndarray]] = [[] for _ in range(k)]
    start = 0  # each class starts where the last one ended, so the folds stay level
    for label in np.unique(y):
        members = np.flatnonzero(y == label)
        members = members[rng.permutation(len(members))]
        for offset in range(k):
            folds[(start + offset) % k].append(members[offset::k])
        start = (start + len(members)) % k
    return [np.sort(np.concatenate(parts)) for parts in folds]
