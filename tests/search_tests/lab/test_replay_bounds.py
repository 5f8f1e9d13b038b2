"""`search replay` on user-sized arguments: seeds and processes are bounded, and a search with
no feasible trial is answered in one line (each before any replay runs)."""

from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from search.cli import main

ROOT = Path(__file__).resolve().parents[3]
#: Address space the replay gets: its imports fit, a list of 10^9 seeds (8 GB of pointers) not.
MEMORY_LIMIT = 3 * 1024**3


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@pytest.mark.slow  # `search replay` in a fresh interpreter
def test_a_billion_seeds_are_refused_in_one_line(quick_run):
    """Before, ``list(range(seeds))`` took 24 GB in 15 s (here: a MemoryError traceback under
    the address-space limit that keeps this test from eating the machine's memory)."""
    run = subprocess.run(
        [sys.executable, "-m", "search", "replay", "--run", str(quick_run),
         "--seeds", "1000000000", "--jobs", "1"],
        capture_output=True, text=True, timeout=120, preexec_fn=_limited,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert run.returncode == 2, run.stderr[-2000:]
    assert run.stderr.strip().splitlines() == [
        "search replay: error: --seeds: got 1,000,000,000; allowed: 1 to 10,000"
    ]


PROBE = """
import multiprocessing, os, sys, threading, time
os.sched_setaffinity(0, {{min(os.sched_getaffinity(0))}})  # one core for this process
from search.cli import main
most = [0]

def watch():
    while True:
        most[0] = max(most[0], len(multiprocessing.active_children()))
        time.sleep(0.005)

threading.Thread(target=watch, daemon=True).start()
code = main(["replay", "--run", {run!r}, "--seeds", "1", "--jobs", "48",
             "--type", "stopping", "--format", "json"])
print("probe:", code, most[0])
"""


@pytest.mark.slow  # `search replay` in a fresh interpreter, two replays
def test_jobs_beyond_the_cores_are_capped_with_one_line(quick_run):
    """``--jobs 48`` on one core: one replay at a time, no process pool, and a line that
    says so (before, 48 processes started)."""
    run = subprocess.run([sys.executable, "-c", PROBE.format(run=str(quick_run))],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines()[-1] == "probe: 0 0", run.stdout[-500:]
    said = "[npas] --jobs 48: this process may use 1 CPU core(s), so 1 replay(s) run at once"
    assert said in run.stderr.splitlines(), run.stderr[-2000:]


def test_a_search_with_no_feasible_trial_is_answered_in_one_line(quick_run, capsys):
    """Every trial's stored constraints violated (edited in the SQLite file): before, a
    ValueError (``zero-size array to reduction operation minimum``) after every replay ran."""
    with sqlite3.connect(quick_run / "npas.db") as db:
        changed = db.execute("UPDATE trial_user_attributes SET value_json = '[1.0]' "
                             "WHERE key = 'constraints'").rowcount  # fmt: skip
    db.close()
    assert changed > 0
    assert main(["replay", "--run", str(quick_run), "--seeds", "2", "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert "search replay: error: search 'digits-quick': none of its 16 trial(s) that trained " \
        "the full schedule met its constraints" in err and "replayed" not in err, err  # fmt: skip


def test_the_library_refuses_too_many_seeds_before_any_replay(table):
    """At most one seed past the bound is drawn from the iterable given (before, all of them:
    ``list(seeds)``)."""
    from search.lab import Comparison
    from search.lab._whatif import arms_for
    from spaces import ConfigError

    def seeds():  # a billion, but stops the test at 20,000 drawn rather than fill memory
        for seed in range(10**9):
            assert seed < 20_000, "drew every seed before checking how many there are"
            yield seed

    arms = arms_for("random", "fifo", (), 2, {})
    with pytest.raises(ConfigError, match="more than 10,000 seeds; allowed: 1 to 10,000"):
        Comparison.run(table, arms, seeds=seeds(), horizon_s=1.0)
