"""What the chaos tests (run/test_chaos.py, on a local Ray; run/test_chaos_cluster.py, on the
two-node cluster) share: the search's size, the trial that leaves its worker's pid in its folder,
the pids of the trial workers running now, and the storage's own integrity check.

The trial function is shipped to Ray's workers by value: a worker need not import tests.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import ray.cloudpickle
import sqlalchemy

from search.config import TrialConfig
from tests._support.searches import slow_trial

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
#: The trials of a chaos search.
TRIALS = 14


def pid_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """slow_trial that leaves its worker's pid in its folder first."""
    folder = Path(cfg.artifact_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pid").write_text(str(os.getpid()))
    return slow_trial(cfg)


def running_pids(out: Path, done: set[int]) -> list[int]:
    """Pids of trial workers now running (pid files of trials not yet ended)."""
    pids = []
    for path in (out / "t-random" / "trials").glob("*/pid"):
        pid = int(path.read_text() or 0)
        if pid and pid not in done and int(path.parent.name) not in done:
            pids.append(pid)
    return pids


def check_integrity(url: str) -> None:
    """The storage's own check of its files: SQLite's ``integrity_check``; on PostgreSQL,
    amcheck on every table of the database (its heap pages) and every B-tree index (its
    structure, and that it holds every row of its table)."""
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return
    engine = sqlalchemy.create_engine(url)
    public = "relnamespace = 'public'::regnamespace"
    with engine.begin() as db:
        db.execute(sqlalchemy.text("CREATE EXTENSION IF NOT EXISTS amcheck"))
        tables = db.execute(
            sqlalchemy.text(f"SELECT oid FROM pg_class WHERE relkind = 'r' AND {public}")
        ).scalars().all()  # fmt: skip
        for table in tables:
            found = db.execute(sqlalchemy.text("SELECT * FROM verify_heapam(:t)"), {"t": table})
            assert not found.all(), f"table {table}: {found}"
        indexes = db.execute(
            sqlalchemy.text(
                "SELECT bt_index_check(c.oid, true) FROM pg_class c JOIN pg_am a ON a.oid = "
                f"c.relam WHERE c.relkind = 'i' AND a.amname = 'btree' AND c.{public}"
            )
        ).all()  # raises on a corrupt index
    engine.dispose()
    assert len(indexes) >= len(tables) > 0, "every table (Optuna's, the lease) has a key"
