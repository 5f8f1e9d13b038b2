"""A storage that stops being the one a launch opened: its SQLite file deleted or replaced
while a real search runs, or its study id naming another study (SQLite and PostgreSQL).

Before, the launch's open connections went on writing to the deleted file, every trial started
and trained, a new empty ``npas.db`` appeared at the path, and the launch ended saying the
trials written so far were kept. Now the launch stops at once, creates nothing, and says what
is recorded where.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import pytest
import sqlalchemy
import yaml

from search.errors import StorageLost
from search.record._identity import StorageIdentity
from search.record._storage import open_storage
from search.record._study import open_study
from search.record._writer import StudyWriter, in_memory_copy
from search.run._ray_session import writers_of
from tests._support.searches import LONG
from tests._support.waiting import wait_until

optuna.logging.set_verbosity(optuna.logging.WARNING)

ROOT = Path(__file__).resolve().parents[3]


def _open(url: str) -> tuple[optuna.Study, StudyWriter]:
    """A study "s" and its writer, fenced by the storage's identity, as a launch opens them."""
    storage = open_storage(url)
    identity = StorageIdentity(storage.engine)
    study = open_study(name="s", storage=storage, sampler=optuna.samplers.RandomSampler(),
                       config={"name": "s"}, objectives=[("accuracy", "maximize")],
                       constraints=[], optimiser="random")  # fmt: skip
    memory = in_memory_copy(study, optuna.samplers.RandomSampler(seed=0))
    return memory, StudyWriter(storage, "s", fences=[identity.check])


def _start(memory: optuna.Study, writer: StudyWriter) -> None:
    trial = memory.ask()
    trial.suggest_int("width", 4, 64)
    writer.started(memory._storage.get_trial(trial._trial_id))


def _trials_in(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        return db.execute("SELECT count(*) FROM trials").fetchone()[0]


def test_a_deleted_sqlite_file_is_lost_and_never_created_again(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    memory, writer = _open(f"sqlite:///{path}")
    _start(memory, writer)
    for file in tmp_path.glob("s.db*"):
        file.unlink()
    with pytest.raises(StorageLost, match=f"its storage file {path} is gone"):
        _start(memory, writer)
    engine = writer.storage.engine
    engine.dispose()  # every later connection is a new one: none creates the file
    with pytest.raises(sqlalchemy.exc.OperationalError, match="unable to open"):
        engine.connect().close()
    with pytest.raises(StorageLost):  # the error is kept: nothing is written any more
        writer.confirm()
    assert not list(tmp_path.glob("s.db*"))


def test_a_replaced_sqlite_file_is_lost_and_left_as_it_is(tmp_path: Path) -> None:
    """A copy of the same database put in its place (a backup restored): same study, same
    ids, another file; nothing is written to it."""
    path = tmp_path / "s.db"
    memory, writer = _open(f"sqlite:///{path}")
    _start(memory, writer)
    copy = tmp_path / "copy.db"
    with (
        contextlib.closing(sqlite3.connect(path)) as src,
        contextlib.closing(sqlite3.connect(copy)) as dst,
    ):
        src.backup(dst)
        dst.execute("PRAGMA journal_mode=DELETE")  # a file of its own, readable as it is
    for file in tmp_path.glob("s.db-*"):
        file.unlink()
    os.replace(copy, path)
    with pytest.raises(StorageLost, match=f"its storage file {path} was replaced"):
        _start(memory, writer)
    assert _trials_in(path) == 1


def test_a_wal_removed_while_it_is_checked_is_no_write_error(tmp_path, monkeypatch) -> None:
    """A backup restored over the database takes its -wal away; removed between the look for
    it and the test of its write access, it was called read-only (StorageWriteError, CI saw
    it) where the next write names the replaced file."""
    path = tmp_path / "s.db"
    storage = open_storage(f"sqlite:///{path}")
    identity = StorageIdentity(storage.engine)
    wal = Path(f"{path}-wal")
    wal.write_bytes(b"")
    access = os.access

    def removed_first(target: str, mode: int) -> bool:
        if str(target) == str(wal) and wal.exists():
            wal.unlink()  # the restore, at the worst moment
        return access(target, mode)

    monkeypatch.setattr(os, "access", removed_first)
    identity.check()  # nothing to say: the file is the one opened, the -wal is gone
    assert not wal.exists()


def test_a_file_replaced_between_the_check_and_the_write_is_named_lost(tmp_path: Path) -> None:
    """The file changes after the fences passed and before the write (CI saw it: the write
    then failed with SQLite's bare "disk I/O error"): the writer asks the fences again, and
    the error is theirs (the file was replaced), not the database's."""
    path = tmp_path / "s.db"
    memory, writer = _open(f"sqlite:///{path}")
    _start(memory, writer)
    armed = [True]

    def replace_after_the_check() -> None:
        if armed:
            armed.clear()
            for file in tmp_path.glob("s.db*"):
                file.unlink()
            path.write_bytes(b"not a database" * 100)
            writer.storage.engine.dispose()

    writer.fences.append(replace_after_the_check)
    with pytest.raises(StorageLost, match=f"its storage file {path} was replaced") as caught:
        _start(memory, writer)
    assert isinstance(caught.value.__cause__, sqlalchemy.exc.DatabaseError)
    assert writer.error is caught.value


def test_a_study_id_naming_another_study_is_lost(storage_url: str) -> None:
    """The database was swapped under the launch (PostgreSQL: dropped and restored; here the
    study renamed): the write's own transaction notices, and writes nothing."""
    memory, writer = _open(storage_url)
    _start(memory, writer)
    with writer.storage.engine.begin() as db:
        db.execute(sqlalchemy.text("UPDATE studies SET study_name = 'other'"))
    with pytest.raises(StorageLost, match=r"is study 'other' now, not this search"):
        _start(memory, writer)
    with writer.storage.engine.connect() as db:
        assert db.execute(sqlalchemy.text("SELECT count(*) FROM trials")).scalar_one() == 1


# -- the real fault: a search whose SQLite file is deleted or replaced while it runs -------------

TRIALS = 40
CONFIG = {**LONG, "name": "gone", "trials": TRIALS, "train": {"epochs": 1, "batch_size": 64}}


def _recorded(path: Path) -> int:
    """COMPLETE trials in the search's storage (0 while it cannot be read)."""
    reader = f"file:{path}?mode=ro"
    with (
        contextlib.suppress(sqlite3.Error),
        contextlib.closing(sqlite3.connect(reader, uri=True)) as db,
    ):
        return db.execute("SELECT count(*) FROM trials WHERE state = 'COMPLETE'").fetchone()[0]
    return 0


def _trial_folders(out: Path) -> set[str]:
    folder = out / "ray" / CONFIG["name"]
    return {p.name for p in folder.iterdir() if p.is_dir()} if folder.is_dir() else set()


def _launch(out: Path, ray_tmp: Path) -> subprocess.Popen:
    """``search launch`` of CONFIG as a user runs it (its Ray's files under ``ray_tmp``),
    returned once two trials are recorded."""
    config = out / "gone.yaml"
    config.write_text(yaml.safe_dump(CONFIG), encoding="utf-8")
    command = [sys.executable, "-m", "search", "launch", str(config), "--out", str(out),
               "--address", "local", "--quiet"]  # fmt: skip
    proc = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "RAY_TMPDIR": str(ray_tmp)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    wait_until(lambda: _recorded(out / "npas.db") >= 2 or proc.poll() is not None, 180,
               interval_s=0.2, raise_on_timeout=False)  # fmt: skip
    if proc.poll() is not None or _recorded(out / "npas.db") < 2:
        proc.kill()
        raise AssertionError(f"the search did not get going: {proc.communicate()[1][-3000:]}")
    return proc


def _nothing_of_ray_left(ray_tmp: Path) -> None:
    """No process has a file of the launch's Ray open any more (Ray's last ones may take a
    moment to go); its folder is removed."""
    try:
        left = writers_of(ray_tmp)
        for _ in range(50):
            if not left:
                break
            time.sleep(0.2)
            left = writers_of(ray_tmp)
        assert not left, f"Ray processes left behind: {left}"
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


@pytest.mark.slow  # a real search in a subprocess
@pytest.mark.parametrize("fault", ["deleted", "replaced"])
def test_a_search_whose_sqlite_file_goes_stops_at_once_and_says_what_is_lost(
    tmp_path: Path, fault: str
) -> None:
    db = tmp_path / "npas.db"
    ray_tmp = Path(tempfile.mkdtemp(prefix="npas-ray-"))  # short: Ray's socket paths
    proc = _launch(tmp_path, ray_tmp)
    try:
        if fault == "deleted":
            for file in tmp_path.glob("npas.db*"):
                file.unlink()
        else:  # a backup of it restored in its place
            backup = tmp_path / "backup.db"
            with (
                contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as src,
                contextlib.closing(sqlite3.connect(backup)) as dst,
            ):
                src.backup(dst)
                dst.execute("PRAGMA journal_mode=DELETE")
            for file in tmp_path.glob("npas.db-*"):
                file.unlink()
            os.replace(backup, db)
            in_backup = _trials_in(db)
        started = _trial_folders(tmp_path)
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _nothing_of_ray_left(ray_tmp)
    assert proc.returncode == 1, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    what = "is gone (deleted or moved away)" if fault == "deleted" else "was replaced"
    assert last.startswith(f"search launch: StorageLost: search 'gone': its storage file {db} "
                           f"{what}"), last  # fmt: skip
    assert "the search stopped at once" in last and str(tmp_path / "ray" / "gone") in last
    # no trial started after the loss but those Ray Tune had in hand (two running, one pending)
    assert len(_trial_folders(tmp_path) - started) <= 3, (started, _trial_folders(tmp_path))
    assert len(_trial_folders(tmp_path)) < TRIALS
    if fault == "deleted":  # no empty database created in its place
        assert not list(tmp_path.glob("npas.db*"))
        status = subprocess.run([sys.executable, "-m", "search", "status", "--run",
                                 str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                                timeout=120)  # fmt: skip
        assert status.returncode == 2 and "does not exist" in status.stderr, status.stderr
    else:  # the file put in its place is as it was put there
        assert _trials_in(db) == in_backup


@pytest.mark.slow  # a real search in a subprocess
def test_a_search_whose_sqlite_files_are_made_immutable_ends_in_one_line(tmp_path: Path) -> None:
    """The database, its WAL, its index and their folder made immutable (``chattr +i``) while
    the search runs. Before, the launch said `disk I/O error` and then died of SIGBUS (exit 135,
    a fatal dump): SQLite's checkpoint when the interpreter closed its connections wrote the
    index it maps into memory, which the kernel refuses for an immutable file. Now the launch
    sees the files cannot be written before it writes, says so in one line and exits 1, its
    Ray stopped; what it recorded is there."""
    db = tmp_path / "npas.db"
    ray_tmp = Path(tempfile.mkdtemp(prefix="npas-ray-"))
    proc = _launch(tmp_path, ray_tmp)
    frozen = [str(p) for p in (db, tmp_path / "npas.db-wal", tmp_path / "npas.db-shm")]
    try:
        chattr = subprocess.run(["chattr", "+i", *frozen, str(tmp_path)], capture_output=True)
        if chattr.returncode != 0:  # needs root and a file system with the attribute
            proc.kill()
            pytest.skip(f"chattr +i is not possible here: {chattr.stderr.decode().strip()}")
        _, err = proc.communicate(timeout=180)
    finally:
        subprocess.run(["chattr", "-i", *frozen, str(tmp_path)], capture_output=True)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _nothing_of_ray_left(ray_tmp)
    assert proc.returncode == 1, err[-3000:]
    for dump in ("Traceback", "SIGBUS", "Fatal Python error"):
        assert dump not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"search launch: StorageWriteError: the search's storage file {db}")
    assert "cannot be written any more (made read-only or immutable)" in last, last
    assert _recorded(db) >= 2
