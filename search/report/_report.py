"""The efficiency report of a study: what the user looks at after a search.

:func:`write_report` gathers the study into sections (summary, one plot per cost indicator,
PePR isoclines, hypervolume history, indicator disagreement, the front table, failures) and
renders them twice: ``report.md`` beside the PNGs for the terminal, and ``report.html`` with
the same PNGs embedded as data URIs, inline CSS and no script, so it opens offline. The full
trial table goes to ``trials.csv``. Anything missing (no feasible trial, a constant or
unrecorded indicator, a selector that finds nothing) becomes a sentence, not an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
from matplotlib.figure import Figure

from objectives._indicators import INDICATORS
from search.pareto._disagreement import disagreement
from search.pareto._frame import cost_indicators, direction_of, objectives_of, trials_frame
from search.pareto._selectors import Selection
from search.pareto._selectors import select as select_trial
from search.pareto._study_front import front_of, hypervolume_by_trial, why_empty
from search.report import _plots
from search.report._render import Section, render_html, render_markdown

__all__ = ["write_report"]

_PERFORMANCE = "accuracy"


def _save(fig: Figure, out: Path, name: str, paths: dict[str, Path]) -> str:
    path = out / name
    fig.savefig(path, format="png")
    paths[name] = path
    return name


def _summary(
    study: optuna.Study,
    frame: pd.DataFrame,
    objectives: list[tuple[str, str]],
    spec: str,
    chosen: Selection | None,
    note: str | None,
) -> Section:
    states = frame["state"].value_counts().to_dict() if len(frame) else {}
    complete = int(states.get("COMPLETE", 0))
    feasible = int((frame["feasible"] & (frame["state"] == "COMPLETE")).sum()) if len(frame) else 0
    lines = [
        f"Study **{study.study_name}**: {len(frame)} trial(s) — "
        + (", ".join(f"{k.lower()} {v}" for k, v in sorted(states.items())) or "none")
        + f"; {feasible} of {complete} completed trial(s) feasible.",
        "Objectives: " + ", ".join(f"{n} ({d})" for n, d in objectives) + ".",
    ]
    constraints = study.user_attrs.get("constraints") or []
    lines.append("Constraints: " + (", ".join(map(str, constraints)) or "none") + ".")
    if chosen is None:
        lines.append(f"Selection `{spec}`: no trial selected" + (f" ({note})." if note else "."))
    else:
        lines.append(f"Selection `{spec}`: **trial {chosen.number}** — {chosen.reason}.")
    return Section("Summary", lines)


def _selection(
    frame: pd.DataFrame, spec: str, objectives: list[tuple[str, str]]
) -> tuple[Selection | None, str | None]:
    """The selected trial, or None and why (the report says so instead of failing)."""
    names = [n for n, _ in objectives]
    if not objectives or any(n not in frame.columns for n in names):
        return None, why_empty(frame, names)
    chosen = select_trial(frame, spec, objectives)
    if chosen is None:
        front = front_of(frame, objectives)
        return None, front.message or f"no trial qualifies for {spec!r}"
    return chosen, None


def _indicator_sections(
    frame: pd.DataFrame,
    indicators: list[str],
    knee: int | None,
    out: Path,
    paths: dict[str, Path],
) -> list[Section]:
    if _PERFORMANCE not in frame.columns or not indicators:
        why = "no accuracy recorded" if _PERFORMANCE not in frame.columns else "no indicator"
        return [Section("Accuracy against each cost indicator", [f"Nothing to plot: {why}."])]
    images = []
    fronts = disagreement(frame, indicators, performance=_PERFORMANCE).fronts
    for name in indicators:
        unit = INDICATORS.get(name).unit if name in INDICATORS else ""
        fig = _plots.accuracy_vs(
            frame,
            name,
            unit=unit,
            direction=direction_of(name),
            front=fronts.get(name, []),
            knee=knee,
        )
        caption = (
            f"{_PERFORMANCE} vs {name} [{unit}]: front of {_PERFORMANCE} vs {name} in red "
            f"(trials {fronts.get(name, [])}), the selected trial starred"
        )
        images.append((_save(fig, out, f"accuracy_vs_{name}.png", paths), caption))
    costs = [n for n in indicators if direction_of(n) == "minimize"]
    section = Section("Accuracy against each cost indicator", [], images=images)
    iso = Section(
        "PePR isoclines",
        [
            "PePR = P / (1 + R) with R the cost min–max normalised over the feasible trials; "
            "lines are isoclines P = c (1 + R), on which every trial has PePR c: grey ones "
            "evenly spaced between the worst and best trial, the dashed one through the best "
            "trial (starred; the PePR knee, always on the front)."
        ],
    )
    if costs:
        fig = _plots.pepr_isoclines(frame, costs, performance=_PERFORMANCE)
        iso.images.append((_save(fig, out, "pepr_isoclines.png", paths), "PePR isoclines"))
    return [section, iso]


def _hypervolume_section(
    frame: pd.DataFrame, objectives: list[tuple[str, str]], out: Path, paths: dict[str, Path]
) -> Section:
    title = "Hypervolume history"
    names = [n for n, _ in objectives]
    if not (frame["state"] == "COMPLETE").any() or any(n not in frame.columns for n in names):
        return Section(title, [f"No hypervolume: {why_empty(frame, names)}."])
    history, final = hypervolume_by_trial(frame, objectives)
    text = [
        f"Final {final.describe()}.",
        "Bounds are fixed over all feasible trials, so the curve never decreases.",
    ]
    fig = _plots.hypervolume_curve(history, caption=f"final hypervolume {final.value:.4g}")
    return Section(title, text, images=[(_save(fig, out, "hypervolume.png", paths), title)])


def _disagreement_section(
    frame: pd.DataFrame, indicators: list[str], out: Path, paths: dict[str, Path]
) -> Section:
    title = "Indicator disagreement (the efficiency misnomer)"
    if len(indicators) < 2 or _PERFORMANCE not in frame.columns:
        return Section(title, ["Nothing to compare: needs accuracy and two cost indicators."])
    d = disagreement(frame, indicators, performance=_PERFORMANCE)
    text = [
        f"Over the {d.n_trials} feasible trial(s): Kendall τ between the rankings of every pair "
        "of indicators (both oriented as costs; 1 = same ranking, n/a = constant indicator or "
        "too few trials), and the Jaccard overlap of their accuracy-vs-indicator Pareto sets "
        "(1 = the same trials are efficient by both)."
    ]
    fig = _plots.disagreement_heatmap(d.tau, d.overlap)
    image = (_save(fig, out, "disagreement.png", paths), "Kendall τ and Pareto-set overlap")
    tables = [
        ("Kendall τ", d.tau.round(3).reset_index(names="indicator")),
        ("Pareto-set overlap (Jaccard)", d.overlap.round(3).reset_index(names="indicator")),
    ]
    return Section(title, text, tables=tables, images=[image])


def _front_section(
    frame: pd.DataFrame,
    objectives: list[tuple[str, str]],
    indicators: list[str],
    chosen: Selection | None,
) -> Section:
    title = "Front trials"
    if not objectives or any(n not in frame.columns for n, _ in objectives):
        names = [n for n, _ in objectives]
        return Section(title, [f"The front is empty: {why_empty(frame, names)}."])
    front = front_of(frame, objectives)
    if front.message:
        return Section(title, [f"The front is empty: {front.message}."])
    names = [n for n, _ in objectives]
    metrics = [c for c in (_PERFORMANCE, "test_accuracy") if c in frame and c not in names]
    conds = sorted(c for c in frame.columns if str(c).startswith("cond_"))
    extra = [c for c in ("energy_source",) if c in frame.columns]
    params = sorted(c for c in frame.columns if str(c).startswith("params_"))
    shown = [
        "number",
        *names,
        *metrics,
        *[i for i in indicators if i not in names],
        *extra,
        *conds,
        *params,
    ]
    table = frame.loc[front.mask, shown].copy()
    table.insert(1, "selected", table["number"] == (chosen.number if chosen else -1))
    text = [
        f"{len(table)} trial(s) on the feasible front of {', '.join(names)}; every indicator "
        "and the conditions it was measured under (cond_* columns)."
    ]
    return Section(title, text, tables=[("Front", table)])


def _curves_section(study: optuna.Study, out: Path, paths: dict[str, Path]) -> Section | None:
    """The learning curves, when trials reported per epoch (None for an older study)."""
    curves = [
        (t.number, t.state == optuna.trial.TrialState.COMPLETE, t.user_attrs["curve"])
        for t in study.get_trials(deepcopy=False)
        if t.user_attrs.get("curve")
    ]
    if not curves:
        return None
    title = "Learning curves"
    stopped = sum(not complete for _, complete, _ in curves)
    text = [
        f"{len(curves)} trial(s) reported per epoch; {stopped} were stopped early by the "
        "scheduler (grey, never on a front: their accuracy is not a full schedule's)."
    ]
    fig = _plots.learning_curves(curves, metric=_PERFORMANCE)
    return Section(title, text, images=[(_save(fig, out, "learning_curves.png", paths), title)])


def _failures_section(frame: pd.DataFrame) -> Section | None:
    refused = frame["infeasible_reason"].notna() if "infeasible_reason" in frame else False
    trained_infeasible = (frame["state"] == "COMPLETE") & ~frame["feasible"]
    bad = frame[(frame["state"] == "FAIL") | trained_infeasible | refused]
    if bad.empty:
        return None
    shown = [c for c in ("number", "state", "feasible", "error", "infeasible_reason") if c in bad]
    return Section("Failed and infeasible trials", [], tables=[("Not on any front", bad[shown])])


def write_report(
    study: optuna.Study,
    out_dir: str | Path,
    *,
    select: str = "knee",
    indicators: Sequence[str] | None = None,
) -> dict[str, Path]:
    """Writes the efficiency report of ``study`` into ``out_dir``.

    Args:
        study: An Optuna study written with npas's storage conventions.
        out_dir: Folder for the files (created if needed).
        select: Selection spec of the trial to mark (see :func:`search.pareto.select`);
            ``knee`` = the tradeoff selector.
        indicators: Cost indicators to plot and compare; None takes every registered
            indicator the study recorded. Names not recorded are listed in the report.

    Returns:
        File name → path of everything written: ``report.html``, ``report.md``,
        ``trials.csv`` and the PNG plots.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    frame = trials_frame(study)
    objectives = objectives_of(study)
    recorded = cost_indicators(frame)
    wanted = recorded if indicators is None else list(indicators)
    names = [n for n in wanted if n in recorded]
    chosen, note = _selection(frame, select, objectives)
    sections = [_summary(study, frame, objectives, select, chosen, note)]
    missing = [n for n in wanted if n not in recorded]
    if missing:
        sections[0].text.append(f"Indicators asked for but not recorded: {', '.join(missing)}.")
    constant = [n for n in names if _constant(frame, n)]
    if constant:
        sections[0].text.append(
            f"Constant over all trials (they cannot rank trials): {', '.join(constant)}."
        )
    knee = chosen.number if chosen else None
    sections += _indicator_sections(frame, names, knee, out, paths)
    sections.append(_hypervolume_section(frame, objectives, out, paths))
    curves = _curves_section(study, out, paths)
    if curves is not None:
        sections.append(curves)
    sections.append(_disagreement_section(frame, names, out, paths))
    sections.append(_front_section(frame, objectives, names, chosen))
    failures = _failures_section(frame)
    if failures is not None:
        sections.append(failures)
    paths["trials.csv"] = out / "trials.csv"
    frame.to_csv(paths["trials.csv"], index=False)
    title = f"npas report — {study.study_name}"
    paths["report.md"] = out / "report.md"
    paths["report.md"].write_text(render_markdown(title, sections), encoding="utf-8")
    paths["report.html"] = out / "report.html"
    paths["report.html"].write_text(render_html(title, sections, out), encoding="utf-8")
    return paths


def _constant(frame: pd.DataFrame, name: str) -> bool:
    column = pd.to_numeric(frame.loc[frame["state"] == "COMPLETE", name], errors="coerce")
    finite = column[np.isfinite(column)]
    return finite.nunique() < 2 and len(finite) > 1
