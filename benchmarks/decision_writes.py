"""Decision log writes: what storing MOASHA's rung decisions costs the storage.

Every rung decision is written at once to the trial's user attribute ``npas:decisions`` (the
whole log of that trial, a list of 1-4 small dicts), through the search's ``StudyWriter``, so a
killed search keeps them: one storage transaction per decision, on the Ray driver. This times
those writes on SQLite (a file on this machine's disk) and on PostgreSQL (a throwaway server on
127.0.0.1, as the tests start one): ``--trials`` running trials, each receiving ``--rungs``
decisions in turn, median and 95th percentile per write, and the writes per second one driver
sustains. Then what a 100-node cluster needs: a decision per 2.1 reported epochs (grace 1, rf 3,
27 epochs: ``scheduler_scale.md``'s reading), so 100 N / T epochs/s need 48 N / T writes/s.

Run: ``python benchmarks/decision_writes.py [--trials 200] [--rungs 3]``
→ ``benchmarks/results/decision_writes.md``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import optuna
import sqlalchemy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package (and tests/), as a file
from benchmarks.stats import p95
from objectives._conditions import cpu_model_name
from search.record._schema import TrialAttr
from search.record._storage import open_storage
from search.record._writer import StudyWriter
from tests.search_tests.conftest import throwaway_postgres

RESULTS = Path(__file__).parent / "results" / "decision_writes.md"


def time_writes(url: str, trials: int, rungs: int) -> list[float]:
    """Seconds of each decision write: ``trials`` RUNNING trials, ``rungs`` decisions each."""
    storage = open_storage(url)
    study = optuna.create_study(storage=storage, study_name="writes",
                                directions=["maximize", "minimize"])  # fmt: skip
    writer = StudyWriter(storage, "writes")
    memory = optuna.create_study(directions=["maximize", "minimize"])
    for _ in range(trials):
        memory.ask()
        writer.started(memory.get_trials(deepcopy=False)[-1])
    seconds = []
    for rung in range(rungs):
        for number in range(trials):
            log = [{"rung": 3**r, "outcome": "pause", "rank": number % 7, "n": 3 * number + 1,
                    "arrival": number, "top": number // 3, "at_chance": False}
                   for r in range(rung + 1)]  # fmt: skip
            start = time.perf_counter()
            writer.user_attr(number, TrialAttr.DECISIONS, log)
            seconds.append(time.perf_counter() - start)
    assert study.trials[-1].user_attrs[TrialAttr.DECISIONS] == log  # read back through Optuna
    return seconds


def storage_rows(measured: dict[str, list[float]]) -> tuple[list[str], dict[str, float]]:
    """The storage table (median and 95th percentile ms per write) and each storage's
    sustained single-writer rate, 1 / its median, which the cluster table divides by."""
    rows = ["| storage | writes | median ms | p95 ms | writes/s (1 / median) |",
            "|---|---:|---:|---:|---:|"]  # fmt: skip
    rate = {}
    for name, seconds in measured.items():
        median = statistics.median(seconds)
        rate[name] = 1 / median
        rows.append(f"| {name} | {len(seconds)} | {1e3 * median:.2f} | {1e3 * p95(seconds):.2f} | "
                    f"{rate[name]:.0f} |")  # fmt: skip
    return rows, rate


def cluster_rows(rate: dict[str, float]) -> list[str]:
    """The cluster table: 48 N / T decision writes/s for 100 nodes of N trials with T-second
    epochs, as a share of each storage's ``rate``."""
    cluster = ["| N trials per node | T s per epoch | decision writes/s needed | "
               + " | ".join(f"{n} busy" for n in rate) + " |",
               "|---|---|---:|" + "---:|" * len(rate)]  # fmt: skip
    for n_per_node, epoch_s in ((1, 60), (1, 10), (8, 10), (8, 1)):
        needed = 48 * n_per_node / epoch_s
        cells = " | ".join(f"{100 * needed / r:.0f} %" for r in rate.values())
        cluster.append(f"| {n_per_node} | {epoch_s} | {needed:.1f} | {cells} |")
    return cluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--rungs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    wall = time.perf_counter()
    measured: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        measured["SQLite (file)"] = time_writes(f"sqlite:///{folder}/w.db", args.trials,
                                                args.rungs)  # fmt: skip
    with throwaway_postgres() as server:
        admin = sqlalchemy.create_engine(f"{server}/postgres", isolation_level="AUTOCOMMIT")
        with admin.connect() as db:
            db.execute(sqlalchemy.text("CREATE DATABASE writes"))
        admin.dispose()
        measured["PostgreSQL (127.0.0.1)"] = time_writes(f"{server}/writes", args.trials,
                                                         args.rungs)  # fmt: skip
    rows, rate = storage_rows(measured)
    cluster = cluster_rows(rate)
    conditions = (
        f"CPU: {cpu_model_name()} ({platform.machine()}), 2 cores shared with a running "
        f"benchmark; Python {platform.python_version()}, Optuna {optuna.__version__}, "
        f"SQLAlchemy {sqlalchemy.__version__}. Command: `python benchmarks/decision_writes.py "
        f"{' '.join(sys.argv[1:])}`; run time {time.perf_counter() - wall:.0f} s."
    )
    args.out.write_text(
        "# Decision log writes: one storage transaction per MOASHA rung decision\n\n"
        f"{conditions}\n\n" + "\n".join(rows) + "\n\n## What a 100-node cluster needs\n\n"
        "One write per decision, about 48 N / T decisions/s for 100 nodes running N trials "
        "each with T-second epochs (`scheduler_scale.md`); the share of the storage's "
        "sustained single-writer rate that takes:\n\n" + "\n".join(cluster) + "\n"
    )
    print(args.out.read_text())


if __name__ == "__main__":
    main()
