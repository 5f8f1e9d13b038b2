"""The unaided benchmark's data: the ``.ts`` reader on a file written by hand, and the committed
``.npz`` files as the protocol describes them (shapes, classes, no missing values)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from tests._support.bundles import load_benchmark

ROOT = Path(__file__).parents[2]
TS = """# a comment
@problemName Tiny
@univariate false
@classLabel true a b
@data
1,2,3:4,5,6:b
7,8:9,10:a
"""


def test_a_ts_file_reads_as_its_cases_padded_at_their_ends():
    bench = load_benchmark("unaided_data")
    cases, labels = bench.read_ts(TS)
    assert labels == ["b", "a"] and [c.shape for c in cases] == [(2, 3), (2, 2)]
    x = bench.padded(cases, 3)
    assert x.dtype == np.float32
    assert x.tolist() == [[[1, 2, 3], [4, 5, 6]], [[7, 8, 0], [9, 10, 0]]]


def test_a_missing_value_is_refused():
    with pytest.raises(ValueError, match="missing values"):
        load_benchmark("unaided_data").read_ts("@data\n1,?,3:a\n")


@pytest.mark.parametrize("name", ["japanese_vowels", "osu_leaf", "italy_power", "acsf1",
                                  "breast_cancer"])  # fmt: skip
def test_the_committed_sets_are_the_protocol_s(name):
    protocol = yaml.safe_load((ROOT / "benchmarks/protocols/unaided.yaml").read_text())
    assert name in protocol["datasets"]
    with np.load(ROOT / f"benchmarks/data/unaided/{name}.npz") as data:
        x_train, y_train, x_test, y_test = (data[k] for k in ("x_train", "y_train", "x_test",
                                                              "y_test"))  # fmt: skip
    layout = protocol["datasets"][name]["layout"]
    assert x_train.ndim == {"signal": 3, "table": 2}[layout]
    assert x_test.shape[1:] == x_train.shape[1:]
    assert len(x_train) == len(y_train) and len(x_test) == len(y_test)
    assert np.isfinite(x_train).all() and np.isfinite(x_test).all()
    assert set(np.unique(y_test)) <= set(np.unique(y_train)) == set(range(y_train.max() + 1))
