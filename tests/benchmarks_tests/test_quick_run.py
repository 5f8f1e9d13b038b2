"""The quick-run benchmark's readings on a run whose times are known: each mark is the first
line of its kind (the last line for the last), the prompt is the exit, and ``--table-only``
rewrites the page from the JSON with the medians computed by hand."""

from __future__ import annotations

import json
from pathlib import Path

from tests._support.bundles import load_benchmark


def _module():
    return load_benchmark("quick_run")


def _run(shift: float) -> dict:
    lines = [(0.2 + shift, "[npas] loading torch, Optuna and Ray Tune …"),
             (7.0 + shift, "Launching 'digits-quick': 16 trial(s), storage …"),
             (15.0 + shift, "[npas] 1/16 done (1 feasible, …)"),
             (16.0 + shift, "[npas] 11/16 done (…)"),  # not the first trial's line
             (24.0 + shift, "  search dashboard")]  # fmt: skip
    return {"load": 0.5, "lines": lines, "exit": 26.0 + shift, "code": 0}


def test_each_mark_is_read_where_it_is_and_the_table_holds_the_medians(tmp_path: Path) -> None:
    quick = _module()
    assert quick.marks(_run(0.0)) == {"first line": 0.2, "'Launching'": 7.0,
                                      "first trial done": 15.0, "last line": 24.0,
                                      "prompt": 26.0}  # fmt: skip
    typos = {t: {"seconds": [0.1, 0.3, 0.2], "said": "search launch: error: x"}
             for t in quick.TYPOS}  # fmt: skip
    data = {"quick": {"this tree": [_run(0.0), _run(2.0), _run(1.0)]},
            "typos": {"this tree": typos},
            "conditions": {"cpus": 2, "cpu": "test", "python": "3.11", "torch": "2",
                           "ray": "2", "when": "now"}}  # fmt: skip
    (tmp_path / "q.json").write_text(json.dumps(data))
    assert quick.main(["--table-only", "--results", str(tmp_path / "q.md")]) == 0
    page = (tmp_path / "q.md").read_text()
    assert "| this tree | 1.2 (0.2–2.2) | 8.0 (7.0–9.0) | 16.0 (15.0–17.0) | 25.0 (24.0–26.0) " \
           "| 27.0 (26.0–28.0) |" in page  # fmt: skip
    assert "| misspelt preset | 0.20 |" in page
    assert "| this tree | 26.0, 28.0, 27.0 | – |" in page  # each run's prompt


def test_the_gap_of_medians_and_its_interval_are_the_known_ones() -> None:
    quick = _module()
    theirs = [20.0, 24.0, 22.0, 30.0, 21.0]
    # runs that never vary, 2 s apart: every resample's gap is exactly -2
    assert quick.median_gap([20.0] * 5, [22.0] * 4) == (-2.0, -2.0, -2.0)
    # spread runs: the gap of medians is 22 - 24 = -2, the interval around it
    gap, low, high = quick.median_gap([t - 2.0 for t in theirs], theirs)
    assert gap == -2.0 and low < -2.0 < high
    gap, low, high = quick.median_gap(theirs, theirs)  # the same runs: no gap, within noise
    assert gap == 0.0 and low < 0.0 < high
    assert quick._gap_cell(gap, low, high).endswith("within noise")
    assert quick._gap_cell(-2.0, -3.0, -1.0) == "-2.0 s [-3.0, -1.0]: faster"
