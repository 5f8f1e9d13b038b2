"""benchmarks/epoch_rate.py: its fit and its ratios on rows whose answer is known by hand."""

from __future__ import annotations

import pytest

from tests._support.bundles import load_benchmark


def _row(tag: str, samples: int, batch: int, macs: int, step_s: float, macs_per_s: float
         ) -> dict:  # fmt: skip
    steps = -(-samples // batch)
    return {"tag": tag, "role": "fit", "samples": samples, "batch": batch, "macs": macs,
            "epoch_s": steps * step_s + samples * macs / macs_per_s}  # fmt: skip


def test_the_fit_recovers_the_constants_that_timed_the_rows():
    """Rows timed at exactly 2 ms a step and 1 G multiply-adds a second give those back."""
    rate = load_benchmark("epoch_rate")
    rows = [_row(t, s, b, m, 0.002, 1e9) for t, s, b, m in
            [("a", 1000, 32, 200), ("a", 1000, 32, 50_000), ("b", 20_000, 128, 1_000),
             ("b", 20_000, 128, 400_000), ("c", 300, 16, 2_000_000)]]  # fmt: skip
    step_s, macs_per_s = rate.fit(rows)
    assert step_s == pytest.approx(0.002, rel=1e-3)
    assert macs_per_s == pytest.approx(1e9, rel=1e-3)


def test_a_row_is_priced_by_hand():
    """1,000 samples in batches of 32 (32 steps) of 168 multiply-adds, measured 0.1 s: at 3 ms
    and 1.5 G/s the rate prices 0.096 + 0.000112 s; the rule before 1,000 × (0.2 ms + 168 /
    1.5 G) = 0.200112 s."""
    rate = load_benchmark("epoch_rate")
    row = {"tag": "t", "role": "check", "samples": 1000, "batch": 32, "macs": 168, "epoch_s": 0.1}
    new, old = rate.ratios([row], 0.003, 1.5e9)
    assert new[0] == pytest.approx(0.96112)
    assert old[0] == pytest.approx(2.00112)
    assert "| t | check | 1 | 1,000 | 32 | 0.100 |" in rate.table(
        [_row("a", 1000, 32, 200, 0.003, 1.5e9), _row("b", 9000, 128, 9000, 0.003, 1.5e9),
         row], (0.003, 1.5e9))  # fmt: skip
