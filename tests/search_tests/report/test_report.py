"""search.report._report: a report built from a real SQLite study renders every file, its HTML is
self-contained and loads in headless Chromium with no console message, and awkward studies
(failures, no feasible trial, one trial, constant or missing indicators) still render."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import optuna
import pandas as pd
import pytest
from matplotlib.image import imread
from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from search.config import Constraint
from search.pareto._frame import objectives_of, trials_frame
from search.record import read_study
from search.record._schema import TrialAttr
from search.report._importance import MIN_TRIALS, param_importances
from search.report._interactive import trade_off
from search.report._plots import accuracy_vs
from search.report._report import _decisions_section, _front, write_report
from search.report._scatter import (
    FRONT_LABEL,
    INFEASIBLE_LABEL,
    REFUSED_LABEL,
    STOPPED_LABEL,
    Marks,
    scatter,
    staircase,
)
from tests._support.waiting import wait_until
from tests.search_tests.disks import UNWRITABLE, unwritable
from tests.search_tests.studies import npas_study

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow  # reports of real studies: seconds of plotting each

optuna.logging.set_verbosity(optuna.logging.WARNING)

OBJECTIVES = [["accuracy", "maximize"], ["params", "minimize"], ["latency_ms", "minimize"]]
LIMIT = 5000.0
#: A limit some trained trials miss: infeasible after training, with the violation to show.
LATENCY_LIMIT = 0.3
PANEL = ["params", "flops_infer", "latency_ms", "peak_mem_infer_mb", "energy_infer_j"]


def _metrics(rng: np.random.Generator, width: int, budget: int) -> dict:
    """A run_trial-shaped result dict with realistic keys and plausible values."""
    params = float(min(budget, 90 * width))
    gated = params > LIMIT  # an analytic constraint violated: no training (search/trial.py)
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
    latency = 0.08 + params / 2e4 + 0.03 * rng.random()
    return {
        **m,
        "feasible": float(latency <= LATENCY_LIMIT),
        "constraint_1": latency - LATENCY_LIMIT,
        "latency_ms": latency,
        "accuracy": acc,
        "test_accuracy": acc - 0.01,
        "val_loss": 1.2 - acc,
        "latency_p90_ms": 0.1 + params / 2e4,
        "throughput": 1e5 / (1 + params / 100),
        "peak_mem_infer_mb": 212.0,  # constant: VmHWM of the process dominates
        "energy_infer_j": params * 2e-7 * (1 + rng.random()),
        "energy_source": "estimate",
        "train_time_s": 1.0 + params / 1000,
    }


def _curve(accuracy: float, epochs: int) -> list[dict]:
    return [{"epoch": e, "accuracy": accuracy * (1 - 0.5**e)} for e in range(1, epochs + 1)]


def _fill(
    study: optuna.Study,
    n: int,
    *,
    seed: int = 0,
    fail_every: int = 0,
    stop_every: int = 0,
    extra: dict[int, dict] | None = None,
) -> None:
    """``n`` trials of two families (each with its own width: a conditional parameter); every
    5th from the 3rd gated by the constraint, every ``fail_every``-th failed, every
    ``stop_every``-th stopped early by the scheduler after 2 of 4 epochs; ``extra``: more
    user attributes of trial ``i``."""
    rng = np.random.default_rng(seed)
    start = dt.datetime(2025, 1, 1)
    for i in range(n):
        family = "convnet" if i % 3 else "mlp"
        params = {
            "family": family,
            f"{family}.width": int(rng.integers(4, 64)),
            "budget": int(rng.integers(300, 6000)),
        }
        if i % 5 == 2:  # too big for the constraint: gated before training
            params.update({f"{family}.width": 60, "budget": 5900})
        dists = {
            "family": CategoricalDistribution(["convnet", "mlp"]),
            f"{family}.width": IntDistribution(4, 64),
            "budget": IntDistribution(300, 6000),
        }
        if fail_every and i % fail_every == fail_every - 1:
            trial = create_trial(
                state=TrialState.FAIL,
                params=params,
                distributions=dists,
                user_attrs={"error": "NonFiniteLossError: loss became nan"},
            )
        elif stop_every and i % stop_every == stop_every - 1:
            m = _metrics(rng, params[f"{family}.width"], params["budget"])
            curve = _curve(m["accuracy"], 2)
            m["accuracy"] = curve[-1]["accuracy"]
            trial = create_trial(
                state=TrialState.PRUNED,
                params=params,
                distributions=dists,
                user_attrs={"metrics": m, "curve": curve, "pruned_at_epoch": 2},
            )
        else:
            m = _metrics(rng, params[f"{family}.width"], params["budget"])
            attrs = {
                "metrics": m,
                "feasible": bool(m["feasible"]),
                "constraints": [m["constraint_0"], m.get("constraint_1", 0.0)],
                "trial_config": {"seed": i},
                "artifact": None,
            }
            if stop_every and m["feasible"]:
                attrs["curve"] = _curve(m["accuracy"], 4)
            values = [m["accuracy"], m["params"], m.get("latency_ms", float("inf"))]
            trial = create_trial(
                state=TrialState.COMPLETE,
                values=values,
                params=params,
                distributions=dists,
                user_attrs=attrs,
            )
        for key, value in (extra or {}).get(i, {}).items():
            trial.set_user_attr(key, value)
        # parallel workers finish out of number order
        trial.datetime_start = start + dt.timedelta(seconds=30 * i)
        trial.datetime_complete = trial.datetime_start + dt.timedelta(
            seconds=int(rng.integers(1, 90))
        )
        study.add_trial(trial)


def _study(tmp: Path, name: str, n: int, **kw) -> optuna.Study:
    """A study in real SQLite storage, written as search.record._storage records, then reloaded."""
    url = f"sqlite:///{tmp / 'npas.db'}"
    study = optuna.create_study(
        storage=url, study_name=name, directions=[d for _, d in OBJECTIVES]
    )
    study.set_user_attr("objectives", OBJECTIVES)
    limits = [f"params <= {LIMIT:g}", f"latency_ms <= {LATENCY_LIMIT:g}"]
    study.set_user_attr("constraints", limits)
    study.set_user_attr("optimiser", "nsga2")
    _fill(study, n, **kw)
    return optuna.load_study(study_name=name, storage=url)


def _decision(rung: int, outcome: str, rank: int, n: int, top: int, **kw) -> dict:
    """One rung decision as the search stores it in ``npas:decisions``."""
    return {"rung": rung, "outcome": outcome, "rank": rank, "n": n, "arrival": rank,
            "top": top, "at_chance": False, **kw}  # fmt: skip


#: Rung decisions of a promotion-type MOASHA on four of the fixture's trials (0 and 1
#: complete, 6 and 13 stopped after 2 epochs), and why a time limit stopped trial 13.
DECISIONS = {
    0: {
        TrialAttr.DECISIONS: [_decision(1, "continue", 0, 1, 1), _decision(2, "continue", 0, 1, 1)]
    },
    1: {TrialAttr.DECISIONS: [_decision(1, "continue", 0, 2, 1, at_chance=True)]},
    6: {
        TrialAttr.DECISIONS: [
            _decision(1, "pause", 1, 4, 2),
            _decision(1, "promote", 1, 6, 3),
            _decision(2, "stop", 3, 4, 2),
        ]
    },
    13: {
        TrialAttr.DECISIONS: [
            _decision(1, "pause", 2, 5, 2),
            _decision(1, "stop", 2, 5, 2, why="the search ended before it could be promoted"),
        ],
        TrialAttr.STOPPED: "trial timeout: 0.75 s of training > 0.5 s",
    },
}


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[optuna.Study, dict[str, Path]]:
    tmp = tmp_path_factory.mktemp("report")
    study = _study(tmp, "digits-quick", 18, fail_every=6, stop_every=7, extra=DECISIONS)
    return study, write_report(study, tmp / "out")


def _md_table(md: str, caption: str) -> list[str]:
    """The lines of the Markdown table under ``**caption**``."""
    return md[md.index(f"**{caption}**") :].split("\n\n")[1].splitlines()


def test_report_writes_every_file(report):
    study, paths = report
    expected = {
        "report.html",
        "report.md",
        "trials.csv",
        "objective_front.png",
        "pepr_isoclines.png",
        "hypervolume.png",
        "learning_curves.png",
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
    # the frame's column names (as in `search pareto`, its CSV and JSON): metrics by their
    # own name, sampled parameters params_<name>, no name with a space
    # (the study's per-trial test figures, recorded with report_test, left out)
    tested = ["test_accuracy"]
    assert list(csv.columns) == [c for c in trials_frame(study).columns if c not in tested]
    sampled = {f"params_{name}" for trial in study.trials for name in trial.params}
    assert {c for c in csv.columns if c.startswith("params_")} == sampled
    assert csv["params"].dtype == float and not any(" " in c for c in csv.columns)
    assert pd.api.types.is_numeric_dtype(csv["flops_infer"])
    assert csv["error"].dropna().str.contains("NonFiniteLossError").sum() == 3


def test_report_text_states_selection_hypervolume_and_conditions(report):
    study, paths = report
    md = paths["report.md"].read_text()
    frame = trials_frame(study)
    assert "Selection `knee`: **trial" in md and "tradeoff selector" in md
    assert "reference point (1.1, 1.1, 1.1) in normalised space" in md
    assert "Constant over all trials (they cannot rank trials): peak_mem_infer_mb" in md
    assert "Kendall τ" in md and "Jaccard" in md
    front_header = _md_table(md, "Front")[0]
    for column in ("selected", "accuracy", "params", "latency_ms"):
        assert column in front_header
    # the hyper-parameters in a table of their own, by dimension name: each table fits the
    # page (one of 21 columns scrolled sideways), and a long column name may break in HTML
    hypers = _md_table(md, "Front: hyper-parameters")[0]
    assert "| convnet.width |" in hypers and "params_" not in hypers + front_header
    assert max(len(h.split("|")) - 2 for h in (front_header, hypers)) <= 14
    html = paths["report.html"].read_text()
    assert "<th>latency_<wbr>ms</th>" in html and "<th>convnet.<wbr>width</th>" in html
    # conditions equal on every front row are stated once, above the table
    assert "cond_device" not in front_header and "cond_threads" not in front_header
    measured = next(line for line in md.splitlines() if line.startswith("Measured under"))
    assert measured.startswith("Measured under (the same for every trial below): ")
    for condition in ("cond_batch=1", "cond_device=cpu", "cond_threads=1"):
        assert condition in measured
    assert "## Infeasible and failed trials" in md
    # the text explains every marker with the legends' own words
    for label in (INFEASIBLE_LABEL, REFUSED_LABEL, STOPPED_LABEL, FRONT_LABEL):
        assert f'"{label}"' in md, label
    gated = frame[frame["state"].eq("COMPLETE") & ~frame["feasible"]]
    assert len(gated) > 0  # the fixture does contain infeasible trials
    for name in paths:
        if name.endswith(".png"):
            assert f"]({name})" in md


def test_report_ranks_parameters_per_objective(report):
    _, paths = report
    md = paths["report.md"].read_text()
    table = md[md.index("**Importance**") :].split("\n\n")[1].splitlines()
    assert table[0] == "| parameter | accuracy | params | latency_ms |"
    rows = {line.split(" | ")[0].strip("| "): line for line in table[2:]}
    # the widths are conditional on the family: only what every feasible trial sampled
    assert set(rows) == {"budget", "family"}
    for objective in range(3):
        shares = [float(row.strip("| ").split(" | ")[1 + objective]) for row in rows.values()]
        assert sum(shares) == pytest.approx(1.0, abs=0.01)
    assert "No parameter importance" not in md
    assert "*Parallel coordinates: interactive only, in `report.html`.*" in md


def test_report_is_on_validation_only_and_says_where_the_test_figure_comes_from(report):
    """The fixture's trials carry test_accuracy (a search with report_test: true): no figure,
    table or file of the report shows it, and the report says where a test figure comes from."""
    study, paths = report
    assert "test_accuracy" in trials_frame(study).columns
    assert "test_accuracy" not in paths["trials.csv"].read_text(encoding="utf-8")
    md = paths["report.md"].read_text(encoding="utf-8")
    section = md[md.index("## The test split") :].split("\n## ")[0]
    # named only in that section's text (where it comes from, what is left out)
    assert "test_accuracy" not in md.replace(section, "")
    assert paths["report.html"].read_text(encoding="utf-8").count("test_accuracy") == 2
    assert "comes from `search export`, which reads the test split once, for the exported " \
        "model only" in section  # fmt: skip
    assert "also recorded test_accuracy per trial (`report_test: true`" in section
    assert "Validation vs test" not in md and "test accuracy" not in md.replace(section, "")


def test_report_shows_the_schedulers_rung_decisions(report):
    _, paths = report
    md = paths["report.md"].read_text()
    titles = [line for line in md.splitlines() if line.startswith("## ")]
    at = titles.index("## Scheduler decisions")
    assert titles[at - 1] == "## Learning curves"  # right after the curves
    assert "8 rung decision(s) by the multi-fidelity scheduler on 4 trial(s): continue 3, " \
        "stop 2, pause 2, promote 1." in md  # fmt: skip
    counts = _md_table(md, "Decisions per rung and outcome")
    assert counts[0] == "| rung | trials | continue | stop | pause | promote |"
    assert counts[2:] == ["| 1 | 4 | 2 | 1 | 2 | 1 |", "| 2 | 2 | 1 | 1 | 0 | 0 |"]
    trails = _md_table(md, "Decision trail per trial")
    assert trails[0] == "| number | state | epochs | decisions | stopped |"
    assert [row.split(" | ")[0] for row in trails[2:]] == ["| 0", "| 1", "| 6", "| 13"]
    assert (
        "| 6 | PRUNED | 2 | 1: pause (rank 1 of 4, top 2) → promote (rank 1 of 6, top 3); "
        "2: stop (rank 3 of 4, top 2) | — |" in trails
    )
    assert (
        "| 13 | PRUNED | 2 | 1: pause (rank 2 of 5, top 2) → stop (the search ended before "
        "it could be promoted) | trial timeout: 0.75 s of training > 0.5 s |" in trails
    )
    assert "| 1 | COMPLETE | 4 | 1: continue (rank 0 of 2, top 1, at chance) | — |" in trails
    html = paths["report.html"].read_text()
    assert "<h2>Scheduler decisions</h2>" in html and "<h3>Decision trail per trial</h3>" in html
    assert "1: pause (rank 1 of 4, top 2) → promote (rank 1 of 6, top 3)" in html


def test_decision_table_keeps_the_front_and_the_40_most_recent_trials():
    log = [_decision(1, "pause", 0, 2, 1), _decision(1, "promote", 0, 3, 1)]
    rows = [{"accuracy": 0.5 + 0.001 * i, "params": 1000.0 - i} for i in range(60)]
    rows[3] = {"accuracy": 0.99, "params": 1.0}  # dominates every other trial
    study = npas_study(rows, attrs={TrialAttr.DECISIONS: log})
    frame = trials_frame(study)
    front = _front(frame, objectives_of(study))
    assert front.numbers == [3]
    section = _decisions_section(read_study(study), front, frame)
    assert section is not None
    counts, trails = (table for _, table in section.tables)
    assert counts.to_dict("records") == [{"rung": 1, "trials": 60, "pause": 60, "promote": 60}]
    assert trails["number"].tolist() == [3, *range(20, 60)]
    assert "stopped" not in trails  # no trial was stopped by a time limit
    assert trails["decisions"][0] == "1: pause (rank 0 of 2, top 1) → promote (rank 0 of 3, top 1)"
    assert "60 trials have decisions; shown are 41, the front's 1 and the 40 most recent: " \
        "19 left out." in section.text  # fmt: skip
    assert _decisions_section(read_study(npas_study(rows[:5])), front, frame) is None


def test_html_is_self_contained(report):
    _, paths = report
    html = paths["report.html"].read_text()
    assert "@import" not in html and '<link rel="stylesheet"' not in html
    # plotly.js embedded once (it mentions URLs in its code; the Chromium test below shows it
    # requests none), nothing loaded from elsewhere
    assert html.count("<script>/**\n* plotly.js v") == 1
    assert not re.search(r"<script[^>]+src=", html)
    markup = re.sub(r"<script>.*?</script>", "", html, flags=re.S)
    sources = re.findall(r'(?:src|href)="([^"]*)"', markup)
    assert sources and all(s.startswith("data:") for s in sources)
    # PNGs without an interactive version are embedded; the others are shown interactive
    assert markup.count('src="data:image/png;base64,') == 3  # isoclines, hypervolume, heatmaps
    # one per indicator, the front matrix, importance, parallel coordinates and the learning
    # curves (no test figure: the report is on validation only)
    trade_offs = len([n for n in paths if n.startswith("accuracy_vs_")])
    assert html.count('class="plotly-graph-div"') == trade_offs + 4
    assert '"hovertext":["trial ' in html


@dataclass
class Loaded:
    """What headless Chromium saw of a page."""

    console: list[str]  # console messages and uncaught errors
    pixels: np.ndarray  # the screenshot
    dom: str  # the DOM after its scripts ran
    requests: list[str]  # URLs the page asked the network for


#: SwiftShader's notes on slow pixel read-backs (software WebGL draws the parallel
#: coordinates in a headless browser): the GPU driver's messages, not the page's.
_GL_NOTE = "GL Driver Message (OpenGL, Performance"


def _chromium() -> str:
    """Debian's chromium; .ci/run installs it, and its absence fails the test (never skips)."""
    found = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
    assert found, "headless Chromium is needed: apt-get install -y chromium"
    return found


def _page_requests(net_log: Path) -> list[str]:
    """URLs of the network requests a page started, from Chromium's net log (the browser's own
    background requests carry no origin and are left out)."""
    log = json.loads(net_log.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    begun = [e["params"] for e in log["events"] if e["type"] == start and "url" in e["params"]]
    return [p["url"] for p in begun if p.get("initiator") != "not an origin"]


def _load_in_chromium(page: Path, tmp: Path) -> Loaded:
    """Loads ``page`` headless with no name resolving (nothing can leave the machine) and
    software WebGL; records its console, DOM, screenshot and network requests."""
    shot, net_log = tmp / "shot.png", tmp / "net.json"
    cmd = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--enable-unsafe-swiftshader",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--log-net-log={net_log}",
        f"--user-data-dir={tmp / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=10000",
        f"--screenshot={shot}",
        "--dump-dom",
        "--window-size=1280,2000",
        page.resolve().as_uri(),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert shot.is_file(), done.stderr[-2000:]
    console = [
        line
        for line in done.stderr.splitlines()
        if (":CONSOLE" in line or "Uncaught" in line) and _GL_NOTE not in line
    ]
    return Loaded(console, imread(shot)[..., :3], done.stdout, _page_requests(net_log))


@pytest.mark.browser
def test_chromium_harness_catches_errors_and_requests(tmp_path):
    # the harness must see errors and requests, or "none" below would prove nothing
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body>'
        '<p>x</p><img src="http://example.invalid/a.png">'
        '<script>fetch("https://cdn.example.invalid/p.js").catch(() => {});'
        'console.error("deliberate"); missingFn();</script>'
        "</body></html>"
    )
    page = _load_in_chromium(bad, tmp_path)
    assert any("deliberate" in line for line in page.console)
    assert any("Uncaught ReferenceError" in line for line in page.console)
    assert set(page.requests) == {
        "http://example.invalid/a.png",
        "https://cdn.example.invalid/p.js",
    }
    assert "<p>x</p>" in page.dom


def _plot_divs(dom: str) -> dict[str, str]:
    """The markup of each plotly figure after rendering (its div and caption), by div id."""
    parts = [p.split("</figure>")[0] for p in re.split(r'(?=<div id="plot-\d+")', dom)[1:]]
    return {re.match(r'<div id="(plot-\d+)"', p)[1]: p for p in parts}


@pytest.mark.browser
def test_html_renders_in_headless_chromium_offline_without_console_messages(report, tmp_path):
    _, paths = report
    page = _load_in_chromium(paths["report.html"], tmp_path)
    assert page.console == []
    assert page.requests == []
    assert page.pixels.shape[:2] == (2000, 1280)
    not_white = (page.pixels < 0.9).any(axis=2).mean()
    assert page.pixels.std() > 0.05 and not_white > 0.02  # text, tables and plots are drawn
    divs = _plot_divs(page.dom)
    assert len(divs) == paths["report.html"].read_text().count('class="plotly-graph-div"')
    for name, markup in divs.items():
        assert 'class="main-svg"' in markup, name  # plotly drew it
    scatters = [m for m in divs.values() if 'class="point"' in m]
    assert len(scatters) >= 6  # every accuracy-vs-indicator plot and the matrix
    matrix = next(m for m in divs.values() if "every pair of objectives" in m)
    assert matrix.count('class="point"') > 30 and "limit params &lt;= 5000" in matrix
    # the legend, as drawn, names every kind of marker and the dashed limits
    legend = re.findall(r'class="legendtext"[^>]*>([^<]*)<', matrix)
    for label in (
        INFEASIBLE_LABEL,
        REFUSED_LABEL,
        STOPPED_LABEL,
        FRONT_LABEL,
        "convnet",
        "mlp",
        "limit params &lt;= 5000 (dashed)",
        "limit latency_ms &lt;= 0.3 (dashed)",
    ):
        assert label in legend, (label, legend)  # fmt: skip
    # every trained infeasible trial: the constraint it missed, its value, the limit, by how much
    table = page.dom[page.dom.index("Infeasible trials: the constraint missed") :]
    table = table[: table.index("</table>")]
    rows = [re.findall(r"<td>([^<]*)</td>", r) for r in table.split("<tr>")[2:]]
    trained = [r for r in rows if r[2] == "True"]
    assert [(r[0], r[1], r[3], r[5]) for r in trained] == [
        ("8", "COMPLETE", "latency_ms &lt;= 0.3", "0.3")
    ]
    value, by = float(trained[0][4]), float(trained[0][6])
    assert by > 0 and value - 0.3 == pytest.approx(by, abs=1e-5)
    assert {r[3] for r in rows if r[2] == "False"} == {"params &lt;= 5000"}
    parallel = next(m for m in divs.values() if "feasible trial(s); front in red" in m)
    assert "<canvas" in parallel  # parcoords draws its lines with WebGL
    bars = next(m for m in divs.values() if "Parameter importance" in m)
    assert bars.count('class="trace bars"') == 3  # one per objective


def test_scatter_marks_families_infeasible_trials_and_limits(report):
    study, _ = report
    frame = trials_frame(study)
    marks = Marks(frame["params_family"], knee=4, constraints=(Constraint("params <= 5000"),))
    on_front = frame["number"].isin([0, 4])
    panel = scatter(frame, "params", "accuracy", marks, on_front=on_front)
    fig = trade_off(panel, staircase(panel, on_front, frame), direction="minimize", unit="count")
    traces = {t.name: t for t in fig.data if t.name}
    kinds = {"convnet", "mlp", INFEASIBLE_LABEL, REFUSED_LABEL, STOPPED_LABEL, FRONT_LABEL}
    assert kinds | {"selected (trial 4)", "limit params <= 5000 (dashed)"} == set(traces)
    assert traces[INFEASIBLE_LABEL].marker.color == traces[STOPPED_LABEL].marker.color
    mlp = frame[frame["feasible"] & frame["params_family"].eq("mlp")]
    assert sorted(traces["mlp"].x) == sorted(mlp["params"])
    assert traces["mlp"].hovertext[0].startswith("trial 0 · mlp<br>params = ")
    # an infeasible trial's hover says which constraint it missed and by how much
    (hover,) = traces[INFEASIBLE_LABEL].hovertext
    assert hover.startswith("trial 8 · convnet · infeasible: violates latency_ms <= 0.3 (by ")
    assert [s.x0 for s in fig.layout.shapes] == [5000.0]  # the constraint's limit
    assert fig.layout.yaxis.range[0] > 0.5  # gated trials (accuracy 0) below the first view
    # the PNG draws the same panel: the same kinds, labels and points in its legend
    png = accuracy_vs(panel, staircase(panel, on_front, frame), unit="count")
    legend = [t.get_text() for t in png.axes[0].get_legend().get_texts()]
    assert {label.split(" [")[0] for label in legend} == set(traces)
    assert f"{REFUSED_LABEL} [3 below the axis]" in legend


def test_a_log_axis_is_labelled_at_its_decades_only():
    """Plotly labelled a log axis "2", "5" between the decades as well; they are minor ticks."""
    import plotly.graph_objects as go

    from search.report._interactive import _scale_axes

    points = np.array([[900.0, 0.9], [2.0e5, 0.95]])
    panel = SimpleNamespace(points=points, log=(True, False), y_floor=np.nan)
    fig = go.Figure(go.Scatter(x=points[:, 0], y=points[:, 1]))
    _scale_axes(fig, panel, {})
    axis = fig.layout.xaxis
    assert axis.type == "log" and axis.dtick == 1 and axis.minor.dtick == "D1"
    assert fig.layout.yaxis.type is None


def test_study_with_one_trial(tmp_path):
    study = _study(tmp_path, "one", 1, seed=3)
    paths = write_report(study, tmp_path / "out", indicators=["params", "latency_ms"])
    md = paths["report.md"].read_text()
    assert "**trial 0**" in md
    assert "Nothing to compare" not in md and "hypervolume.png" in paths
    assert (
        "No parameter importance: it needs at least 8 feasible completed trials (fANOVA fits "
        "a random forest on them); this study has 1." in md
    )
    assert "1 feasible trial(s); front in red" in paths["report.html"].read_text()
    assert "Scheduler decisions" not in md  # no trial has rung decisions


def test_importance_leaves_out_a_constant_objective():
    rows = [{"accuracy": 0.5 + 0.04 * i, "params": 100.0} for i in range(MIN_TRIALS)]
    study = npas_study(rows)
    found = param_importances(study.trials, [("accuracy", "maximize"), ("params", "minimize")])
    assert found.table is not None and list(found.table.columns) == ["parameter", "accuracy"]
    assert found.table["accuracy"].tolist() == [1.0]  # width alone decides
    assert "Constant over the feasible trials, so not ranked: params." in found.notes


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
    assert "No front to draw: no feasible trial" in md
    assert "No parameter importance: it needs at least 8" in md and "this study has 0." in md
    assert paths["report.html"].stat().st_size > 1000


def test_only_failed_trials_and_missing_indicators(tmp_path):
    study = _study(tmp_path, "failing", 2, fail_every=1)
    paths = write_report(study, tmp_path / "out", indicators=["params", "co2_infer_g"])
    md = paths["report.md"].read_text()
    assert "no trial selected" in md
    assert "Indicators asked for but not recorded: params, co2_infer_g" in md
    assert "No hypervolume: no completed trial among 2 trial(s)" in md
    assert not [p for p in paths if p.endswith(".png")]
    assert "No trial of this search read the test split." in md  # no test figure recorded


def test_selection_that_finds_nothing_is_reported(tmp_path):
    study = _study(tmp_path, "eps", 6, seed=1)
    paths = write_report(
        study, tmp_path / "out", select="epsilon:params<=1", indicators=["params", "latency_ms"]
    )
    md = paths["report.md"].read_text()
    assert ("Selection `epsilon:params<=1`: no trial selected (no feasible trial has params "
            "<= 1; the smallest found is ") in md  # fmt: skip


def _report_command(run: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "search", "report", "--run", str(run), "--name", "digits-quick",
            "--out", str(out)]  # fmt: skip


@pytest.mark.parametrize("where", UNWRITABLE)
def test_a_report_it_cannot_write_is_refused_before_any_plot(report, tmp_path, capsys, where):
    from search.cli import main

    run = report[1]["report.html"].parent.parent  # the fixture's npas.db
    with unwritable(tmp_path / "dest", where) as folder:
        assert main(_report_command(run, folder)[3:]) == 1
        done = capsys.readouterr()
        assert done.out == "", done
        assert done.err.startswith("search report: OutputError: --out"), done.err
        assert len(done.err.strip().splitlines()) == 1, done.err
        if where == "full":
            assert sorted(p.name for p in folder.iterdir()) == ["filler"]


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_while_a_report_is_written_leaves_no_half_report_and_exits_130(report, tmp_path):
    # Before, the PNGs written so far stayed without report.html, and it sometimes exited 0.
    run = report[1]["report.html"].parent.parent
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    # Ctrl-C as a terminal sends it: to a process that has not inherited SIGINT ignored (a
    # test before this one in the same worker may have left it so; Python then installs no
    # KeyboardInterrupt handler, the report ran to its end and exited 0 in two full runs)
    proc = subprocess.Popen(_report_command(run, out), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=_sigint_default)  # fmt: skip
    try:
        wait_until(lambda: any(out.rglob("*.png")), 120, interval_s=0.02, what="a first PNG")
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (proc.returncode, stdout, stderr)
    assert "search report: interrupted" in stderr and "Traceback" not in stderr, stderr
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_the_first_table_sets_weights_beside_params_and_duplicates_are_one_row(tmp_path):
    """Issue 59: the deployed size in view (a Shapeshifted net trains 134 parameters and its
    exported model holds 4,810 weights) and 66 equal trials of one config one front row."""
    rows = [*({"accuracy": 0.97, "params": 134.0, "weights": 4810.0, "width": 4}
              for _ in range(66)),
            {"accuracy": 0.99, "params": 900.0, "weights": 900.0, "width": 30},
            {"accuracy": 0.95, "params": 50.0, "weights": 50.0, "width": 2}]  # fmt: skip
    study = npas_study(rows)
    md = write_report(study, tmp_path / "out")["report.md"].read_text()
    first = md.index("| number |")
    assert md.index("## Summary") < first < md.index("## The multi-objective front")
    table = md[first:].split("\n\n")[0].splitlines()
    assert table[0] == "| number | selected | accuracy | params | weights | duplicates |"
    assert table[2:] == ["| 0 | True | 0.97 | 134 | 4810 | 65 |", "| 66 | False | 0.99 | 900 | "
                         "900 | 0 |", "| 67 | False | 0.95 | 50 | 50 | 0 |"]  # fmt: skip
    assert "(trials [0, 66, 67]), ringed in red" in md
    assert "trial 0 (and 65 duplicates, same config and values: trial(s) 1, 2, 3, 4, 5, ...)" in md
    assert "failed" not in md.split("Selection `knee`")[1].split("\n")[0]
    assert "(trials [0, 66, 67], 65 more of the same config and values)" in md
