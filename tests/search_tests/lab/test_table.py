"""A curve table read from a real study, saved and loaded whole; bad input refused."""

from __future__ import annotations

import gzip
from pathlib import Path

import optuna
import pytest

from search.lab import CurveTable
from spaces._errors import ConfigError


def test_every_full_trial_becomes_a_row_with_its_curve(quick_study, table):
    trials = quick_study.trials
    assert len(table.rows) == 16 and table.epochs == 8
    assert table.names == ["accuracy", "params", "flops_infer"]
    for row in table.rows:
        trial = trials[row.number]
        assert row.point == trial.params
        assert row.values[-1] == pytest.approx(trial.values)  # the last epoch is the result
        curve = trial.user_attrs["curve"]
        assert [v[0] for v in row.values] == [p["accuracy"] for p in curve]
        # epoch seconds add up to the recorded training time; the rest is overhead
        assert sum(row.seconds) == pytest.approx(curve[-1]["train_time_s"])
        duration = (trial.datetime_complete - trial.datetime_start).total_seconds()
        assert sum(row.seconds) + row.overhead_s == pytest.approx(duration)
        assert row.feasible and row.metrics["feasible"] is True


def test_save_and_load_keep_everything(table, tmp_path):
    table.overheads = {"pause_s": 0.5, "resume_s": 1.25}
    table.conditions = {"cpu": "test"}
    path = table.save(tmp_path / "t.json.gz")
    assert CurveTable.load(path) == table
    assert not list(tmp_path.glob("*.tmp"))


def test_bounds_are_lo_hi_over_the_feasible_final_values(table):
    bounds = table.bounds()
    finals = table.final_values()
    assert bounds["accuracy"] == (finals[:, 0].min(), finals[:, 0].max())
    assert all(lo < hi for lo, hi in bounds.values())


@pytest.mark.parametrize(
    "content",
    [b"not gzip", gzip.compress(b"[1, 2]", mtime=0), gzip.compress(b'{"format": 99}', mtime=0)],
    ids=["not gzip", "a list", "format 99"],
)
def test_a_file_that_is_no_table_is_refused(tmp_path, content):
    path = tmp_path / "bad.json.gz"
    path.write_bytes(content)
    refused = r"bad\.json\.gz: (not a curve table|curve table format)"
    with pytest.raises(ConfigError, match=refused):
        CurveTable.load(path)


def test_a_study_that_is_not_npas_or_has_no_curves_is_refused(tmp_path: Path):
    plain = optuna.create_study(study_name="plain")
    with pytest.raises(ConfigError, match="'plain' is not an npas search"):
        CurveTable.from_study(plain)
    plain.set_user_attr("config", {"train": {"epochs": 3}})
    plain.set_user_attr("objectives", [["accuracy", "maximize"]])
    plain.add_trial(optuna.trial.create_trial(value=0.5))
    with pytest.raises(ConfigError, match="no trial that trained all 3 epochs"):
        CurveTable.from_study(plain)
