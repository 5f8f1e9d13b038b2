"""The lab's tiny recorded table: a real `search launch` quick run (digits-quick preset: 16
trials of 8 epochs, TPE, FIFO, recorded on a 2-core CPU machine), shipped as its gzipped SQLite
storage so that the lab's tests replay real curves without training anything."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import optuna
import pytest

from search.lab import CurveTable

DB = Path(__file__).with_name("digits-quick.db.gz")


@pytest.fixture
def quick_run(tmp_path: Path) -> Path:
    """A run folder holding the quick run's storage (``runs/npas.db``), as `search launch`
    leaves it."""
    run = tmp_path / "runs"
    run.mkdir()
    with gzip.open(DB, "rb") as src, open(run / "npas.db", "wb") as dst:
        shutil.copyfileobj(src, dst)
    return run


@pytest.fixture
def quick_study(quick_run: Path) -> optuna.Study:
    return optuna.load_study(study_name="digits-quick", storage=f"sqlite:///{quick_run}/npas.db")


@pytest.fixture
def table(quick_study: optuna.Study) -> CurveTable:
    return CurveTable.from_study(quick_study)
