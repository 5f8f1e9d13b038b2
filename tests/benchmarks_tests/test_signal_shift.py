"""The signal-shift benchmark: it refuses the unaided protocol's sets, its shift is the
derivation's rule, and its table's verdicts follow the Welch interval."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests._support.bundles import load_benchmark


def test_the_protocols_sets_are_refused_and_others_taken():
    bench = load_benchmark("signal_shift")
    for name in ("OSULeaf", "japanesevowels", "ItalyPowerDemand", "ACSF1"):
        with pytest.raises(SystemExit, match="the unaided protocol's sets"):
            bench.check_sets(["GunPoint", name])
    bench.check_sets(list(bench.SETS))


def test_the_shift_is_a_tenth_of_the_length_at_least_one_below_it():
    bench = load_benchmark("signal_shift")
    assert [bench.shift_of(n) for n in (2, 7, 24, 150, 251)] == [1, 1, 2, 15, 25]


def test_the_hand_net_takes_any_channels_and_length():
    net = load_benchmark("signal_shift").hand_net(6, 4)
    assert net(torch.zeros(3, 6, 37)).shape == (3, 4)


def _runs(name: str, off: list[float], on: list[float]) -> list[dict]:
    return [{"set": name, "shape": "1×50", "shift": s, "test_accuracy": a}
            for s, values in ((0, off), (5, on)) for a in values]  # fmt: skip


def test_the_verdict_is_noise_unless_the_interval_leaves_zero():
    bench = load_benchmark("signal_shift")
    rows = bench.table(
        _runs("same", [0.8, 0.82, 0.81], [0.81, 0.8, 0.82])
        + _runs("up", [0.70, 0.71, 0.72], [0.80, 0.81, 0.82])
        + _runs("down", [0.80, 0.81, 0.82], [0.70, 0.71, 0.72])
    )
    verdicts = {row.split(" | ")[0].strip("| "): row.rsplit(" | ", 1)[1].strip(" |")
                for row in rows[2:]}  # fmt: skip
    assert verdicts == {"same": "within noise", "up": "shift helps", "down": "shift hurts"}
    up = rows[3].split(" | ")
    # +0.1 exactly, its interval 2.7764 × sqrt(2 × 0.0001 / 3) either side, Welch p by scipy
    assert up[5].startswith("+0.1000 (+0.0773, +0.1227)")
    assert float(up[6]) == pytest.approx(0.0001, abs=0.001)
    assert np.isclose(float(up[3].split(" ± ")[0]), 0.71)
