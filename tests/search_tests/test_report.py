"""search.report._report: a report built from a real SQLite study renders every file, its HTML is
self-contained and loads in headless Chromium with no console message, and awkward studies
(failures, no feasible trial, one trial, constant or missing indicators) still render."""

from __future__ import annotations

import datetime as dt
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
import pytest
from matplotlib.image import imread
from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from search.pareto._frame import trials_frame
from search.report._report import write_report
from tests.search_tests.studies import npas_study

optuna.logging.set_verbosity(optuna.logging.WARNING)

OBJECTIVES = [["accuracy", "maximize"], ["params", "minimize"], ["latency_ms", "minimize"]]
LIMIT = 5000.0
PANEL = ["params", "flops_infer", "latency_ms", "peak_mem_infer_mb", "energy_infer_j"]


def _metrics(rng: np.random.Generator, width: int, budget: int) -> dict:
    """A run_trial-shaped result dict with realistic keys and plausible values."""
    params = float(min(budget, 90 * width))
    gated = params > LIMIT  # an analytic constraint violated: no training (SEARCH.md)
    m = {
        "params": params,
        "weights": params * 1.5,
        "flops_infer": params * 4.0 + float(rng.integers(0, 2000)),
        "macs": params * 2.0,
        "activations": 30.0 * width,
        "feasible": 0.0 if gated else 1.0,
        "constraint_0": params - LIMIT,
        "cond_device": "cpu",
        "cond_torch": "2.13.0",
        "cond_threads": 1,
        "cond_batch": 1,
    }
    if gated:
        return {**m, "accuracy": 0.0, "infeasible_reason": f"params {params:g} > {LIMIT:g}"}
    acc = float(np.clip(0.55 + 0.1 * np.log10(params) - 0.04 * rng.random(), 0, 1))
    return {
        **m,
        "accuracy": acc,
        "test_accuracy": acc - 0.01,
        "val_loss": 1.2 - acc,
        "latency_ms": 0.08 + params / 2e4 + 0.03 * rng.random(),
        "latency_p90_ms": 0.1 + params / 2e4,
        "throughput": 1e5 / (1 + params / 100),
        "peak_mem_infer_mb": 212.0,  # constant: VmHWM of the process dominates
        "energy_infer_j": params * 2e-7 * (1 + rng.random()),
        "energy_source": "estimate",
        "train_time_s": 1.0 + params / 1000,
    }


def _fill(study: optuna.Study, n: int, *, seed: int = 0, fail_every: int = 0) -> None:
    rng = np.random.default_rng(seed)
    start = dt.datetime(2025, 1, 1)
    dists = {
        "family": CategoricalDistribution(["convnet", "mlp"]),
        "convnet.width": IntDistribution(4, 64),
        "budget": IntDistribution(300, 6000),
    }
    for i in range(n):
        params = {
            "family": "convnet",
            "convnet.width": int(rng.integers(4, 64)),
            "budget": int(rng.integers(300, 6000)),
        }
        if i % 5 == 2:  # too big for the constraint: gated before training
            params.update({"convnet.width": 60, "budget": 5900})
        if fail_every and i % fail_every == fail_every - 1:
            trial = create_trial(
                state=TrialState.FAIL,
                params=params,
                distributions=dists,
                user_attrs={"error": "NonFiniteLossError: loss became nan"},
            )
        else:
            m = _metrics(rng, params["convnet.width"], params["budget"])
            attrs = {
                "metrics": m,
                "feasible": bool(m["feasible"]),
                "constraints": [m["constraint_0"]],
                "trial_config": {"seed": i},
                "artifact": None,
            }
            values = [m["accuracy"], m["params"], m.get("latency_ms", float("inf"))]
            trial = create_trial(
                state=TrialState.COMPLETE,
                values=values,
                params=params,
                distributions=dists,
                user_attrs=attrs,
            )
        # parallel workers finish out of number order
        trial.datetime_start = start + dt.timedelta(seconds=30 * i)
        trial.datetime_complete = trial.datetime_start + dt.timedelta(
            seconds=int(rng.integers(1, 90))
        )
        study.add_trial(trial)


def _study(tmp: Path, name: str, n: int, **kw) -> optuna.Study:
    """A study in real SQLite storage, written with SEARCH.md's conventions, then reloaded."""
    url = f"sqlite:///{tmp / 'npas.db'}"
    study = optuna.create_study(
        storage=url, study_name=name, directions=[d for _, d in OBJECTIVES]
    )
    study.set_user_attr("objectives", OBJECTIVES)
    study.set_user_attr("constraints", [f"params <= {LIMIT:g}"])
    study.set_user_attr("optimiser", "nsga2")
    _fill(study, n, **kw)
    return optuna.load_study(study_name=name, storage=url)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[optuna.Study, dict[str, Path]]:
    tmp = tmp_path_factory.mktemp("report")
    study = _study(tmp, "digits-quick", 18, fail_every=6)
    return study, write_report(study, tmp / "out")


def test_report_writes_every_file(report):
    study, paths = report
    expected = {
        "report.html",
        "report.md",
        "trials.csv",
        "pepr_isoclines.png",
        "hypervolume.png",
        "disagreement.png",
    }
    expected |= {
        f"accuracy_vs_{n}.png"
        for n in ("params", "flops_infer", "latency_ms", "throughput", "energy_infer_j")
    }
    assert expected <= set(paths)
    for name, path in paths.items():
        assert path.is_file() and path.stat().st_size > 200, name
        if name.endswith(".png"):
            pixels = imread(path)
            assert pixels.shape[0] > 200 and pixels[..., :3].std() > 0.05, name
    csv = pd.read_csv(paths["trials.csv"])
    assert len(csv) == len(study.trials) == 18
    assert csv["error"].dropna().str.contains("NonFiniteLossError").sum() == 3


def test_report_text_states_selection_hypervolume_and_conditions(report):
    study, paths = report
    md = paths["report.md"].read_text()
    frame = trials_frame(study)
    assert "Selection `knee`: **trial" in md and "tradeoff selector" in md
    assert "reference point (1.1, 1.1, 1.1) in normalised space" in md
    assert "Constant over all trials (they cannot rank trials): peak_mem_infer_mb" in md
    assert "Kendall τ" in md and "Jaccard" in md
    front_header = next(line for line in md.splitlines() if line.startswith("| number"))
    for column in (
        "selected",
        "accuracy",
        "params",
        "latency_ms",
        "cond_device",
        "cond_threads",
        "params_convnet.width",
    ):
        assert column in front_header
    assert "Failed and infeasible trials" in md and "params" in md
    gated = frame[frame["state"].eq("COMPLETE") & ~frame["feasible"]]
    assert len(gated) > 0  # the fixture does contain infeasible trials
    for name in paths:
        if name.endswith(".png"):
            assert f"]({name})" in md


def test_html_is_self_contained(report):
    _, paths = report
    html = paths["report.html"].read_text()
    assert "<script" not in html.lower() and "@import" not in html
    assert not re.search(r"https?://", html)
    sources = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert sources and all(s.startswith("data:") for s in sources)
    n_png = sum(name.endswith(".png") for name in paths)
    assert html.count('src="data:image/png;base64,') == n_png


def _chromium() -> str:
    """Debian's chromium; .ci/run installs it, and its absence fails the test (never skips)."""
    found = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
    assert found, "headless Chromium is needed: apt-get install -y chromium"
    return found


def _load_in_chromium(page: Path, tmp: Path) -> tuple[list[str], np.ndarray]:
    """Loads ``page`` headless: (console messages Chromium logged, the screenshot pixels)."""
    shot = tmp / "shot.png"
    cmd = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        f"--screenshot={shot}",
        "--window-size=1280,2000",
        page.resolve().as_uri(),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert shot.is_file(), done.stderr[-2000:]
    console = [
        line for line in done.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line
    ]
    return console, imread(shot)[..., :3]


def test_console_capture_catches_errors(tmp_path):
    # the harness must see errors, or "no console message" below would prove nothing
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body>'
        '<p>x</p><script>console.error("deliberate"); missingFn();</script>'
        "</body></html>"
    )
    console, _ = _load_in_chromium(bad, tmp_path)
    assert any("deliberate" in line for line in console)
    assert any("Uncaught ReferenceError" in line for line in console)


def test_html_loads_in_headless_chromium_without_console_messages(report, tmp_path):
    _, paths = report
    console, pixels = _load_in_chromium(paths["report.html"], tmp_path)
    assert console == []
    assert pixels.shape[:2] == (2000, 1280)
    not_white = (pixels < 0.9).any(axis=2).mean()
    assert pixels.std() > 0.05 and not_white > 0.02  # text, tables and plots are drawn


def test_study_with_one_trial(tmp_path):
    study = _study(tmp_path, "one", 1, seed=3)
    paths = write_report(study, tmp_path / "out", indicators=["params", "latency_ms"])
    md = paths["report.md"].read_text()
    assert "**trial 0**" in md
    assert "Nothing to compare" not in md and "hypervolume.png" in paths


def test_study_without_a_feasible_trial_says_so(tmp_path):
    url = f"sqlite:///{tmp_path / 'npas.db'}"
    study = optuna.create_study(
        storage=url, study_name="gated", directions=[d for _, d in OBJECTIVES]
    )
    rng = np.random.default_rng(0)
    gated = [_metrics(rng, 64, 6000) for _ in range(3)]  # params 5760 > limit: no latency_ms
    failed = {"state": "FAIL", "error": "OutOfMemoryError"}
    npas_study([*gated, failed], OBJECTIVES, study=study)
    paths = write_report(study, tmp_path / "out")
    md = paths["report.md"].read_text()
    assert "no trial selected (no feasible trial: all 3 completed trial(s) are infeasible)" in md
    assert "The front is empty" in md and "OutOfMemoryError" in md
    assert paths["report.html"].stat().st_size > 1000


def test_only_failed_trials_and_missing_indicators(tmp_path):
    study = _study(tmp_path, "failing", 2, fail_every=1)
    paths = write_report(study, tmp_path / "out", indicators=["params", "co2_infer_g"])
    md = paths["report.md"].read_text()
    assert "no trial selected" in md
    assert "Indicators asked for but not recorded: params, co2_infer_g" in md
    assert "No hypervolume: no completed trial among 2 trial(s)" in md
    assert not [p for p in paths if p.endswith(".png")]


def test_selection_that_finds_nothing_is_reported(tmp_path):
    study = _study(tmp_path, "eps", 6, seed=1)
    paths = write_report(
        study, tmp_path / "out", select="epsilon:params<=1", indicators=["params", "latency_ms"]
    )
    md = paths["report.md"].read_text()
    assert "Selection `epsilon:params<=1`: no trial selected (no trial qualifies" in md
