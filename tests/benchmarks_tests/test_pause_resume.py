"""The pause/resume measurement on a curve table's own search (``--table``): real Ray Tune
trials of the table's recorded config and row, each paused once and resumed, their costs
written beside the preset's under the table's name, where the curve recorder reads them."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from search.lab import CurveTable
from tests._support.bundles import load_benchmark

pytestmark = pytest.mark.slow  # real Ray Tune trials

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "tests" / "search_tests" / "lab" / "digits-quick.db.gz"


def test_pause_and_resume_are_measured_on_a_tables_own_search(tmp_path, monkeypatch):
    with gzip.open(QUICK, "rb") as src, open(tmp_path / "npas.db", "wb") as dst:
        shutil.copyfileobj(src, dst)
    study = optuna.load_study(study_name="digits-quick", storage=f"sqlite:///{tmp_path}/npas.db")
    table = CurveTable.from_study(study)
    table.save(tmp_path / "digits-quick.json.gz")
    cmd = [sys.executable, str(ROOT / "benchmarks" / "pause_resume.py"), "--table",
           str(tmp_path / "digits-quick.json.gz"), "--row", "1", "--repeats", "1",
           "--epochs", "3", "--pause-at", "1", "--out", str(tmp_path)]  # fmt: skip
    subprocess.run(cmd, check=True, cwd=ROOT, timeout=600)
    measured = json.loads((tmp_path / "pause_resume-digits-quick.json").read_text())
    assert measured["pause_s"] > 0 and measured["resume_s"] > 0
    assert "curve table digits-quick.json.gz, its row 1" in measured["conditions"]["config"]
    assert json.dumps(table.rows[1].point) in measured["conditions"]["config"]
    recorder = load_benchmark("record_curves")
    monkeypatch.setattr(recorder, "__file__", str(tmp_path / "record_curves.py"))
    (tmp_path / "results").mkdir()
    shutil.copy(tmp_path / "pause_resume-digits-quick.json", tmp_path / "results")
    assert recorder.pause_resume("digits-quick") == {
        "pause_s": measured["pause_s"], "resume_s": measured["resume_s"]}  # fmt: skip
    assert recorder.pause_resume("another") == {}  # neither its own nor the preset's
