"""The development runs' table (benchmarks/unaided_dev.py) on figures computed by hand."""

from __future__ import annotations

import json

from tests._support.bundles import load_benchmark


def test_the_table_gives_each_arm_s_mean_spread_and_seeds(tmp_path):
    bench = load_benchmark("unaided_dev")
    for seed, accuracy in enumerate([0.5, 0.6, 0.7]):
        folder = tmp_path / "arrowhead" / "guard" / f"seed{seed}"
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(json.dumps({"test_accuracy": accuracy}))
    text = bench.table(tmp_path)
    # mean 0.6, sample std 0.1 (deviations 0.1, 0, 0.1: sqrt(0.02 / 2))
    assert "| arrowhead | guard | 3 | 0.600 ± 0.100 | 0.500, 0.600, 0.700 |" in text
    assert "gunpoint" not in text  # a set with no runs has no row


FAKE_ENGINE = '''
import json, pathlib, sys
args = sys.argv[1:]
if args[0] == "export":
    out = pathlib.Path(args[args.index("--out") + 1])
    out.mkdir(parents=True)
    (out / "metrics.json").write_text(json.dumps(
        {"exported": {"test_accuracy": 0.25}, "metrics": {"params": 7}}))
'''


def test_a_run_imports_the_engine_pythonpath_names_not_the_checkout_it_starts_in(
    tmp_path, monkeypatch
):
    """Started in this checkout with ``PYTHONPATH`` at another engine (here a stand-in that
    answers export with a fixed figure), each command runs that engine, and the result names
    it: ``python -m`` from the checkout's folder once imported the checkout's own."""
    bench = load_benchmark("unaided_dev")
    engine = tmp_path / "engine"
    (engine / "search").mkdir(parents=True)
    (engine / "search" / "__init__.py").write_text("")
    (engine / "search" / "__main__.py").write_text(FAKE_ENGINE)
    monkeypatch.setenv("PYTHONPATH", str(engine))
    monkeypatch.chdir(bench.Path(bench.__file__).resolve().parents[1])  # the checkout
    result = bench.run("wine", "e9", 0, 0.1, tmp_path / "data", tmp_path / "out")
    assert (result["test_accuracy"], result["params"]) == (0.25, 7)
    assert result["engine"] == str(engine)  # not a git checkout: no commit
