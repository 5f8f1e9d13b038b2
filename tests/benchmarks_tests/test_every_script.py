"""Every benchmark script is tested (issue 62, item 6): its module is loaded or run by some
test under tests/, where its metric meets a known answer, so that no table's arithmetic goes
unchecked."""

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
