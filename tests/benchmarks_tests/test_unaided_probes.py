"""benchmarks/unaided_probes.py: its sets are what their docstrings say (shape, classes,
learnable by the reference), and its table shows a probe's row as recorded."""

from __future__ import annotations

import numpy as np
import pytest

import benchmarks.unaided_probes as probes


def test_each_probe_set_has_its_shape_its_classes_and_the_same_rows_every_time() -> None:
    x, y, xt, _ = probes.rare()
    assert x.shape == (3000, 20) and xt.shape == (1000, 20) and set(y) == {0, 1}
    assert 0.08 < y.mean() < 0.12  # the top 8 %, 2 % of labels flipped
    x, y, _, _ = probes.long_bursts(n_train=40, n_test=10, length=300)
    assert x.shape == (40, 3, 300) and x.dtype == np.float32 and set(y) <= {0, 1, 2, 3}
    again, _, _, _ = probes.long_bursts(n_train=40, n_test=10, length=300)
    assert np.array_equal(x, again)  # from its seed
    x, y, _, _ = probes.beats(n_train=500, n_test=100)
    assert x.shape == (500, 1, 187) and np.bincount(y).argmax() == 0
    x, y, _, _ = probes.shapes(n_train=50, n_test=10)
    assert x.shape == (50, 3, 32, 32) and set(y) <= set(range(10))  # channels first
    x, y, _, yt = probes.few_per_class()
    assert x.shape == (300, 1, 64) and list(np.bincount(y)) == [10] * 30 and len(yt) == 600
    x, y, _, _ = probes.sensor(n_train=60, n_test=10)
    assert x.shape == (60, 6, 24) and set(y) <= set(range(6))


def test_the_reference_learns_the_rare_class_that_a_constant_guess_misses() -> None:
    arrays = probes.rare()
    name, accuracy = probes.reference(arrays, "table")
    majority = np.bincount(arrays[3]).max() / len(arrays[3])
    assert name == "gradient boosting" and accuracy > majority + 0.02


def test_the_table_shows_a_probes_row_as_recorded() -> None:
    row = {"probe": "rare", "shape": [3000, 20], "classes": 2, "epochs": 81,
           "scheduler": {"name": "moasha", "grace_epochs": 3}, "trials": 120, "complete": 20,
           "stopped": 100, "val_mean": 0.95, "val_std": 0.01, "chance": 0.9,
           "test_accuracy": 0.948, "majority_test": 0.905, "reference_accuracy": 0.948,
           "reference": "gradient boosting", "wall_s": 598.4, "engine": "abc"}  # fmt: skip
    line = probes.table([row]).splitlines()[-1]
    assert line == ("| rare | 3000 × 20, 2 classes | 81 | moasha, grace 3 | 120 (20 / 100) | "
                    "0.9500 ± 0.0100 (0.9000) | 0.9480 | 0.9050 | 0.9480 (gradient boosting) "
                    "| 598 | abc |")
    row |= {"scheduler": {"name": "fifo", "grace_epochs": 1}, "val_std": None}  # no rungs
    assert "| fifo | 120 (20 / 100) | 0.9500 ± — (0.9000) |" in probes.table([row])


def test_an_unknown_probe_is_refused(capsys) -> None:
    with pytest.raises(SystemExit):
        probes.main(["--probes", "nosuch"])
    err = capsys.readouterr().err
    assert "'nosuch' is none of long3b, long3, beats, rare, shapes, few, sensor" in err


def test_a_probe_with_a_run_already_is_refused_not_resumed(tmp_path) -> None:
    (tmp_path / "rare" / "run").mkdir(parents=True)
    with pytest.raises(SystemExit, match=r"run exists: move .*rare aside"):
        probes.run_probe("rare", 1, tmp_path / "rare")


def test_a_probe_that_recommended_nothing_shows_no_test_figure() -> None:
    row = {"probe": "rare", "shape": [3000, 20], "classes": 2, "epochs": 81,
           "scheduler": {"name": "moasha", "grace_epochs": 3}, "trials": 1440, "complete": 0,
           "stopped": 1440, "val_mean": None, "val_std": None, "chance": None,
           "test_accuracy": None, "majority_test": 0.905, "reference_accuracy": 0.948,
           "reference": "gradient boosting", "wall_s": 192.0, "engine": "abc"}  # fmt: skip
    assert "| 1440 (0 / 1440) | — ± — (—) | — | 0.9050 |" in probes.table([row])
