"""The curve recorder on the generated signal set: a tiny record (three configurations of the
space the unaided search derives, one noise twin) becomes a curve table the lab loads, with
every epoch's seconds, the load average in its conditions and its storage archived."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from objectives.datasets import DATASETS
from search.lab import CurveTable, ReplaySpec, replay

pytestmark = pytest.mark.slow  # two real searches on Ray

ROOT = Path(__file__).resolve().parents[2]


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
