"""The config-mistakes benchmark's table on runs whose times are known: each cell the median
and range of its repeats, the ≤ 1 s verdict on the first arm's median, its error quoted."""

from __future__ import annotations

from tests._support.bundles import load_benchmark


def _module():
    return load_benchmark("config_errors")


def _runs(*seconds: float) -> list[dict]:
    return [{"seconds": s, "code": 2, "said": "search check: error: x | y", "load": 0.5}
            for s in seconds]  # fmt: skip


def test_each_cell_is_the_median_and_range_and_the_verdict_the_first_arms() -> None:
    bench = _module()
    ours = {"typo|check": _runs(0.4, 1.9, 0.2), "typo|launch": _runs(1.2, 1.1, 3.0)}
    base = {"typo|check": _runs(3.0, 2.0, 4.0), "typo|launch": _runs(5, 6, 7)}
    data = {"ours": ours, "base": base}
    text = bench.table(data, ["ours", "base"], "- conditions")
    rows = [line for line in text.splitlines() if line.startswith("| typo")]
    assert rows[0] == ("| typo | check | 0.40 (0.20–1.90) | 3.00 (2.00–4.00) | yes | "
                       "search check: error: x \\| y |")  # fmt: skip
    assert rows[1].startswith("| typo | launch | 1.20 (1.10–3.00) | 6.00 (5.00–7.00) | no |")
