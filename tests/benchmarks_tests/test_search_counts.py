"""The search-counts table on a committed study whose figures record_acc_search.md states,
counted there in an earlier session (the 697 search of 2026-11-28, morning)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._support.bundles import load_benchmark

STUDY = Path(__file__).parents[2] / "benchmarks/results/record_acc_search/p697-study.db"


def test_the_counts_of_a_known_search() -> None:
    bench = load_benchmark("search_counts")
    found = bench.count(f"sqlite:///{STUDY}")
    assert found["name"] == "mnist-record-697" and found["limit"] == 697
    assert found["rungs"] == (9, 27, 81) and found["proposals"] == 67
    trained = found["trained"]
    assert len(trained) == 32 and sum(t.origin == "start" for t in trained) == 5
    assert [sum(t.epochs >= r for t in trained) for r in (9, 27, 81)] == [32, 12, 5]
    assert all(t.params <= 697 for t in trained)  # the screen let none over the limit train
    rows = bench.rows({"morning": found})
    assert "| proposals recorded | 67 |" in rows
    assert "| refused before training by the screen | 35 |" in rows
    assert "| reached epoch 9 / 27 / 81 | 32 / 12 / 5 |" in rows
    assert "| finishers: start points / sampled / narrowed | 4 / 1 / 0 |" in rows
    finishers = next(r for r in rows if r.startswith("| finishers, most accurate"))
    assert "0.9826 (2, 694, start); 0.9812 (0, 692, start)" in finishers  # the doc's table
    assert "0.9765 (65, 665, sampled)" in finishers


def test_an_argument_without_a_label_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_benchmark("search_counts")
    with pytest.raises(SystemExit):
        bench.main([f"sqlite:///{STUDY}"])
    assert "expected LABEL=STORAGE_URL" in capsys.readouterr().err
