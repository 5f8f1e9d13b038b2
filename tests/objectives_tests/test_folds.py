"""Cross-validation folds (objectives._split.stratified_folds, Data.fold): for every label list
the folds partition it, keep each class's share to one sample, and stay level; a dataset's
fold pools its training and validation splits and holds one fold out."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from objectives._split import stratified_folds
from objectives.datasets import load
from spaces import ConfigError


@settings(max_examples=300, deadline=None)
@given(counts=st.lists(st.integers(1, 40), min_size=1, max_size=7), k=st.integers(2, 10),
       seed=st.integers(0, 2**31 - 1), order=st.integers(0, 99))  # fmt: skip
def test_folds_partition_the_samples_keep_each_class_share_and_stay_level(
    counts: list[int], k: int, seed: int, order: int
) -> None:
    y = np.random.default_rng(order).permutation(np.repeat(np.arange(len(counts)) * 2, counts))
    if k > len(y):
        with pytest.raises(ValueError, match="folds must be"):
            stratified_folds(y, k, seed=seed)
        return
    folds = stratified_folds(y, k, seed=seed)
    assert len(folds) == k
    joined = np.concatenate(folds)
    assert sorted(joined.tolist()) == list(range(len(y)))  # each sample in exactly one fold
    assert all((np.diff(f) > 0).all() for f in folds)  # sorted
    sizes = [len(f) for f in folds]
    assert max(sizes) - min(sizes) <= 1  # level: no fold left short
    for label, count in zip(*np.unique(y, return_counts=True), strict=True):
        per_fold = [int((y[f] == label).sum()) for f in folds]
        assert sum(per_fold) == count and max(per_fold) - min(per_fold) <= 1
    again = stratified_folds(y, k, seed=seed)
    assert all((a == b).all() for a, b in zip(folds, again, strict=True))  # seeded


def test_a_fold_holds_one_fifth_of_train_and_val_out_and_every_sample_once():
    data = load("digits", progress=False)
    pool = torch.cat([data.train.y, data.val.y])
    held = [data.fold(i, 5, seed=3) for i in range(5)]
    assert sum(len(f.val) for f in held) == len(pool)
    for fold in held:
        assert len(fold.train) + len(fold.val) == len(pool)
        assert fold.provenance["splits"]["val"] == len(fold.val)
        assert fold.provenance["fold"][1] == 5 and fold.test is data.test  # test untouched
    # The folds' validation samples, together, are the pool (as multisets of rows).
    rows = torch.cat([f.val.x.flatten(1) for f in held])
    whole = torch.cat([data.train.x, data.val.x]).flatten(1)
    assert torch.allclose(rows.sum(0), whole.sum(0), atol=1e-3)
    with pytest.raises(ConfigError, match=r"folds: 1 \(fold 0\)"):
        data.fold(0, 1, seed=0)
    with pytest.raises(ConfigError, match="folds"):
        data.fold(5, 5, seed=0)
