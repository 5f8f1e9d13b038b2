"""The efficiency report of a study: what the user looks at after a search.

:func:`write_report` gathers the study into sections (summary, the multi-objective front as a
matrix of objective pairs, accuracy against each cost indicator, PePR isoclines, hypervolume
history, parameter importance, parallel coordinates, where the test figure comes from (the
report is on validation only), learning curves, the multi-fidelity scheduler's rung decisions,
indicator disagreement, the front table, failures) and renders them twice:
``report.md`` beside the PNGs for the terminal, and ``report.html``, one offline file with
interactive plotly versions of the plots (hover names each trial) and the other PNGs embedded.
The full trial table goes to ``trials.csv``. Anything missing (no feasible trial, a constant or
unrecorded indicator, too few trials to rank parameters, a selector that finds nothing) becomes
a sentence, not an error.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pandas as pd
from matplotlib.figure import Figure

from objectives import INDICATORS
from search._ctrl_c import raise_if_interrupted
from search._output import check_folder
from search.config import REPORTED_ONLY, Constraint
from search.errors import OutputError
from search.pareto import (
    DUPLICATES,
    Front,
    Selection,
    constant_conditions,
    cost_indicators,
    direction_of,
    disagreement,
    duplicates,
    format_value,
    frame_of,
    front_of,
    front_rows,
    hypervolume_by_trial,
    objectives_of,
    usable,
    why_empty,
    why_none,
)
from search.pareto import select as select_trial
from search.record import (
    Column,
    StudyRecords,
    TrialRecord,
    constraints_of,
    read_study,
    stored_config,
)
from search.report import _interactive, _plots
from search.report._importance import param_importances, shared_space
from search.report._render import Plot, Section, render_html, render_markdown
from search.report._scatter import (
    FRONT_LABEL,
    INFEASIBLE_LABEL,
    REFUSED_LABEL,
    STOPPED_LABEL,
    Marks,
    matrix,
    scatter,
    staircase,
)
from spaces import ConfigError

__all__ = ["write_report"]

_PERFORMANCE = "accuracy"
#: Outcomes of a rung decision, in the order the decision counts show them.
_OUTCOMES = ("continue", "stop", "pause", "promote", "adjourn")
#: The decision table shows every front trial and at most this many others, the most recent.
_MAX_DECIDED = 40


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
    states = frame[Column.STATE].value_counts().to_dict() if len(frame) else {}
    complete = int(states.get("COMPLETE", 0))
    feasible = (
        int((frame[Column.FEASIBLE] & (frame[Column.STATE] == "COMPLETE")).sum())
        if len(frame)
        else 0
    )
    lines = [
        f"Study **{study.study_name}**: {len(frame)} trial(s) — "
        + (", ".join(f"{str(k).lower()} {v}" for k, v in sorted(states.items())) or "none")
        + f"; {feasible} of {complete} completed trial(s) feasible.",
        "Objectives: " + ", ".join(f"{n} ({d})" for n, d in objectives) + ".",
    ]
    constraints = constraints_of(study)
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
        return None, front.message or why_none(frame, spec) or f"no trial qualifies for {spec!r}"
    return chosen, None


def _marks(study: optuna.Study, frame: pd.DataFrame, knee: int | None) -> Marks:
    """Each trial's family (its sampled ``family``, else the config's fixed one) and the
    study's constraints (one that no longer parses is left out of the plots)."""
    if Column.PARAMS_PREFIX + "family" in frame:
        family = frame[Column.PARAMS_PREFIX + "family"].fillna("?").astype(str)
    else:
        fixed = stored_config(study).get("fixed") or {}
        family = pd.Series(str(fixed.get("family", "?")), index=frame.index)
    constraints = []
    for text in constraints_of(study):
        try:
            constraints.append(Constraint(text))
        except ConfigError:
            continue
    return Marks(family, knee, tuple(constraints), _PERFORMANCE)


_HOVER = (
    "Hover a point for its trial, family, values and, for an infeasible trial, the constraint "
    "it missed and by how much; double-click a plot to autoscale."
)
#: What the scatters' markers mean: the legend of every scatter uses the same labels.
_LEGEND = (
    "Markers (each plot's legend names them): feasible trials are dots coloured by family; "
    f'grey crosses "{INFEASIBLE_LABEL}"; light grey crosses "{REFUSED_LABEL}"; grey tripods '
    f'"{STOPPED_LABEL}", never on a front; red rings "{FRONT_LABEL}"; the gold star the '
    "selected trial; dashed lines the constraint limits. The section **Infeasible and failed "
    "trials** says which constraint each infeasible trial missed and by how much."
)


def _indicator_sections(
    frame: pd.DataFrame,
    indicators: list[str],
    marks: Marks,
    out: Path,
    paths: dict[str, Path],
) -> list[Section]:
    if _PERFORMANCE not in frame.columns or not indicators:
        why = "no accuracy recorded" if _PERFORMANCE not in frame.columns else "no indicator"
        return [Section("Accuracy against each cost indicator", [f"Nothing to plot: {why}."])]
    plots = []
    fronts = disagreement(frame, indicators, performance=_PERFORMANCE).fronts
    for name in indicators:
        unit = INDICATORS.get(name).unit if name in INDICATORS else ""
        direction = direction_of(name)
        front = fronts.get(name, [])
        on_front = (frame[Column.STATE] == "COMPLETE") & frame[Column.NUMBER].isin(front)
        panel = scatter(frame, name, _PERFORMANCE, marks, on_front=on_front)
        stair = staircase(panel, on_front, frame)
        fig = _plots.accuracy_vs(panel, stair, unit=unit, direction=direction)
        caption = (
            f"{_PERFORMANCE} vs {name} [{unit}]: front of {_PERFORMANCE} vs {name} ringed "
            f"({_trials_said(frame, front, [_PERFORMANCE, name])}), the selected trial starred"
        )
        interactive = _interactive.trade_off(panel, stair, direction=direction, unit=unit)
        png = _save(fig, out, f"accuracy_vs_{name}.png", paths)
        plots.append(Plot(caption, png=png, interactive=interactive))
    costs = [n for n in indicators if direction_of(n) == "minimize"]
    section = Section("Accuracy against each cost indicator", [_LEGEND, _HOVER], plots=plots)
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
        png = _save(fig, out, "pepr_isoclines.png", paths)
        iso.plots.append(Plot("PePR isoclines", png=png, wide=True))
    return [section, iso]


def _matrix_section(
    frame: pd.DataFrame, front: Front, marks: Marks, out: Path, paths: dict[str, Path]
) -> Section:
    title = "The multi-objective front"
    if front.message:
        return Section(title, [f"No front to draw: {front.message}."])
    names = [n for n, _ in front.objectives]
    if len(names) < 2:
        return Section(title, ["One objective: the front is its best trial."])
    text = [
        f"{len(front.numbers)} trial(s) on the feasible front of {', '.join(names)} "
        f"(trials {front.numbers}), ringed in red in every pair of objectives; a front trial "
        "may look dominated in one pair and be kept for another." + _duplicates_said(front),
        _LEGEND,
        _HOVER,
    ]
    panels = matrix(frame, names, marks, on_front=front.mask)
    fig = _plots.objective_matrix(panels)
    interactive = _interactive.objective_matrix(panels)
    png = _save(fig, out, "objective_front.png", paths)
    caption = f"The front of {', '.join(names)}: every pair of objectives"
    plot = Plot(caption, png=png, interactive=interactive, wide=True)
    return Section(title, text, plots=[plot])


#: The columns of the summary's front table besides the objectives: what a reader weighs first.
_GLANCE = ("accuracy", "params", "weights")


def _front_glance(
    frame: pd.DataFrame, front: Front, chosen: Selection | None
) -> tuple[str, pd.DataFrame] | None:
    """The report's first table: each front trial's objectives, accuracy, and the parameters
    it trained (``params``) beside the weights its exported model holds (``weights``): a
    Shapeshifted net's differ (by 5.5 times once); None when the front is empty."""
    if front.message:
        return None
    table = front_rows(frame, front, [c for c in _GLANCE if c in frame.columns])
    kept = [c for c in table.columns if c in (Column.NUMBER, DUPLICATES)
            or c in {*(n for n, _ in front.objectives), *_GLANCE}]  # fmt: skip
    table = table[kept]
    table.insert(1, "selected", table[Column.NUMBER] == (chosen.number if chosen else -1))
    return "The front (params: what trained; weights: what the exported model holds)", table


def _trials_said(frame: pd.DataFrame, numbers: Sequence[int], names: list[str]) -> str:
    """``trials [0, 66, 67], 65 more of the same config and values``: a front's trials, each
    set of duplicates once."""
    repeats = duplicates(frame[frame[Column.NUMBER].isin(numbers)], names)
    hidden = {n for rest in repeats.values() for n in rest}
    said = f"trials {[n for n in numbers if n not in hidden]}"
    return said + (f", {len(hidden)} more of the same config and values" if hidden else "")


def _duplicates_said(front: Front) -> str:
    """A sentence on the front trials that stand for others (same config, same values)."""
    if not front.duplicates:
        return ""
    said = "; ".join(f"trial {n}{front.standing_for(n)}" for n in sorted(front.duplicates))
    return (" Trials of one config with equal values are one point, the first of them: "
            f"{said}.")  # fmt: skip


def _front(frame: pd.DataFrame, objectives: list[tuple[str, str]]) -> Front:
    """The feasible front on the study's objectives; empty with the reason when an objective
    was never recorded."""
    names = [n for n, _ in objectives]
    if objectives and all(n in frame.columns for n in names):
        return front_of(frame, objectives)
    nothing = pd.Series(False, index=frame.index)
    return Front(tuple(objectives), nothing, [], why_empty(frame, names))


def _feasible_trials(
    study: optuna.Study, frame: pd.DataFrame, names: list[str]
) -> list[optuna.trial.FrozenTrial]:
    numbers = set(frame.loc[usable(frame, names), Column.NUMBER])
    return [t for t in study.get_trials(deepcopy=False) if t.number in numbers]


def _importance_section(
    trials: list[optuna.trial.FrozenTrial], objectives: list[tuple[str, str]]
) -> Section:
    title = "Parameter importance"
    found = param_importances(trials, objectives)
    if found.table is None:
        return Section(title, found.notes)
    table = found.table.round(3)
    bars = _interactive.importance_bars(table)
    chart = Plot("Parameter importance per objective", interactive=bars)
    return Section(title, found.notes, tables=[("Importance", table)], plots=[chart])


def _parallel_section(
    frame: pd.DataFrame, front: Front, trials: list[optuna.trial.FrozenTrial]
) -> Section:
    title = "Parallel coordinates"
    if front.message:
        return Section(title, [f"No feasible trial to draw: {front.message}."])
    names = [n for n, _ in front.objectives]
    space = shared_space(trials)
    text = [
        f"Each feasible trial is a line through the objectives ({', '.join(names)}) and the "
        f"parameters every feasible trial sampled ({', '.join(space) or 'none'}); front "
        "trials red. Drag along an axis to keep only the lines crossing that range. Needs "
        "WebGL in the browser."
    ]
    fig = _interactive.parallel_coordinates(frame, names, space, on_front=front.mask)
    return Section(title, text, plots=[Plot("Parallel coordinates", interactive=fig, wide=True)])


def _test_split_section(recorded: list[str]) -> Section:
    """Where a model's test figure comes from: never the report, which is on validation."""
    text = [
        "Every figure, table and ranking here is on the validation split, the one the search "
        "saw. The test figure of a model comes from `search export`, which reads the test "
        "split once, for the exported model only: it prints it and writes it into the "
        "bundle's metrics.json (`exported.test_accuracy`)."
    ]
    if recorded:
        text.append(
            f"This search also recorded {' and '.join(recorded)} per trial (`report_test: "
            "true`, for a benchmark); the report leaves them out, trials.csv included, and no "
            "selector chooses on them."
        )
    else:
        text.append("No trial of this search read the test split.")
    return Section("The test split", text)


def _hypervolume_section(
    frame: pd.DataFrame, objectives: list[tuple[str, str]], out: Path, paths: dict[str, Path]
) -> Section:
    title = "Hypervolume history"
    names = [n for n, _ in objectives]
    if not (frame[Column.STATE] == "COMPLETE").any() or any(n not in frame.columns for n in names):
        return Section(title, [f"No hypervolume: {why_empty(frame, names)}."])
    history, final = hypervolume_by_trial(frame, objectives)
    text = [
        f"Final {final.describe()}.",
        "Bounds are fixed over all feasible trials, so the curve never decreases.",
    ]
    fig = _plots.hypervolume_curve(history, caption=f"final hypervolume {final.value:.4g}")
    png = _save(fig, out, "hypervolume.png", paths)
    return Section(title, text, plots=[Plot(title, png=png)])


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
    png = _save(fig, out, "disagreement.png", paths)
    tables = [
        ("Kendall τ", d.tau.round(3).reset_index(names="indicator")),
        ("Pareto-set overlap (Jaccard)", d.overlap.round(3).reset_index(names="indicator")),
    ]
    plot = Plot("Kendall τ and Pareto-set overlap", png=png, wide=True)
    return Section(title, text, tables=tables, plots=[plot])


def _front_section(
    frame: pd.DataFrame,
    front: Front,
    indicators: list[str],
    chosen: Selection | None,
) -> Section:
    title = "Front trials"
    if front.message:
        return Section(title, [f"The front is empty: {front.message}."])
    names = [n for n, _ in front.objectives]
    table = front_rows(frame, front, indicators)
    table.insert(1, "selected", table[Column.NUMBER] == (chosen.number if chosen else -1))
    text = [
        f"{len(table)} trial(s) on the feasible front of {', '.join(names)}; every indicator "
        "and the conditions it was measured under (cond_* columns)."
    ]
    constant = constant_conditions(table)
    if constant:
        said = ", ".join(f"{k}={format_value(v)}" for k, v in constant.items())
        text.append(f"Measured under (the same for every trial below): {said}.")
    table = table.drop(columns=list(constant))
    # two tables, so that each fits the page (one of 21 columns scrolled sideways): what was
    # measured, then the hyper-parameters by their dimension names
    sampled = [c for c in table.columns if str(c).startswith(Column.PARAMS_PREFIX)]
    hypers = table[[Column.NUMBER, *sampled]].rename(
        columns=lambda c: str(c).removeprefix(Column.PARAMS_PREFIX)
    )
    tables = [("Front", table.drop(columns=sampled))]
    if sampled:
        tables.append(("Front: hyper-parameters", hypers))
    return Section(title, text, tables=tables)


def _curves_section(
    records: StudyRecords, marks: Marks, frame: pd.DataFrame, out: Path, paths: dict[str, Path]
) -> Section | None:
    """The learning curves, when trials reported per epoch (None for an older study)."""
    curves = [(t.number, t.state == "COMPLETE", list(t.curve)) for t in records.trials if t.curve]
    if not curves:
        return None
    title = "Learning curves"
    stopped = sum(not complete for _, complete, _ in curves)
    text = [
        f"{len(curves)} trial(s) reported per epoch; {stopped} were stopped early by the "
        "scheduler (grey, never on a front: their accuracy is not a full schedule's)."
    ]
    fig = _plots.learning_curves(curves, metric=_PERFORMANCE)
    family = dict(zip(frame[Column.NUMBER], marks.family, strict=True))
    interactive = _interactive.learning_curves(curves, metric=_PERFORMANCE, family=family)
    png = _save(fig, out, "learning_curves.png", paths)
    return Section(title, text, plots=[Plot(title, png=png, interactive=interactive)])


def _ranked(decision: dict) -> str:
    """``rank 2 of 5, top 1`` (and ``at chance`` when the trial was)."""
    said = f"rank {decision.get('rank', '?')} of {decision.get('n', '?')}, "
    said += f"top {decision.get('top', '?')}"
    return said + (", at chance" if decision.get("at_chance") else "")


def _trail(decisions: Sequence[dict[str, Any]]) -> str:
    """A trial's decisions, one group per rung: ``1: pause (rank 2 of 5, top 1) → promote
    (rank 0 of 8, top 2); 3: stop (rank 4 of 6, top 2)``; a later decision at the same rung
    repeats the ranking only where it changed; a decision's ``why`` is always said."""
    groups: list[tuple[object, list[str]]] = []
    before = None
    for decision in decisions:
        rung = decision.get("rung", "?")
        ranked = _ranked(decision)
        same_rung = bool(groups) and groups[-1][0] == rung
        details = [] if same_rung and ranked == before else [ranked]
        if decision.get("why"):
            details.append(str(decision["why"]))
        said = str(decision.get("outcome", "?")) + (f" ({'; '.join(details)})" if details else "")
        if same_rung:
            groups[-1][1].append(said)
        else:
            groups.append((rung, [said]))
        before = ranked
    return "; ".join(f"{rung}: " + " → ".join(said) for rung, said in groups)


def _decisions_section(
    records: StudyRecords, front: Front, frame: pd.DataFrame
) -> Section | None:
    """The multi-fidelity scheduler's rung decisions (``npas:decisions``): counts per rung and
    outcome, and each decided trial's trail (None when no trial has any)."""
    decided = [t for t in records.trials if t.decisions]
    if not decided:
        return None
    epochs = dict(zip(frame[Column.NUMBER], frame[Column.EPOCHS], strict=True))
    title = "Scheduler decisions"
    rows = [
        {"trial": t.number, "rung": d.get("rung"), Column.OUTCOME: d.get(Column.OUTCOME)}
        for t in decided
        for d in t.decisions
    ]
    log = pd.DataFrame(rows)
    counts = pd.crosstab(log["rung"], log["outcome"])
    seen = [o for o in _OUTCOMES if o in counts.columns]
    counts = counts[seen + sorted(c for c in counts.columns if c not in _OUTCOMES)]
    counts.insert(0, "trials", log.groupby("rung")["trial"].nunique())
    counts = counts.reset_index()
    counts.columns.name = None
    totals = log["outcome"].value_counts()
    said = ", ".join(f"{o} {int(totals[o])}" for o in counts.columns[2:])
    text = [
        f"{len(log)} rung decision(s) by the multi-fidelity scheduler on {len(decided)} "
        f"trial(s): {said}. A rung is an epoch where trials are compared; the counts are per "
        "rung and outcome, `trials` how many trials it decided on there.",
        "Each trial's trail, rung by rung: the outcome, the trial's rank there (0 best) among "
        "the n trials compared and `top`, how many the rung let on; → a later decision at the "
        "same rung (a paused trial promoted, or stopped when the search ended). One trial's "
        "full record: `search status --trial N`.",
    ]
    shown = decided
    if len(decided) > _MAX_DECIDED:
        on_front = set(front.numbers)
        recent = {t.number for t in sorted(decided, key=lambda t: t.number)[-_MAX_DECIDED:]}
        shown = [t for t in decided if t.number in on_front or t.number in recent]
        kept_front = sum(t.number in on_front for t in shown)
        text.append(
            f"{len(decided)} trials have decisions; shown are {len(shown)}, the front's "
            f"{kept_front} and the {_MAX_DECIDED} most recent: {len(decided) - len(shown)} "
            "left out."
        )
    table = pd.DataFrame(
        {
            Column.NUMBER: [t.number for t in shown],
            Column.STATE: [t.state for t in shown],
            Column.EPOCHS: [epochs.get(t.number) for t in shown],
            "decisions": [_trail(t.decisions) for t in shown],
            "stopped": [t.stopped or t.error for t in shown],
        }
    )
    if table["stopped"].isna().all():
        table = table.drop(columns="stopped")
    tables = [("Decisions per rung and outcome", counts), ("Decision trail per trial", table)]
    return Section(title, text, tables=tables)


def _violation_rows(trial: TrialRecord) -> list[dict[str, Any]]:
    """One row per constraint an infeasible trial missed: the constraint, the trial's value of
    its metric, the limit and by how much (one row saying why when it missed none)."""
    rows = []
    for text, by in trial.violated.items():
        metric, _, limit = text.split(" ", 2)  # a constraint's canonical text
        rows.append(
            {"constraint": text, "value": trial.metrics.get(metric), "limit": float(limit),
             "violation": by}
        )  # fmt: skip
    if not rows:
        rows.append({"constraint": trial.why_infeasible, "value": None, "limit": None,
                     "violation": None})  # fmt: skip
    row = {Column.NUMBER: trial.number, Column.STATE: trial.state, "trained": not trial.refused}
    return [{**row, **r} for r in rows]


def _infeasible_section(records: StudyRecords) -> Section | None:
    """Every infeasible trial (trained, or refused before training) with the constraint it
    missed and by how much, and every failed trial with its error."""
    infeasible = [
        t for t in records.trials if (t.state == "COMPLETE" and not t.feasible) or t.refused
    ]
    failed = [t for t in records.trials if t.state == "FAIL"]
    if not infeasible and not failed:
        return None
    trained = sum(not t.refused for t in infeasible)
    text = [
        f"{len(infeasible)} infeasible trial(s), none on any front: {trained} trained and "
        f"then missed a constraint ({INFEASIBLE_LABEL}), {len(infeasible) - trained} refused "
        "before training because a cheap indicator (params, FLOPs) already missed one. "
        "`violation` is how far the trial's value is beyond the limit, in the metric's unit "
        "(Optuna's convention: ≤ 0 met).",
    ]
    tables = []
    if infeasible:
        rows = [row for t in infeasible for row in _violation_rows(t)]
        tables.append(("Infeasible trials: the constraint missed and by how much",
                       pd.DataFrame(rows)))  # fmt: skip
    if failed:
        text.append(f"{len(failed)} failed trial(s), with their errors.")
        table = pd.DataFrame([{Column.NUMBER: t.number, Column.STATE: t.state,
                               Column.ERROR: t.error} for t in failed])  # fmt: skip
        tables.append(("Failed trials", table))
    return Section("Infeasible and failed trials", text, tables=tables)


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

    Raises:
        OutputError: ``out_dir`` is a file, read-only or full: refused before any plot; or
            it filled up while the report was written.

    The files are written into a temporary folder inside ``out_dir`` and moved into place
    when all are written, ``report.html`` last: a report cut short (Ctrl-C, a full disk)
    leaves ``out_dir`` as it was, and no temporary folder.
    """
    out = check_folder(out_dir, flag="--out")
    stage = Path(tempfile.mkdtemp(prefix=".npas-report-", dir=out))
    try:
        written = _write_report(study, stage, select=select, indicators=indicators)
        raise_if_interrupted()  # a Ctrl-C dropped in a figure's finaliser: publish nothing
        order = sorted(written, key=lambda name: name == "report.html")
        for name in order:
            os.replace(written[name], out / name)
    except OSError as err:
        raise OutputError(
            f"the report could not be written to {str(out)!r} ({err.strerror or err}); the "
            "files there are as they were"
        ) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return {name: out / name for name in order}


def _write_report(
    study: optuna.Study, out: Path, *, select: str, indicators: Sequence[str] | None
) -> dict[str, Path]:
    paths: dict[str, Path] = {}
    records = read_study(study)
    frame = frame_of(records.trials)
    tested = [c for c in REPORTED_ONLY if c in frame.columns]  # report_test: left out
    frame = frame.drop(columns=tested)
    objectives = objectives_of(study)
    names = [n for n, _ in objectives]
    recorded = cost_indicators(frame)
    wanted = recorded if indicators is None else list(indicators)
    plotted = [n for n in wanted if n in recorded]
    chosen, note = _selection(frame, select, objectives)
    sections = [_summary(study, frame, objectives, select, chosen, note)]
    missing = [n for n in wanted if n not in recorded]
    if missing:
        sections[0].text.append(f"Indicators asked for but not recorded: {', '.join(missing)}.")
    constant = [n for n in plotted if _constant(frame, n)]
    if constant:
        sections[0].text.append(
            f"Constant over all trials (they cannot rank trials): {', '.join(constant)}."
        )
    sections[0].text.append(
        "`report.html` holds the interactive plots and needs no network; `report.md` shows "
        "their PNG versions."
    )
    marks = _marks(study, frame, chosen.number if chosen else None)
    front = _front(frame, objectives)
    glance = _front_glance(frame, front, chosen)
    if glance is not None:
        sections[0].tables.append(glance)
    feasible = [] if front.message else _feasible_trials(study, frame, names)
    sections.append(_matrix_section(frame, front, marks, out, paths))
    sections += _indicator_sections(frame, plotted, marks, out, paths)
    sections.append(_hypervolume_section(frame, objectives, out, paths))
    sections.append(_importance_section(feasible, objectives))
    sections.append(_parallel_section(frame, front, feasible))
    sections.append(_test_split_section(tested))
    curves = _curves_section(records, marks, frame, out, paths)
    if curves is not None:
        sections.append(curves)
    decisions = _decisions_section(records, front, frame)
    if decisions is not None:
        sections.append(decisions)
    sections.append(_disagreement_section(frame, plotted, out, paths))
    sections.append(_front_section(frame, front, plotted, chosen))
    infeasible = _infeasible_section(records)
    if infeasible is not None:
        sections.append(infeasible)
    paths["trials.csv"] = out / "trials.csv"
    frame.to_csv(paths["trials.csv"], index=False)
    title = f"npas report — {study.study_name}"
    paths["report.md"] = out / "report.md"
    paths["report.md"].write_text(render_markdown(title, sections), encoding="utf-8")
    paths["report.html"] = out / "report.html"
    paths["report.html"].write_text(render_html(title, sections, out), encoding="utf-8")
    return paths


def _constant(frame: pd.DataFrame, name: str) -> bool:
    column = pd.to_numeric(frame.loc[frame[Column.STATE] == "COMPLETE", name], errors="coerce")
    finite = column[np.isfinite(column)]
    return finite.nunique() < 2 and len(finite) > 1
