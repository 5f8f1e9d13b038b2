"""Known answers for the timing tables of benchmark scripts that had no test (issue 62, item 6):
checkpoint overhead, decision writes, fused seeds, replay speed, SSN speed, streaming and
trial throughput. Each table's figures are computed here from hand-made measurements, and the
comments give the arithmetic, so a table is only trusted once its script gives these."""

from __future__ import annotations

import pytest

from tests._support.bundles import load_benchmark


def test_checkpoint_overhead_leaves_out_the_first_epoch_and_divides_the_medians():
    """Stamps 10 (start), 13, 15, 18 (epoch ends): epochs 2 and 3 took 2 and 3 s. Medians 12
    and 13 ms (the slow 30 ms epoch does not move them): 13 / 12 = 1.083x; 3,072 B = 3.0 KiB."""
    bench = load_benchmark("checkpoint_overhead")
    assert bench.epoch_seconds([10.0, 13.0, 15.0, 18.0]) == [2.0, 3.0]
    times = {False: [0.010, 0.012, 0.030], True: [0.011, 0.015, 0.013]}
    assert bench.row("tiny", times, 3072) == "| tiny | 12.0 | 13.0 | 1.083x | 3.0 |"


def test_decision_writes_rates_and_the_share_of_them_a_cluster_needs():
    """Writes of 1..19 ms and one of 100: median 10.5 ms, so 1 / 0.0105 = 95 writes/s (the
    mean, 14.5 ms, would say 69); 95th percentile at (20 + 1) · 0.95 = 19.95 of the sorted
    values, 19 + 0.95 · (100 − 19) = 95.95 ms. Three of 20 ms: 50 writes/s. A cluster needs
    48 N / T writes/s: 0.8, 4.8, 38.4 and 384; over 95.24/s that is 0.84, 5.04, 40.3 and
    403 %, over 50/s 1.6, 9.6, 76.8 and 768 %."""
    bench = load_benchmark("decision_writes")
    sqlite = [ms / 1000 for ms in range(1, 20)] + [0.1]
    measured = {"SQLite (file)": sqlite, "PostgreSQL": [0.02] * 3}
    rows, rate = bench.storage_rows(measured)
    assert rows[2:] == ["| SQLite (file) | 20 | 10.50 | 95.95 | 95 |",
                        "| PostgreSQL | 3 | 20.00 | 20.00 | 50 |"]  # fmt: skip
    assert rate == {"SQLite (file)": pytest.approx(1 / 0.0105), "PostgreSQL": pytest.approx(50)}
    assert bench.cluster_rows(rate) == [
        "| N trials per node | T s per epoch | decision writes/s needed | SQLite (file) busy | "
        "PostgreSQL busy |",
        "|---|---|---:|---:|---:|",
        "| 1 | 60 | 0.8 | 1 % | 2 % |",
        "| 1 | 10 | 4.8 | 5 % | 10 % |",
        "| 8 | 10 | 38.4 | 40 % | 77 % |",
        "| 8 | 1 | 384.0 | 403 % | 768 % |",
    ]


def test_fused_seeds_ratio_is_the_median_of_per_repeat_ratios():
    """Two seeds of 100 steps; sequential 4, 2, 3 s and fused 2, 1, 1 s in the same repeats:
    200 model-steps over the medians 3 and 1 s give 66.7 and 200/s, but the ratio is the
    median of 4/2, 2/1, 3/1 = 2, 2, 3: 2.00x (not 3 / 1), as the table says."""
    bench = load_benchmark("fused_seeds")
    seq_rate, fused_rate, ratios = bench.rates(2, 100, [4.0, 2.0, 3.0], [2.0, 1.0, 1.0])
    assert (seq_rate, fused_rate, ratios) == (pytest.approx(200 / 3), 200.0, [2.0, 2.0, 3.0])
    assert bench.table_row("sepnet-480", 480, 2, seq_rate, fused_rate, ratios) == (
        "| sepnet-480 {'stem': 6, 'width': 8, 'growth': 1.5} | 480 | 2 | 67 | 200 | 2.00x | "
        "2.00–3.00 |"
    )


def test_replay_speed_scales_to_twenty_seeds_and_averages_each_arm():
    """45 s for 10 seeds is 90 s for 20: over the 60 s target; 25 s is 50 s: met. Two replays
    starting 10 and 13 trials and deciding for 0.5 and 1 s: 11.5 trials, 0.75 s."""
    bench = load_benchmark("replay_speed")
    from search.lab._compare import Run

    assert bench.verdict(45.0, 10, 3) == (
        "**45.0 s** for 10 seeds x 3 arms; 20 seeds at that rate: 90 s (replays are "
        "independent; target: under 60 s: missed)."
    )
    assert bench.verdict(25.0, 10, 3).endswith("50 s (replays are independent; target: "
                                               "under 60 s: met).")  # fmt: skip
    assert bench.verdict(30.0, 10, 3).endswith("60 s: missed).")  # 60 s is not under 60 s
    runs = {"fifo": [Run("fifo", 0, [], {"started": 10, "decision_s": 0.5}),
                     Run("fifo", 1, [], {"started": 13, "decision_s": 1.0})]}  # fmt: skip
    assert bench.arm_rows(runs) == ["| fifo | 11.5 | 0.75 |"]


def test_ssn_speed_cells_are_median_mean_and_std_in_ms_and_the_ratio_of_medians():
    """SSN 1, 2, 6 ms: median 2.0, mean 3.0, std √((4 + 1 + 9) / 2) = √7 = 2.6; plain 1 ms
    each time: 1.0 (1.0 ± 0.0); ratio of medians 2 / 1 = 2.00x (above 1: the SSN is slower)."""
    bench = load_benchmark("ssn_speed")
    cells = bench.cells([0.001, 0.002, 0.006], [0.001, 0.001, 0.001])
    assert cells == "2.0 (3.0 ± 2.6) | 1.0 (1.0 ± 0.0) | 2.00x"


def test_streaming_epochs_from_elapsed_time_and_a_modes_row():
    """Ends 5, 11, 18 s after training began: epochs of 5, 6, 7 s. Memory's epochs 5, 6, 4, 7:
    median 5.5; stream's 6, 8, 6, 9: median 7, 7 / 5.5 = 1.27x; peak RSS the larger run's;
    accuracy the runs' mean, (0.95 + 0.96) / 2 = 0.955."""
    bench = load_benchmark("streaming")
    assert bench.epoch_seconds([5.0, 11.0, 18.0]) == [5.0, 6.0, 7.0]

    def run(epochs: list[float], rss: float, workers: float, accuracy: float) -> dict:
        return {"epoch_s": epochs, "rss_mib": rss, "workers_rss_mib": workers,
                "test_accuracy": accuracy}  # fmt: skip

    runs = {"memory": [run([5.0, 6.0], 800.4, 0.0, 0.95), run([4.0, 7.0], 810.0, 0.0, 0.96)],
            "stream": [run([6.0, 8.0], 700.0, 500.0, 0.95),
                       run([6.0, 9.0], 650.0, 520.0, 0.95)]}  # fmt: skip
    assert bench.mode_row("memory", runs) == (
        "| `memory` | 5.50 | 1.00x | 4.00–7.00 | 810 | 0 | 0.9550 |"
    )
    assert bench.mode_row("stream", runs) == (
        "| `stream` | 7.00 | 1.27x | 6.00–9.00 | 700 | 520 | 0.9500 |"
    )


def test_trial_throughput_speed_up_gflops_and_the_target_line():
    """Before: CPU 2 and 4 s (mean 3, std √2 = 1.41), wall 3 and 5 s; after: CPU 1 and 2 s (mean
    1.5, std 0.71), wall 2 and 3 s (mean 2.5). Speed-up 3 / 1.5 = 2.00x by CPU, 4 / 2.5 =
    1.60x by wall. 3 MFLOP a sample × 1,000 samples / 3 s = 1.0 GFLOP/s before, / 1.5 s = 2.0
    after. Target 2x: met at 2.00 exactly; 1.6 needs 2 / 1.6 = 1.25x more."""
    bench = load_benchmark("trial_throughput")
    runs = {"before": [{"wall_s": 3.0, "cpu_s": 2.0, "samples": 1000},
                       {"wall_s": 5.0, "cpu_s": 4.0, "samples": 1000}],
            "after": [{"wall_s": 2.0, "cpu_s": 1.0, "samples": 1000},
                      {"wall_s": 3.0, "cpu_s": 2.0, "samples": 1000}]}  # fmt: skip
    assert (bench.speed_up(runs), bench.speed_up(runs, "wall_s")) == (2.0, 1.6)
    assert bench.row("convnet d3 w3", 1234, 3e6, runs) == (
        "| convnet d3 w3 | 1,234 | 3.00 | 3.00 ± 1.41 | 4.00 ± 1.41 | 1.0 | 1.50 ± 0.71 | "
        "2.50 ± 0.71 | 2.0 | 2.00x (1.60x) |"
    )
    assert bench.target({"a": 2.0, "b": 1.6}) == [
        "Target: 2x by CPU time per epoch. Met in 1 of 2 rows (a); short: b 1.60x (needs "
        "1.25x more).",
        "",
    ]
    assert bench.target({}) == []
    # validation passes: 0.2 and 0.4 s at 256 (mean 0.3, std 0.141), 0.45 s at 1024: 1.50x
    cpu = {256: [0.2, 0.4], 1024: [0.45, 0.45]}
    assert bench.validation_row("x", cpu) == "| x | 0.300 ± 0.141 | 0.450 ± 0.000 | 1.50x |"
