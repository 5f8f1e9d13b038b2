"""The curve recorder on the generated signal set: a tiny record (three configurations of the
space the unaided search derives, one noise twin) becomes a curve table the lab loads, with
every epoch's seconds, the load average in its conditions and its storage archived."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import optuna
import pytest

from benchmarks.record_curves import decontended
from objectives.datasets import DATASETS
from search.lab import CurveRow, CurveTable, ReplaySpec, replay

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # two real searches on Ray
def test_a_waves_record_is_a_table_the_lab_replays(tmp_path):
    cmd = [sys.executable, str(ROOT / "benchmarks" / "record_curves.py"), "--dataset", "waves",
           "--trials", "3", "--noise", "1", "--epochs", "3", "--train-size", "60",
           "--val-size", "30", "--out", str(tmp_path)]  # fmt: skip
    subprocess.run(cmd, check=True, cwd=ROOT, timeout=600)
    table = CurveTable.load(tmp_path / "waves-r3.json.gz")
    assert 1 <= len(table.rows) <= 3 and table.epochs == 3 and len(table.noise) <= 1
    assert {row.point["family"] for row in table.rows} <= {"conv1d", "sepconv1d", "resnet1d"}
    assert all(len(row.seconds) == 3 and min(row.seconds) > 0 for row in table.rows)
    assert "load average" in table.conditions["cpu"]
    assert "--dataset waves" in table.conditions["recorded_by"]
    with gzip.open(tmp_path / "waves-r3.db.gz", "rb") as src:
        (tmp_path / "copy.db").write_bytes(src.read())
    study = optuna.load_study(study_name="waves-r3", storage=f"sqlite:///{tmp_path / 'copy.db'}")
    assert len(study.trials) == 3  # the archive is the record, read by Optuna itself
    try:  # the replay loads the table's config, which declares its dataset in this process
        # a horizon of every recorded trial's time: FIFO on 2 workers ends at least one,
        # however slowly a loaded machine recorded them
        horizon = sum(map(table.trial_s, table.rows))
        result = replay(table, ReplaySpec("random", "fifo", workers=2), seed=0,
                        horizon_s=horizon, charge_decisions=False)  # fmt: skip
    finally:
        DATASETS._entries.pop("waves", None)  # other tests see the built-ins only
    assert result.completed


def test_rows_recorded_beside_other_work_are_rescaled_by_the_later_rows_fit():
    """Epoch seconds that follow family, depth and params (a power law) in every row, 1.5 times
    as long in the first 40 rows: the factor found is 1.5 and those rows come back to the law;
    the later rows are untouched."""
    rng = np.random.default_rng(0)

    def row(number: int) -> CurveRow:
        family, depth = ("convnet", "scs")[number % 2], 2 + number % 3
        params = int(rng.integers(300, 5000))
        law = 0.01 * params**0.4 * (1.3 if family == "scs" else 1.0) * (1 + 0.2 * depth)
        slow = 1.5 if number < 40 else 1.0
        point = {"family": family, f"{family}.depth": depth}
        return CurveRow(number=number, point=point, values=[[0.5, params]] * 3, at_chance=[],
                        violation=0.0, seconds=[law * slow] * 3, overhead_s=0.1,
                        metrics={"params": params})  # fmt: skip

    rows = [row(n) for n in range(120)]
    table = CurveTable(name="t", objectives=[("accuracy", "maximize"), ("params", "minimize")],
                       config={}, rows=rows)  # fmt: skip
    cleaned, factor = decontended(table, set(range(40)))
    assert factor == pytest.approx(1.5)
    for before, after in zip(rows, cleaned.rows, strict=True):
        expected = before.seconds[0] / (1.5 if before.number < 40 else 1.0)
        assert after.seconds == pytest.approx([expected] * 3)
    assert decontended(table, set())[1] == 1.0  # nothing contended: nothing changed
