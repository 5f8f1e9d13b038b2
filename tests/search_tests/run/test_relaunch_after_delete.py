"""A search launched again under the name of one deleted from its storage (`search delete` keeps
the run folder's files, and says so): the new trials 0, 1, … would write their `model.pt`
where the deleted search's trials 0, 1, … left theirs. The launch moves that trial folder
aside, saying where, and no file of it is overwritten (before, trial 0's model was replaced)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests._support.configs import CLI_CONFIG
from tests._support.notes import notes

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


def test_a_relaunch_after_delete_keeps_the_deleted_search_trial_files(tmp_path):
    run = tmp_path / "run"
    old = run / "again" / "trials" / "0"  # what a deleted search's trial 0 left
    old.mkdir(parents=True)
    (old / "model.pt").write_bytes(b"the deleted search's trial 0")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({**CLI_CONFIG, "name": "again", "trials": 1}),
                      encoding="utf-8")  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "search", "launch", str(config), "--out",
                           str(run), "--address", "local", "--quiet"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (aside,) = [p for p in (run / "again").iterdir() if p.name.startswith("trials-before-")]
    assert (aside / "0" / "model.pt").read_bytes() == b"the deleted search's trial 0"
    assert f"moved to {aside}" in " ".join(notes(done.stderr)), done.stderr
    assert (run / "again" / "trials" / "0" / "model.pt").stat().st_size > 100  # the new one
