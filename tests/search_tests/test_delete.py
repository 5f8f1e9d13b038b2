"""``search delete``: one search out of its storage, read back through Optuna's own API; never
without a yes, never while a launch runs it, never the run folder's files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from search.cli import main
from search.record._lease import Lease
from search.record._storage import open_storage
from tests.search_tests.studies import ROWS, stored_study

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def run(tmp_path: Path) -> Path:
    for name in ("keep", "gone"):
        stored_study(f"sqlite:///{tmp_path}/npas.db", name, ROWS)
    (tmp_path / "gone" / "trials").mkdir(parents=True)
    (tmp_path / "gone" / "trials" / "model.pt").write_bytes(b"x" * 2048)
    return tmp_path


def _names(run: Path) -> list[str]:
    return sorted(s.study_name for s in optuna.get_all_study_summaries(f"sqlite:///{run}/npas.db"))


def test_delete_with_yes_removes_that_search_only_and_names_the_files_left(run, capsys):
    assert main(["delete", "--run", str(run), "--name", "gone", "--yes"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100  # wrapped at spaces
    out = " ".join(out.split())
    assert out.startswith("deleted search 'gone' (6 trial(s)) from sqlite:///")
    assert f"yours to remove: {run / 'gone'}" in out
    assert _names(run) == ["keep"] and (run / "gone" / "trials" / "model.pt").exists()


def test_without_a_terminal_or_a_yes_nothing_is_deleted(run):
    done = subprocess.run([sys.executable, "-m", "search", "delete", "--run", str(run), "--name",
                           "gone"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          cwd=ROOT, timeout=120)  # fmt: skip
    assert done.returncode == 2 and "--yes: missing" in done.stderr, done.stderr
    assert _names(run) == ["gone", "keep"]


def test_a_no_deletes_nothing(run, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda question: "n")
    assert main(["delete", "--run", str(run), "--name", "gone"]) == 1
    assert capsys.readouterr().out == "nothing deleted\n" and _names(run) == ["gone", "keep"]


def test_a_search_a_launch_runs_or_one_not_there_is_refused(run, capsys):
    lease = Lease(open_storage(f"sqlite:///{run}/npas.db").engine, "gone")
    lease.acquire()
    try:
        assert main(["delete", "--run", str(run), "--name", "gone", "--yes"]) == 1
        assert "SearchLocked" in capsys.readouterr().err
    finally:
        lease.release()
    assert main(["delete", "--run", str(run), "--name", "gon", "--yes"]) == 2
    assert "(did you mean 'gone'?)" in capsys.readouterr().err
    assert _names(run) == ["gone", "keep"]
