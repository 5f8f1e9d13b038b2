"""A finished search's SQLite storage (write-ahead logging, as a launch leaves it) in a folder
that cannot be written, a real read-only bind mount: every reading command reads it (SQLite
needs to create the log's index to open it otherwise: "unable to open database file")."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import optuna
import pytest

from search.cli import main
from search.record._storage import open_storage
from tests.search_tests.disks import bound_read_only

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _finished(run: Path, *, keep_log: bool) -> None:
    """A study of three trials written as a launch writes (WAL); with ``keep_log`` its log is
    left unfolded, with its index, as by a launch killed before it closed its storage."""
    run.mkdir()
    storage = open_storage(f"sqlite:///{run / 'npas.db'}")
    study = optuna.create_study(storage=storage, study_name="done")
    holder = sqlite3.connect(run / "npas.db")  # a reader that keeps SQLite from folding the log
    holder.execute("PRAGMA wal_autocheckpoint=0")
    study.optimize(lambda t: t.suggest_float("a", 0, 1), n_trials=3)
    if keep_log:
        copy = run.with_name("copy")
        copy.mkdir()
        for name in ("npas.db", "npas.db-wal", "npas.db-shm"):
            (copy / name).write_bytes((run / name).read_bytes())
        storage.engine.dispose()
        holder.close()
        for child in run.iterdir():
            child.unlink()
        for child in copy.iterdir():
            child.rename(run / child.name)
        assert (run / "npas.db-wal").stat().st_size > 0
        return
    holder.close()
    storage.engine.dispose()
    assert sorted(p.name for p in run.iterdir()) == ["npas.db"]  # the log folded in


@pytest.mark.parametrize("keep_log", [False, True], ids=["log folded", "log left"])
def test_every_reading_command_reads_a_read_only_finished_storage(tmp_path, capsys, keep_log):
    run = tmp_path / "run"
    _finished(run, keep_log=keep_log)
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    with bound_read_only(run):
        assert main(["status", "--run", str(run)]) == 0
        assert "done" in capsys.readouterr().out
        assert main(["trials", "--run", str(run), "--format", "csv"]) == 0
        assert len(capsys.readouterr().out.strip().splitlines()) == 1 + 3
        assert main(["report", "--run", str(run), "--out", str(tmp_path / "report")]) == 0
        assert (tmp_path / "report" / "report.html").is_file()
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before
