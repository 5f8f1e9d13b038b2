"""The default dataset and every validation split load without scikit-learn, and give what
scikit-learn gives, index for index (a recorded search's split must not move)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from objectives._digits import read_digits
from objectives._split import stratified_split


@st.composite
def _labels_and_size(draw: st.DrawFn) -> tuple[np.ndarray, int | float]:
    classes = draw(st.integers(2, 6))
    counts = draw(st.lists(st.integers(2, 40), min_size=classes, max_size=classes))
    y = np.repeat(np.arange(classes) * 3 + 1, counts)  # labels need not be 0..k-1
    y = np.random.default_rng(draw(st.integers(0, 99))).permutation(y)
    n = len(y)
    if draw(st.booleans()):
        return y, draw(st.integers(classes, n - classes))
    fraction = draw(st.floats(0.05, 0.95))
    return y, fraction if classes <= np.ceil(fraction * n) <= n - classes else 0.5


@settings(max_examples=200, deadline=None)
@given(case=_labels_and_size(), seed=st.integers(0, 2**31 - 1))
def test_the_split_is_scikit_learns_index_for_index(
    case: tuple[np.ndarray, int | float], seed: int
) -> None:
    y, size = case
    if not len(y) - (np.ceil(size * len(y)) if isinstance(size, float) else size) >= len(set(y)):
        return  # scikit-learn refuses a train part smaller than the classes; so do the callers
    kept, held = train_test_split(np.arange(len(y)), test_size=size, stratify=y, random_state=seed)
    ours = stratified_split(y, size, seed=seed)
    assert np.array_equal(ours[0], np.sort(kept)) and np.array_equal(ours[1], np.sort(held))


def test_digits_and_their_default_splits_are_scikit_learns() -> None:
    images, labels = read_digits()
    bunch = load_digits()
    assert images.shape == (1797, 8, 8) and images.dtype == np.uint8
    assert np.array_equal(images, bunch.images.astype(np.uint8))
    assert np.array_equal(labels, bunch.target)
    for size, seed in ((0.2, 0), (0.2, 7), (100, 3)):  # the test split, val splits
        kept, held = train_test_split(np.arange(1797), test_size=size, stratify=labels,
                                      random_state=seed)  # fmt: skip
        ours = stratified_split(labels, size, seed=seed)
        assert np.array_equal(ours[1], np.sort(held)) and np.array_equal(ours[0], np.sort(kept))


def test_loading_digits_imports_no_scikit_learn() -> None:
    code = (
        "import sys, objectives\n"
        "data = objectives.load('digits', seed=3)\n"
        "assert len(data.val) > 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sklearn', 'pandas')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
