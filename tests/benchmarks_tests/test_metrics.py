"""Known answers for the metrics of benchmark scripts that had no test of their own (issue 62,
item 6): each figure a table reports is computed here on inputs small enough to work out by
hand, so a table is only trusted once its metric gives these."""

from __future__ import annotations

import datetime as dt

import optuna
import pytest
from optuna.distributions import IntDistribution
from optuna.trial import TrialState, create_trial

from tests._support.bundles import load_benchmark


def test_multifidelity_reach_and_the_seed_averaged_curve():
    bench = load_benchmark("multifidelity")
    history = [(1.0, 0.2), (3.0, 0.5), (5.0, 0.7)]
    assert bench.reached(history, 0.5) == 3.0 and bench.reached(history, 0.8) is None
    assert bench.hv_at(history, 0.5) == 0.0 and bench.hv_at(history, 4.0) == 0.5
    # FIFO's mean final hypervolume 0.7; MOASHA's seed mean 0.5 at 1 s, 0.65 at 2 s, 0.8 at 3 s
    pairs = [
        {"fifo_hv": 0.6, "fifo_s": 10.0, "moasha_curve": [(1.0, 0.4), (2.0, 0.7)]},
        {"fifo_hv": 0.8, "fifo_s": 20.0, "moasha_curve": [(1.0, 0.6), (3.0, 0.9)]},
    ]
    target, fifo_s, reach = bench.mean_reach(pairs)
    assert (target, fifo_s, reach) == (pytest.approx(0.7), 15.0, 3)
    pairs[1]["moasha_curve"] = [(1.0, 0.6)]  # 0.65 at most: never
    assert bench.mean_reach(pairs)[2] is None


def test_generation_wait_busy_share_is_worker_seconds_over_the_span():
    """Two trials, 0-10 s and 0-5 s, on the benchmark's two workers: 15 of 20 worker-seconds."""
    bench = load_benchmark("generation_wait")
    assert bench.WORKERS == 2
    study = optuna.create_study()
    start = dt.datetime(2026, 11, 30, 12, 0, 0)
    for seconds in (10, 5):
        trial = create_trial(state=TrialState.COMPLETE, value=0.0, params={"x": 1},
                             distributions={"x": IntDistribution(0, 2)})  # fmt: skip
        trial.datetime_start = start
        trial.datetime_complete = start + dt.timedelta(seconds=seconds)
        study.add_trial(trial)
    assert bench.busy_share(study) == pytest.approx(0.75)


def test_gpu_check_counts_the_most_processes_at_once_and_reads_its_time_limit():
    bench = load_benchmark("gpu_check")
    # 0-10, 2-5 and 4-6 overlap at 4-5 s; one ending at 5 s and one starting then do not
    assert bench._most_at_once([(0, 10), (2, 5), (4, 6), (7, 8)]) == 3
    assert bench._most_at_once([(0, 5), (5, 9)]) == 1
    assert bench._most_at_once([]) == 0
    assert (bench._seconds("2m"), bench._seconds("90")) == (120.0, 90.0)


def test_ssn_accuracy_reading_says_who_won_and_when_the_gap_is_noise():
    bench = load_benchmark("ssn_accuracy")
    assert bench.pct([0.9]) == "90.00" and bench.pct([0.9, 0.92]) == "91.00 ± 1.41"
    shrunk = bench.Row("ConvNet shrunk", "10%", 900, test=[0.90, 0.92])
    wide = bench.Row("SSN inter", "10%", 1000, test=[0.95, 0.97])  # +5 points, sd 1.41
    close = bench.Row("SSN emb", "10%", 1000, test=[0.91, 0.93])  # +1 point
    said = bench.reading([shrunk, close, wide], 2)
    assert "at 10%, sharing beats shrinking: the best SSN (SSN inter" in said
    assert "a gap of +5.00 points; 2 of 2 upsamplers beat the shrunk model" in said
    said = bench.reading([shrunk, close], 2)  # 1 point against 2 × 1.41: within noise
    assert "no clear winner (the gap is within two seed standard deviations)" in said


def test_scheduler_scale_cluster_reading_from_the_slowest_decision():
    """At 10 ms a decision (the slowest objective count), 8 trials a node of 1 s epochs need
    48 × 8 / 1 = 384 decisions/s: 3.84 driver cores."""
    bench = load_benchmark("scheduler_scale")
    said = bench.cluster_reading({2: 5.0, 3: 10.0})
    assert "about 100 decisions/s at the slowest" in said
    assert "| 8 | 1 | 384.0 | 384 % |" in said and "| 1 | 60 | 0.8 | 1 % |" in said


def test_indicator_panel_tau_reads_throughput_as_a_cost():
    """Three models a < b < c on every indicator, throughput falling as the others rise (a
    costlier model serves fewer samples a second): every τ is 1 once throughput is negated; then
    latency made to rank c cheapest: τ(params, latency) = (1 concordant − 2 discordant) / 3."""
    import pandas as pd

    bench = load_benchmark("indicator_panel")
    rows = {ind: [1.0, 2.0, 3.0] for ind in bench.INDICATORS}
    rows["throughput"] = [30.0, 20.0, 10.0]
    frame = pd.DataFrame(rows, index=["a", "b", "c"])
    _, tau = bench.tau_table(frame)
    assert (tau.to_numpy() == 1.0).all()
    frame["latency_ms"] = [2.0, 3.0, 1.0]
    text, tau = bench.tau_table(frame)
    assert tau.loc["params", "latency_ms"] == pytest.approx(-1 / 3)
    assert "| latency | -0.33 | -0.33 | -0.33 | -0.33 | -0.33 | 1.00 | -0.33 | -0.33 |" in text
    assert "- latency_ms: c" in bench.disagreements(frame, tau)  # the cheapest by latency
    assert "- throughput: a" in bench.disagreements(frame, tau)  # the most samples a second


def test_engine_overhead_ratios_of_mean_times_and_its_target():
    """Launch 12 and 14 ms a trial (mean 13) against plain Ray Tune's 10 (in memory) and 13
    (SQLite): 1.3x, over the 1.2x target, and 1.0x on the same storage."""
    bench = load_benchmark("engine_overhead")
    times = {"npas launch": [0.012, 0.014], "plain Ray Tune + OptunaSearch": [0.010, 0.010],
             "plain Ray Tune + OptunaSearch, same SQLite storage": [0.013, 0.013]}  # fmt: skip
    ratio, sqlite, met = bench.ratios(times)
    assert (ratio, sqlite, met) == (pytest.approx(1.3), pytest.approx(1.0), False)
    times["npas launch"] = [0.011, 0.012]
    assert bench.ratios(times)[2] is True  # 1.15x: within the target
