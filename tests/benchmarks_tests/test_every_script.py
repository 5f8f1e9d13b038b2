"""Every benchmark script is tested (issue 62, item 6): its module is loaded or run by some
test under tests/, where its metric meets a known answer, so that no table's arithmetic goes
unchecked; and its results keep no generated copy."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_benchmark_script_is_loaded_or_run_by_a_test() -> None:
    scripts = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py") if p.stem != "__init__")
    tests = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("*.py"))
    named = {s for s in scripts
             if any(f in tests for f in (f'load_benchmark("{s}")', f'_module("{s}")',
                                         f"benchmarks.{s}", f'"{s}.py"'))}  # fmt: skip
    assert sorted(set(scripts) - named) == []


def test_the_results_keep_no_bundle_readme() -> None:
    """A bundle's README.md is written from its metrics and config (``search export``): the
    results keep what a check reads (config, metrics, model.pt, model.onnx), not that copy."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "benchmarks/results"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.split()  # fmt: skip
    readmes = [f for f in tracked if f.endswith("/README.md")]
    bundle = "# npas bundle"  # the first line search export writes
    generated = [f for f in readmes if (ROOT / f).read_text(encoding="utf-8").startswith(bundle)]
    assert readmes and generated == []
