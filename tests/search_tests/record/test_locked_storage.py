"""A SQLite storage another process holds locked (a long transaction, a tool with the file
open): opening it to write says so at once, then waits for the lock (issue 60, item 4: a launch
sat 33 s silent). The lock is a real one, held by a real process until the line is seen."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests._support.notes import notes
from tests._support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[3]

LOCKER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()  # held until the test says
db.execute("COMMIT")
"""

WRITER = """
import sys
import optuna
from search.record import open_storage
storage = open_storage(sys.argv[1])
optuna.create_study(study_name="mine", storage=storage)
print("written", flush=True)
"""


def test_a_locked_storage_is_said_at_once_and_waited_for(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    url = f"sqlite:///{tmp_path / 'npas.db'}"
    made = subprocess.run([sys.executable, "-c", WRITER.replace("mine", "other"), url],
                          capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    db = str(tmp_path / "npas.db")
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, db], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    writer = None
    try:
        assert locker.stdout is not None and locker.stdout.readline() == "locked\n"
        with open(tmp_path / "err.txt", "w") as err:
            writer = subprocess.Popen([sys.executable, "-c", WRITER, url], stdout=subprocess.PIPE,
                                      stderr=err, text=True, env=env)  # fmt: skip
            said = wait_until(
                lambda: [line for line in notes((tmp_path / "err.txt").read_text())
                         if "is locked by another process" in line],
                90, what="the line saying the storage is locked",
            )  # fmt: skip
            assert writer.poll() is None, "it said so while it waited, before it wrote"
            assert said == [f"[npas] storage {url!r} is locked by another process (a write in "
                            "progress, or a program holding it open in a transaction); waiting "
                            "for it, up to 60 s …"], said  # fmt: skip
            locker.communicate("\n", timeout=30)  # the lock is let go
            out, _ = writer.communicate(timeout=90)
        assert writer.returncode == 0 and out == "written\n", (tmp_path / "err.txt").read_text()
    finally:
        for process in (locker, writer):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(timeout=30)
