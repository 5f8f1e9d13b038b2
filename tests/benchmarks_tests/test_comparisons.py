"""Comparisons fixed in advance (``benchmarks/protocols/comparisons.yaml``) and the provenance of
every net (``provenance.yaml``): an older comparison's readings are counted from the committed
git history of its per-seed files (the record-997 one four times, in this repository and in a
small real repository built here), a shallow clone is refused by name, no table line claims
"beats" above its derived threshold, and every study and trial the provenance names carries
the marks its kind says."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import optuna
import pytest

from tests._support.bundles import BENCH, load_benchmark

RESULTS = BENCH / "results"
BOARD = RESULTS / "leaderboard_records"


@pytest.fixture(scope="module")
def comparisons():
    return load_benchmark("comparisons")


def test_the_997_comparison_was_read_four_times_and_the_1936_ones_three_and_two(
    comparisons,
) -> None:
    """Counted from this repository's history (CI: a fresh clone of main, whole history; a
    shallow clone fails here with HistoryError's message saying so)."""
    readings = comparisons.history(BOARD, "le1000/npas-d3.found", "le1000/record-997.own")
    assert [r.commit for r in readings] == ["f414712", "c18eab7", "deb17c8", "be0ba94"]
    assert [len(r.ours) for r in readings] == [5, 6, 7, 10]
    searched = comparisons.history(BOARD, "le1000/npas-d3.found", "le1000/record-997.searched")
    assert [r.commit for r in searched] == [r.commit for r in readings]
    own = comparisons.history(BOARD, "le2000/npas-p2000.found", "le2000/record-1936.own")
    assert [r.commit for r in own] == ["e72c8a9", "d04aca4", "e41fb39"]
    again = comparisons.history(BOARD, "le2000/npas-p2000.found", "le2000/record-1936.searched")
    assert [r.commit for r in again] == ["d04aca4", "e41fb39"]


def test_the_997_verdict_is_not_beaten_at_four_readings(comparisons) -> None:
    table = (RESULTS / "leaderboard_records.md").read_text("utf-8")
    line = next(x for x in table.splitlines()
                if x.startswith("- npas-d3.found − record-997.own:"))  # fmt: skip
    assert "not beaten (4 readings, p 0.0132 > 0.0125)" in line
    searched = next(x for x in table.splitlines()
                    if x.startswith("- npas-d3.found − record-997.searched:"))  # fmt: skip
    assert "not beaten (4 readings, p 0.0130 > 0.0125)" in searched
    assert comparisons.verdict(0.0009, 0.01318, 4, 0.05 / 4) == (
        "not beaten (4 readings, p 0.0132 > 0.0125)")  # fmt: skip
    assert comparisons.verdict(0.002, 0.015, 1, 0.05) == "beats it (1 reading, p 0.0150 < 0.05)"
    assert comparisons.verdict(-0.001, 0.001, 2, 0.025).startswith("not beaten (2 readings, the")


def _accuracies(board: Path) -> dict[str, list[float]]:
    """Every arm's per-seed test accuracies, by arm name, read from its metrics.json files."""
    found: dict[str, list[float]] = {}
    for arm in sorted(p for p in board.glob("le*/*") if p.is_dir()):
        files = sorted(arm.glob("seed*/metrics.json"), key=lambda p: int(p.parent.name[4:]))
        found[arm.name] = [json.loads(f.read_text("utf-8"))["metrics"]["test_accuracy"]
                           for f in files]  # fmt: skip
    return found


def test_no_table_line_claims_beats_above_its_derived_threshold(comparisons) -> None:
    """The committed table, its p recomputed from the per-seed files and its readings from
    the history; and the check fails on the 997 line doctored to the hand-kept three."""
    declaration = comparisons.declared()
    accuracies = _accuracies(BOARD)
    table = (RESULTS / "leaderboard_records.md").read_text("utf-8")
    assert comparisons.overclaims(table, BOARD, declaration, accuracies) == []
    assert sum("beats it (" in line for line in table.splitlines()) >= 3  # the check has work
    doctored = table.replace("not beaten (4 readings, p 0.0132 > 0.0125)",
                             "beats it (3 readings, p 0.0132 < 0.0167)")  # fmt: skip
    wrong = comparisons.overclaims(doctored, BOARD, declaration, accuracies)
    assert len(wrong) == 1 and wrong[0].endswith("4 readings derived from the history")
    fourth = doctored.replace("(3 readings, p 0.0132", "(4 readings, p 0.0132")
    wrong = comparisons.overclaims(fourth, BOARD, declaration, accuracies)
    assert len(wrong) == 1 and wrong[0].endswith("p 0.0132 is not below 0.0125")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout  # fmt: skip


def _seeds(arm: Path, accs: list[float], finalist: str | None = None) -> None:
    """An arm's per-seed metrics.json files (and a model file beside each); a chosen
    finalist's name the seeds were trained under in their source."""
    for s, acc in enumerate(accs):
        (arm / f"seed{s}").mkdir(parents=True, exist_ok=True)
        record = {"metrics": {"test_accuracy": acc}, "source": {"finalist": finalist}}
        (arm / f"seed{s}" / "metrics.json").write_text(json.dumps(record), "utf-8")
        (arm / f"seed{s}" / "model.onnx").write_text("v1", "utf-8")


def _commit(repo: Path, message: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)


def test_readings_are_the_commits_where_the_seeds_changed_and_could_be_read(
    comparisons, tmp_path
) -> None:
    """A real repository: one seed an arm is no reading; a commit that changes only a model
    file is none either; a working tree with a further seed is one more, not yet committed."""
    repo = tmp_path / "repo"
    board = repo / "results" / "leaderboard_records"
    ours, theirs = board / "le1000" / "npas-a.found", board / "le1000" / "record-1.own"
    repo.mkdir()
    _git(repo, "init", "-q")
    _seeds(ours, [0.98])
    _seeds(theirs, [0.97, 0.971])
    _commit(repo, "one seed of ours: not readable")
    _seeds(ours, [0.98, 0.982])
    _commit(repo, "first reading")
    (ours / "seed0" / "model.onnx").write_text("v2", "utf-8")
    _commit(repo, "a model re-exported: the figures unchanged")
    _seeds(theirs, [0.97, 0.971, 0.969])
    _commit(repo, "second reading")
    found = comparisons.history(board, "le1000/npas-a.found", "le1000/record-1.own")
    log = _git(repo, "log", "--reverse", "--format=%h %s").splitlines()
    assert [r.commit for r in found] == [log[1][:7], log[3][:7]]
    assert found[1].theirs == (0.97, 0.971, 0.969)
    c = comparisons.Comparison("leaderboard_records", "le1000/npas-a.found",
                               "le1000/record-1.own", (2, 2), "history")  # fmt: skip
    now = ([0.98, 0.982], [0.97, 0.971, 0.969])
    assert comparisons.readings(board, c, now) == (2, [r.commit for r in found])
    _seeds(ours, [0.98, 0.982, 0.99])  # not committed: a third reading
    count, commits = comparisons.readings(board, c, ([0.98, 0.982, 0.99], now[1]))
    assert count == 3 and commits[-1] == "working tree"


def test_a_chosen_finalists_readings_before_its_rename_are_counted(comparisons, tmp_path) -> None:
    """finalists.py trains a finalist as ``fin-…`` and renames the chosen one ``npas-…``: the
    states committed under the old name are readings too; the rename alone is none."""
    repo = tmp_path / "repo"
    board = repo / "leaderboard_records"
    arms = board / "le1000"
    repo.mkdir()
    _git(repo, "init", "-q")
    _seeds(arms / "record-1.own", [0.97, 0.971])
    _seeds(arms / "fin-a-t3.found", [0.98, 0.982])
    _commit(repo, "the finalist at two seeds: a reading")
    shutil.rmtree(arms / "fin-a-t3.found")
    _seeds(arms / "npas-a.found", [0.98, 0.982], finalist="fin-a-t3.found")
    _commit(repo, "chosen: renamed, the same seeds")
    _seeds(arms / "npas-a.found", [0.98, 0.982, 0.99], finalist="fin-a-t3.found")
    _commit(repo, "a third seed: a reading")
    found = comparisons.history(board, "le1000/npas-a.found", "le1000/record-1.own")
    log = _git(repo, "log", "--reverse", "--format=%h").split()
    assert [r.commit for r in found] == [log[0][:7], log[2][:7]]


def test_a_shallow_clone_is_refused_by_name(comparisons, tmp_path) -> None:
    repo = tmp_path / "repo"
    board = repo / "leaderboard_records"
    repo.mkdir()
    _git(repo, "init", "-q")
    for n in (2, 3):
        _seeds(board / "le1000" / "a.found", [0.9] * n)
        _seeds(board / "le1000" / "b.own", [0.8] * n)
        _commit(repo, f"{n} seeds")
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)],
                   check=True, capture_output=True)  # fmt: skip
    with pytest.raises(comparisons.HistoryError, match=r"shallow clone.*--unshallow"):
        comparisons.history(shallow / "leaderboard_records", "le1000/a.found", "le1000/b.own")
    with pytest.raises(comparisons.HistoryError, match="not in a git checkout"):
        comparisons.history(tmp_path / "nowhere", "le1000/a.found", "le1000/b.own")


def test_a_declaration_is_refused_when_it_compares_train_val_with_train(
    comparisons, tmp_path
) -> None:
    path = tmp_path / "c.yaml"
    arms = "board: b\n    ours: le1000/a.found.trainval\n    theirs: le1000/r.own\n"
    path.write_text(f"spending: bonferroni\ncomparisons:\n  - {arms}    seeds: 5\n"
                    "    readings: history\n", "utf-8")  # fmt: skip
    with pytest.raises(comparisons.ConfigError, match="train\\+val arm is compared only"):
        comparisons.declared(path)
    path.write_text("spending: peeking\ncomparisons: []\n", "utf-8")
    with pytest.raises(comparisons.ConfigError, match="spending 'peeking': one of bonferroni"):
        comparisons.declared(path)
    path.write_text("spending: bonferroni\ncomparisons:\n  - board: b\n    ours: a\n    theirs: "
                    "r\n    seeds: 5\n    readings: 0\n", "utf-8")  # fmt: skip
    with pytest.raises(comparisons.ConfigError, match="readings 0: a number of looks"):
        comparisons.declared(path)


def test_the_committed_declarations_hold_only_like_for_like_arms(comparisons) -> None:
    declaration = comparisons.declared()
    assert declaration.spending == "bonferroni" and declaration.alpha == 0.05
    assert declaration.threshold(4) == 0.0125
    for c in declaration.comparisons:
        assert (BENCH / "results" / c.board / c.ours).is_dir(), c.ours
        assert (BENCH / "results" / c.board / c.theirs).is_dir(), c.theirs


def test_each_provenance_matches_its_committed_study(comparisons, tmp_path) -> None:
    """A start point carries the search's start mark, a narrowed net the screen's narrowing
    mark, a sampled one neither (each study copied first: Optuna opens it for writing)."""
    from search.record import TrialAttr

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    known = comparisons.provenances()
    assert {d for d, e in known.items() if e["kind"] == "sampled"} >= {"npas-d3", "npas-g9"}
    assert {known[d]["kind"] for d in ("npas-p500", "npas-p697", "npas-p2000")} == {"start"}
    studies: dict[str, optuna.Study] = {}
    for design, entry in known.items():
        if entry["study"] not in studies:
            copy = tmp_path / f"{len(studies)}.db"
            shutil.copy(RESULTS / entry["study"], copy)
            url = f"sqlite:///{copy}"
            studies[entry["study"]] = optuna.load_study(
                study_name=optuna.get_all_study_names(url)[0], storage=url
            )
        trial = studies[entry["study"]].trials[entry["trial"]]
        assert trial.number == entry["trial"]
        marks = (TrialAttr.START in trial.user_attrs, TrialAttr.NARROWED in trial.user_attrs)
        want = {"sampled": (False, False), "narrowed": (False, True), "start": (True, False)}
        assert marks == want[entry["kind"]], (design, entry, marks)
    p2000 = studies["record_acc_search/p2000-study.db"]
    finished = [t.number for t in p2000.trials if max(t.intermediate_values, default=0) >= 81]
    assert finished == [1]  # the only finisher, so its finalist stage had one candidate


def test_an_arm_says_how_its_net_came_to_be(comparisons) -> None:
    known = comparisons.provenances()
    said = {arm: comparisons.arm_provenance(arm, known) for arm in (
        "npas-d3.found", "npas-d3.found.trainval", "npas-p697.record-697", "record-997.own",
        "abl-997-slope001.found", "npas-p2000-shared.found", "npas-zz.found")}  # fmt: skip
    assert said["npas-d3.found"].text == "sampled by the optimiser (d3 study, trial 33)"
    assert said["npas-d3.found"].found_by_npas
    assert said["npas-d3.found.trainval"].text.endswith("; retrained on train+val")
    assert said["npas-p697.record-697"].text == (
        "a hand start point: the d3 study's trial 69 (sampled) narrowed to width 10 (p697 "
        "study, trial 2); retrained with record-697's recipe")  # fmt: skip
    assert not said["npas-p697.record-697"].found_by_npas
    assert said["record-997.own"].kind == "record"
    assert said["abl-997-slope001.found"].kind == "ablation"
    assert said["npas-p2000-shared.found"].text.startswith("npas-p2000's net made 1.5× as wide")
    assert said["npas-zz.found"].kind == "unknown"
