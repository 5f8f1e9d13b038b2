"""The development runs' table (benchmarks/unaided_dev.py) on figures computed by hand."""

from __future__ import annotations

import json

from tests._support.bundles import load_benchmark


def test_the_table_gives_each_arm_s_mean_spread_and_seeds(tmp_path):
    bench = load_benchmark("unaided_dev")
    for seed, accuracy in enumerate([0.5, 0.6, 0.7]):
        folder = tmp_path / "arrowhead" / "guard" / f"seed{seed}"
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(json.dumps({"test_accuracy": accuracy}))
    text = bench.table(tmp_path)
    # mean 0.6, sample std 0.1 (deviations 0.1, 0, 0.1: sqrt(0.02 / 2))
    assert "| arrowhead | guard | 3 | 0.600 ± 0.100 | 0.500, 0.600, 0.700 |" in text
    assert "gunpoint" not in text  # a set with no runs has no row
