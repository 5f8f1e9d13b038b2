"""The finalists benchmark on digits, after a real search of three trials: the search's best
finishers are retrained, the one with the best mean validation accuracy becomes arm
``npas-<label>`` with its seeds relabelled, every bundle reads back, the table recomputes from
the per-seed files, and a second run trains nothing."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from tests._support.bundles import check_reads_back, load_benchmark

SETS = ["dataset=digits", "val_size=null", "train_size=null", "scheduler={name: fifo}",
        "train/epochs=2", "trials=3", "name=fin-test"]  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[object, list[str], Path, str]:
    root = tmp_path_factory.mktemp("finalists")
    load_benchmark("leaderboard").search_config("mnist-record-detail", SETS, root / "c.yaml")
    subprocess.run([sys.executable, "-m", "search", "launch", str(root / "c.yaml"), "--out",
                    str(root / "runs")], check=True, capture_output=True)  # fmt: skip
    storage = f"sqlite:///{root / 'runs' / 'npas.db'}"
    argv = ["--storage", storage, "--label", "x", "--top", "2", "--seeds", "2", "--total", "3",
            "--jobs", "1", "--set", "dataset=digits", "--results", str(root / "results")]
    bench = load_benchmark("finalists")
    bench.main(argv)
    return bench, argv, root / "results", storage


def test_the_finalists_are_the_searchs_best_finishers(run) -> None:
    bench, _, _, storage = run
    study = optuna.load_study(study_name="fin-test", storage=storage)
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    ranked = sorted(done, key=lambda t: (-t.values[0], t.number))[:2]
    name, picked = bench.finalists(storage, None, 2)
    assert name == "fin-test" and [f["trial"] for f in picked] == [t.number for t in ranked]


def test_the_chosen_one_has_the_best_mean_validation_accuracy_and_its_seeds(run) -> None:
    _, _, results, _ = run
    record = json.loads((results / "finalists_x.json").read_text("utf-8"))
    means = {f["trial"]: statistics.mean(f["val"]) for f in record["finalists"]}
    assert record["chosen"] == max(means, key=lambda n: means[n])
    other = next(n for n in means if n != record["chosen"])
    arms = results / "leaderboard_records" / "le1000"
    assert sorted(p.name for p in arms.iterdir()) == [f"fin-x-t{other}.found", "npas-x.found"]
    assert [p.name for p in sorted((arms / f"fin-x-t{other}.found").iterdir())] == [
        "seed0", "seed1"]  # fmt: skip
    chosen = next(f for f in record["finalists"] if f["trial"] == record["chosen"])
    seeds = sorted((arms / "npas-x.found").iterdir())
    assert [p.name for p in seeds] == ["seed0", "seed1", "seed2"]
    for n, folder in enumerate(seeds):
        metrics = check_reads_back(folder)
        source = json.loads((folder / "metrics.json").read_text("utf-8"))["source"]
        assert source["trial"] == "npas-x" and source["arm"] == "npas-x.found"
        if n < 2:  # retrained as a finalist, then relabelled
            assert source["finalist"] == f"fin-x-t{record['chosen']}.found"
            assert metrics["accuracy"] == chosen["val"][n]
        else:
            assert "finalist" not in source


def test_the_table_recomputes_from_the_per_seed_files(run) -> None:
    _, _, results, _ = run
    text = (results / "finalists_x.md").read_text("utf-8")
    record = json.loads((results / "finalists_x.json").read_text("utf-8"))
    arms = results / "leaderboard_records" / "le1000"
    for fin in record["finalists"]:
        arm = "npas-x" if fin["trial"] == record["chosen"] else f"fin-x-t{fin['trial']}"
        vals = [json.loads((arms / f"{arm}.found" / f"seed{s}" / "metrics.json").read_text(
            "utf-8"))["metrics"]["accuracy"] for s in (0, 1)]  # fmt: skip
        row = next(line for line in text.splitlines() if line.startswith(f"| {fin['trial']} |"))
        mean = re.findall(r"([\d.]+) ± [\d.]+ %", row)[0]
        assert float(mean) == pytest.approx(100 * statistics.mean(vals), abs=0.006)


def test_a_second_run_exports_and_trains_nothing(run, capsys) -> None:
    bench, argv, results, _ = run
    stamps = [p.stat().st_mtime_ns for p in sorted(results.rglob("model.pt"))]
    bench.main(argv)
    out = capsys.readouterr().out
    assert "0 seed(s) to train" in out and "search export" not in out
    assert [p.stat().st_mtime_ns for p in sorted(results.rglob("model.pt"))] == stamps


def test_a_choice_recorded_but_not_applied_is_applied_by_the_next_run(run, capsys) -> None:
    """Stopped between writing the choice and renaming the arm: the next run renames it and
    trains nothing again."""
    bench, argv, results, _ = run
    chosen = json.loads((results / "finalists_x.json").read_text("utf-8"))["chosen"]
    arms = results / "leaderboard_records" / "le1000"
    (arms / "npas-x.found").rename(arms / f"fin-x-t{chosen}.found")
    bench.main(argv)
    assert "0 seed(s) to train" in capsys.readouterr().out
    assert (arms / "npas-x.found").is_dir() and not (arms / f"fin-x-t{chosen}.found").exists()
    assert len(list((arms / "npas-x.found").glob("seed*/model.pt"))) == 3


def _wider(argv: list[str], seeds: int) -> list[str]:
    at = argv.index("--seeds")
    return [*argv[: at + 1], str(seeds), *argv[at + 2 :]]


def _assert_board_matches(results: Path, record: dict) -> None:
    """npas-x holds the chosen finalist's seeds, labelled so; each other finalist its own."""
    arms = results / "leaderboard_records" / "le1000"
    for fin in record["finalists"]:
        chosen = fin["trial"] == record["chosen"]
        arm = "npas-x.found" if chosen else f"fin-x-t{fin['trial']}.found"
        for n, folder in enumerate(sorted((arms / arm).iterdir())):
            source = json.loads((folder / "metrics.json").read_text("utf-8"))["source"]
            assert source["arm"] == arm and source["trial"] == arm.removesuffix(".found")
            assert source.get("finalist") == (f"fin-x-t{fin['trial']}.found" if chosen else None)
            if n < record["seeds"]:
                assert check_reads_back(folder)["accuracy"] == fin["val"][n]


def test_a_wider_stage_trains_each_finalist_on_and_chooses_again(run, capsys) -> None:
    """More --seeds than the choice was made on: each finalist trained to that many (the chosen
    one where it is, with the seeds it has), ranked again on them; the first choice kept."""
    bench, argv, results, _ = run
    first = json.loads((results / "finalists_x.json").read_text("utf-8"))
    bench.main(_wider(argv, 3))
    assert "1 seed(s) to train" in capsys.readouterr().out  # the unchosen one's third
    record = json.loads((results / "finalists_x.json").read_text("utf-8"))
    assert record["seeds"] == 3 and record["earlier"] == [
        {k: first[k] for k in ("finalists", "chosen", "seeds")}]  # fmt: skip
    means = {f["trial"]: statistics.mean(f["val"]) for f in record["finalists"]}
    assert all(len(f["val"]) == 3 for f in record["finalists"])
    assert record["chosen"] == max(means, key=lambda n: means[n])
    _assert_board_matches(results, record)
    text = (results / "finalists_x.md").read_text("utf-8")
    among = ", ".join(str(f["trial"]) for f in first["finalists"])
    assert f"on 2 seed(s) each, among trials {among}: trial {first['chosen']}" in text
    bench.main(_wider(argv, 3))
    assert "0 seed(s) to train" in capsys.readouterr().out


def test_a_changed_choice_sends_the_former_one_back_to_its_finalist_arm(run, capsys) -> None:
    """A choice recorded for the other finalist (as a wider stage may make): the next run
    moves npas-x's seeds back to their fin- arm and the new choice's in, training nothing."""
    bench, argv, results, _ = run
    path = results / "finalists_x.json"
    record = json.loads(path.read_text("utf-8"))
    record["chosen"] = next(f["trial"] for f in record["finalists"] if f["trial"] != record[
        "chosen"])  # fmt: skip
    path.write_text(json.dumps(record), encoding="utf-8")
    bench.main(_wider(argv, 3))
    assert "0 seed(s) to train" in capsys.readouterr().out
    _assert_board_matches(results, record)


def test_a_storage_that_does_not_exist_is_refused_and_not_created(tmp_path) -> None:
    bench = load_benchmark("finalists")
    missing = tmp_path / "no-such.db"
    with pytest.raises(SystemExit, match=r"no-such\.db' does not exist"):
        bench.finalists(f"sqlite:///{missing}", None, 3)
    assert not missing.exists()
