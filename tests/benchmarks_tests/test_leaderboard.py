"""The leaderboard hunt on digits, end to end: a short search, its winner and the winner's
twin retrained with two seeds each; every seed's bundle reads back to the accuracy it records
(``search.load_bundle`` and onnxruntime), ``--resume --table-only`` trains nothing, and the
table's figures recompute from the per-seed files."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import optuna
import pytest

from tests._support.bundles import check_reads_back, load_benchmark

#: A run of seconds: three trials of 3 epochs under FIFO (every trained one finishes, so a
#: winner within 1,000 parameters exists), two seeds.
SMOKE = ["--minutes", "3", "--seeds", "2", "--anchors", "1000", "--set", "dataset=digits",
         "--set", "scheduler={name: fifo}", "--set", "train/epochs=3",
         "--set", "trials=3"]  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[object, list[str], Path]:
    root = tmp_path_factory.mktemp("leaderboard")
    argv = [*SMOKE, "--out", str(root / "out"), "--results", str(root / "results")]
    bench = load_benchmark("leaderboard")
    bench.main(argv)
    return bench, argv, root / "results"


def _bundles(results: Path) -> list[Path]:
    """The winner's seeds, then its twin's."""
    anchor = results / "leaderboard" / "le1000"
    return [p.parent for pattern in ("seed*/metrics.json", "*/seed*/metrics.json")
            for p in sorted(anchor.glob(pattern))]  # fmt: skip


def test_every_seed_of_the_winner_and_its_twin_reads_back_to_its_accuracy(run) -> None:
    _, _, results = run
    folders = _bundles(results)
    twin = next(p.name for p in (results / "leaderboard" / "le1000").iterdir()
                if p.name in ("plain", "shared"))  # fmt: skip
    assert [str(f.relative_to(results / "leaderboard" / "le1000")) for f in folders] == [
        "seed0", "seed1", f"{twin}/seed0", f"{twin}/seed1"]  # fmt: skip
    for folder in folders:
        metrics = check_reads_back(folder)
        assert metrics["params"] <= 1000 and metrics["epochs"] == 3
    storage = f"sqlite:///{results / 'leaderboard' / 'study.db'}"  # the search's, copied
    study = optuna.load_study(study_name="mnist-record", storage=storage)
    # read by Optuna itself: the search's trials (3 to complete; a screened one is PRUNED and
    # replaced, and on a loaded machine the 3 minutes can end one in flight)
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert 1 <= len(complete) <= 3, [t.state for t in study.trials]


def test_resume_with_table_only_trains_nothing_and_launches_no_search(run, capsys) -> None:
    bench, argv, results = run
    bundles = [p / "model.pt" for p in _bundles(results)]
    stamps = [p.stat().st_mtime_ns for p in bundles]
    log = Path(argv[argv.index("--out") + 1]) / "log.txt"
    launches = log.read_text("utf-8").count("$ search launch")
    capsys.readouterr()
    bench.main([*argv, "--resume", "--table-only"])
    assert not re.search(r"seed \d+: test accuracy", capsys.readouterr().out)  # none trained
    assert [p.stat().st_mtime_ns for p in bundles] == stamps
    assert log.read_text("utf-8").count("$ search launch") == launches


def test_the_tables_figures_recompute_from_the_per_seed_files(run) -> None:
    _, _, results = run
    row = next(line for line in (results / "leaderboard.md").read_text("utf-8").splitlines()
               if line.startswith("| ≤ 1,000 |"))  # fmt: skip
    folders = _bundles(results)
    winner = [check_reads_back(f)["test_accuracy"] for f in folders[:2]]
    twin = [check_reads_back(f)["test_accuracy"] for f in folders[2:]]
    spreads = re.findall(r"\| ([\d.]+) ± ([\d.]+) % \|", row)
    assert len(spreads) == 2  # the winner's and the twin's
    for (mean, std), accs in zip(spreads, (winner, twin), strict=True):
        assert float(mean) == pytest.approx(100 * statistics.mean(accs), abs=0.005)
        assert float(std) == pytest.approx(100 * statistics.stdev(accs), abs=0.005)
        assert ", ".join(f"{100 * a:.2f}" for a in accs) in row
    gap = re.search(r"\| ([+-][\d.]+) pt", row).group(1)
    shared, plain = (twin, winner) if "| shared," in row else (winner, twin)
    want = 100 * (statistics.mean(shared) - statistics.mean(plain))
    assert float(gap) == pytest.approx(want, abs=0.005)
