"""Known answers for the quality tables of benchmark scripts that had no test (issue 62, item
6): the lab's validation against real searches, the leaderboard's re-evaluation and the search
quality hypervolumes, each computed here on inputs small enough to work out by hand."""

from __future__ import annotations

import datetime as dt

import numpy as np
import optuna
import pytest
from optuna.trial import TrialState, create_trial

from tests._support.bundles import load_benchmark

T0 = dt.datetime(2026, 11, 30, 12, 0, 0)


def _trial(state: TrialState, start_s: float, end_s: float | None = None,
           values: list[float] | None = None, **attrs) -> optuna.trial.FrozenTrial:  # fmt: skip
    """A finished trial that started ``start_s`` and ended ``end_s`` seconds after T0."""
    trial = create_trial(state=state, values=values, user_attrs=attrs)
    trial.datetime_start = T0 + dt.timedelta(seconds=start_s)
    trial.datetime_complete = T0 + dt.timedelta(seconds=end_s if end_s is not None else start_s)
    return trial


def _study(*trials: optuna.trial.FrozenTrial) -> optuna.Study:
    study = optuna.create_study(directions=["maximize", "minimize"])
    study.add_trials(trials)
    return study


@pytest.fixture(scope="module")
def lab():
    """``lab_validation``, loaded once: its import of ``search.lab`` takes a second or two."""
    return load_benchmark("lab_validation")


@pytest.fixture(scope="module")
def quality():
    return load_benchmark("search_quality")


def test_lab_validation_percentiles_and_what_falls_inside(lab):
    """Replays 0, 1, ..., 20: the 5th percentile lies at 0.05 · 20 = index 1, the median at 10,
    the 95th at 19; of the real 0, 1, 19, 20, the two at the ends of the band are inside."""
    simulated = [{"started": v, "hv_end": v / 20} for v in range(21)]
    real = [{"started": v, "hv_end": 0.5} for v in (0, 1, 19, 20)]
    assert lab.figure_row("started", real, simulated) == (
        "| trials started | 1 / 10 / 19 | 0, 1, 19, 20 | 2/4 | +0 |",
        2,
    )
    assert lab.figure_row("hv_end", real[:1], simulated) == (
        "| hypervolume at the end | 0.0500 / 0.5000 / 0.9500 | 0.5000 | 1/1 | +0.0000 |",
        1,
    )
    # real 4 and 6 (mean 5) against a median of 10: the replay says 5 more than the real
    assert lab.figure_row("started", [{"started": 4}, {"started": 6}], simulated)[0].endswith(
        "| 2/2 | +5 |")  # fmt: skip
    assert lab.figure_row("hv_end", [{"hv_end": 0.75}], simulated)[0].endswith("| -0.2500 |")


def test_lab_validation_reads_a_real_search_on_the_tables_clock(lab):
    """A table of 2 epochs, its final values spanning accuracy 0-1 and params 100-300; a real
    search whose epochs ran twice as fast (ratio 0.5: a real second is 2 table seconds), read
    to a horizon of 60 table seconds. Trials (start, end in real s): a 0-20 (0.5, 200), a
    pruned one 5-12 after 1 epoch, b 10-50 (1.0, 100), c 40-70. Started by 60 table s: the
    first three (0, 10, 20); completed by then: a only (40; b at 100); a normalised is
    (1 − 0.5, (200 − 100) / 200) = (0.5, 0.5): hypervolume (1.1 − 0.5)² = 0.36. At ratio 1:
    c starts at 40, b completes at 50 and dominates all: 1.1² = 1.21."""
    from search.lab import CurveTable
    from search.lab._table import CurveRow

    def row(acc: float, params: float) -> CurveRow:
        return CurveRow(0, {}, [[acc, params]] * 2, [], 0.0, [1.0, 1.0], 0.0)

    table = CurveTable("t", [("accuracy", "maximize"), ("params", "minimize")], {},
                       [row(1.0, 100.0), row(0.0, 300.0)])  # fmt: skip

    def curve(epochs: int, acc: float, params: float) -> list[dict]:
        return [{"epoch": e, "accuracy": acc, "params": params} for e in range(1, epochs + 1)]

    study = _study(
        _trial(TrialState.COMPLETE, 0, 20, [0.5, 200.0], curve=curve(2, 0.5, 200.0)),
        _trial(TrialState.PRUNED, 5, 12, curve=curve(1, 0.2, 200.0)),
        _trial(TrialState.COMPLETE, 10, 50, [1.0, 100.0], curve=curve(2, 1.0, 100.0)),
        _trial(TrialState.COMPLETE, 40, 70, [0.0, 300.0], curve=curve(2, 0.0, 300.0)),
    )
    got = lab.real_figures(study, table, 60.0, 0.5)
    assert got == {"started": 3, "completed": 1, "first_s": 40.0, "hv_end": pytest.approx(0.36)}
    got = lab.real_figures(study, table, 60.0, 1.0)
    assert got == {"started": 4, "completed": 2, "first_s": 20.0, "hv_end": pytest.approx(1.21)}


def test_lab_validation_retimes_each_row_by_the_fitted_power_law(lab):
    """Real epochs that follow 0.5 · s^0.5 exactly (s: the nearest row's recorded seconds an
    epoch): the fit is a = ln 0.5, b = 0.5, so a row of 1 s epochs takes 0.5 s, one of 4 s
    epochs 1 s (0.5 · 2), each epoch scaled by its row's factor (0.5 and 0.25)."""
    import math

    from search.lab import CurveTable
    from search.lab._table import CurveRow

    rows = [CurveRow(0, {}, [[0.5, 1.0]] * 2, [], 0.0, [0.8, 1.2], 0.0),
            CurveRow(1, {}, [[0.5, 1.0]] * 2, [], 0.0, [4.0, 4.0], 0.0)]  # fmt: skip
    table = CurveTable("t", [("accuracy", "maximize"), ("params", "minimize")], {}, rows)
    pairs = np.array([(s, 0.5 * s**0.5) for s in (0.5, 1.0, 4.0, 9.0)])
    out, (a, b) = lab.retimed(table, pairs)
    assert a == pytest.approx(math.log(0.5)) and b == pytest.approx(0.5)
    assert out.rows[0].seconds == pytest.approx([0.4, 0.6])
    assert out.rows[1].seconds == pytest.approx([1.0, 1.0])
    assert table.rows[0].seconds == [0.8, 1.2]  # the table itself is left as it was


def test_lab_validation_start_cost_is_the_workers_time_no_trial_trained(lab):
    """Two workers. Search one: a 0-10 s (trained 6 s), b 2-12 s (trained 8 s): 2 × 12 s of
    workers, 14 s training, 10 s left over 2 trials = 5 s a trial. Search two: one trial 0-2 s
    that trained 3 s (its epochs ran beside another's start): 2 × 2 − 3 = 1 s. The median of
    5 and 1: 3 s."""

    def curve(seconds: float) -> list[dict]:
        return [{"epoch": 1, "train_time_s": seconds / 2}, {"epoch": 2, "train_time_s": seconds}]

    one = _study(_trial(TrialState.COMPLETE, 0, 10, [0.5, 1.0], curve=curve(6.0)),
                 _trial(TrialState.PRUNED, 2, 12, curve=curve(8.0)))  # fmt: skip
    two = _study(_trial(TrialState.COMPLETE, 0, 2, [0.5, 1.0], curve=curve(3.0)))
    assert lab.start_cost([one], 2) == pytest.approx(5.0)
    assert lab.start_cost([one, two], 2) == pytest.approx(3.0)
    # a third trial of search one, paused at its end (RUNNING: started at 4 s, no end) after
    # training 2 s: 24 − 16 = 8 s over 3 trials
    paused = create_trial(state=TrialState.RUNNING, user_attrs={"curve": curve(2.0)})
    paused.datetime_start = T0 + dt.timedelta(seconds=4)
    one.add_trial(paused)
    assert lab.start_cost([one], 2) == pytest.approx(8.0 / 3)
    with pytest.raises(ValueError, match="no trial ended"):
        lab.start_cost([_study(paused)], 2)


def test_lab_validation_writes_its_table_again_from_its_figures(lab, tmp_path, monkeypatch):
    """--from-json renders the same table from the saved figures, with the commit and minutes
    of the run that measured them, not of the rendering."""
    import sys

    from search.lab import CurveTable
    from search.lab._table import CurveRow

    rows = [CurveRow(0, {}, [[a, 100.0]] * 2, [], 0.0, [1.0, 1.0], 0.0) for a in (0.0, 1.0)]
    path = CurveTable("t", [("accuracy", "maximize"), ("params", "minimize")], {}, rows).save(
        tmp_path / "t.json.gz")  # fmt: skip
    results = tmp_path / "validation.md"
    argv = ["lab_validation.py", "--table", str(path), "--results", str(results)]
    monkeypatch.setattr(sys, "argv", argv)
    simulated = [{"started": v, "completed": 1, "first_s": 3.0, "hv_end": 0.5} for v in range(21)]
    real = [{"started": 9, "completed": 1, "first_s": 4.0, "hv_end": 0.4}]
    namespace = lab.argparse.Namespace(searches=1, optimiser="tpe", type="stopping",
                                       workers=2, budget=40, seeds=21, table=path,
                                       results=results)  # fmt: skip
    lab.write(namespace, CurveTable.load(path), 60.0, 1.0, real, simulated, 12.0, "abc1234")
    first = results.read_text()
    assert "at abc1234 in 12 min" in first and "| 1/1 | +1 |" in first
    results.unlink()
    monkeypatch.setattr(sys, "argv", [*argv, "--from-json", "--searches", "1", "--optimiser",
                                      "tpe", "--seeds", "21"])  # fmt: skip
    lab.main()
    assert results.read_text() == first


def test_leaderboard_check_accuracy_and_the_half_image_tolerance():
    """Four labels 0-3; one output right on three (0.75), one on all four (1.0). Against a
    recorded 0.75 only the first agrees; 0.8 is within half an image (0.125) of 0.75, 0.875
    exactly half an image away is not. Preprocessing: raw / 102 − 0.5 (pixel scale 255, mean
    0.2, std 0.4) maps 0, 102, 255 to −0.5, 0.5, 2.0."""
    bench = load_benchmark("leaderboard_check")
    labels = np.array([0, 1, 2, 3])
    three, four = np.eye(4)[[0, 1, 2, 0]], np.eye(4)
    assert bench.compare([three, four], labels, 0.75) == ([0.75, 1.0], False)
    assert bench.compare([three, three], labels, 0.75) == ([0.75, 0.75], True)
    assert bench.compare([three], labels, 0.8)[1] is True
    assert bench.compare([three], labels, 0.875)[1] is False
    x = bench.normalise(np.array([0.0, 102.0, 255.0], np.float32),
                        {"multiply": [1 / (255 * 0.4)], "subtract": [0.2 / 0.4]})  # fmt: skip
    assert x.dtype == np.float32 and x.tolist() == pytest.approx([-0.5, 0.5, 2.0], abs=1e-6)


def test_search_quality_hypervolume_per_checkpoint_on_common_bounds(quality):
    """Accuracy (max) and params (min); the feasible trials of both runs span accuracy 0-1
    and params 100-500, so a point normalises to (1 − acc, (params − 100) / 400), reference
    1.1. Run A: (0.5, 100) → (0.5, 0): 0.6 · 1.1 = 0.66; then (1.0, 300) → (0, 0.5): 0.66 +
    0.66 − 0.6 · 0.6 = 0.96; then an infeasible (1.0, 50) adds nothing (nor widens the
    bounds). Run B: trial 0 failed, so nothing among the first 1: 0; (0.0, 500) → (1, 1):
    0.1² = 0.01; (1.0, 100) → (0, 0): 1.1² = 1.21."""
    feasible, infeasible = {"feasible": True}, {"feasible": False}
    run_a = _study(_trial(TrialState.COMPLETE, 0, 1, [0.5, 100.0], **feasible),
                   _trial(TrialState.COMPLETE, 0, 1, [1.0, 300.0], **feasible),
                   _trial(TrialState.COMPLETE, 0, 1, [1.0, 50.0], **infeasible))  # fmt: skip
    run_b = _study(_trial(TrialState.FAIL, 0),
                   _trial(TrialState.COMPLETE, 0, 1, [0.0, 500.0], **feasible),
                   _trial(TrialState.COMPLETE, 0, 1, [1.0, 100.0], **feasible))  # fmt: skip
    objectives = [("accuracy", "maximize"), ("params", "minimize")]
    hv, bounds = quality.table({("tpe", 0): run_a, ("tpe", 1): run_b}, objectives, [1, 2, 3])
    assert bounds == {"accuracy": (0.0, 1.0), "params": (100.0, 500.0)}
    assert hv[("tpe", 0)] == pytest.approx([0.66, 0.96, 0.96])
    assert hv[("tpe", 1)] == pytest.approx([0.0, 0.01, 1.21])


def test_search_quality_rows_mean_and_std_over_seeds(quality):
    """Seeds 0.66 and 0 after 1 trial: mean 0.33, std 0.66 / √2 = 0.4667; 0.96 and 0.01:
    0.485 ± 0.95 / √2 = 0.6718; 0.96 and 1.21: 1.085 ± 0.25 / √2 = 0.1768. Searches of 1 and 3
    minutes: 2.0. One seed alone has no spread: ± 0."""
    hv = {("tpe", 0): [0.66, 0.96, 0.96], ("tpe", 1): [0.0, 0.01, 1.21],
          ("random", 0): [0.5, 0.5, 0.5]}  # fmt: skip
    seconds = {("tpe", 0): 60.0, ("tpe", 1): 180.0, ("random", 0): 30.0}
    failed = {("tpe", 0): 0, ("tpe", 1): 1, ("random", 0): 0}
    assert quality.rows(["tpe", "random"], [1, 2, 3], hv, seconds, failed) == [
        "| optimiser | HV after 1 | HV after 2 | HV after 3 | per seed after 3 | minutes per "
        "search | failed trials |",
        "|---|---|---|---|---|---|---|",
        "| tpe | 0.3300 ± 0.4667 | 0.4850 ± 0.6718 | 1.0850 ± 0.1768 | 0.960, 1.210 | 2.0 | 1 |",
        "| random | 0.5000 ± 0.0000 | 0.5000 ± 0.0000 | 0.5000 ± 0.0000 | 0.500 | 0.5 | 0 |",
    ]
