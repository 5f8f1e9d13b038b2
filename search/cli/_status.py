"""``search status`` (every search in a storage, or one trial with ``--trial``) and ``search
trials`` (the trials of one search)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from search._urls import masked_url
from search.cli._common import (
    _names,
    _open,
    _quiet_optuna,
    _storage_url,
    _study,
    _wrote_as_data,
)
from search.errors import ConfigError
from search.record import OUTCOMES, Column, StudyAttr

if TYPE_CHECKING:  # loaded by the commands that need them: --help and presets stay quick
    import optuna
    import pandas as pd


#: Outcomes the table names only when a trial has one.
_ONLY_WHEN_ANY = ("paused", "waiting", "adjourned", "interrupted")
#: What the table says of the paused, the adjourned and the interrupted ones.
_NOTES = {
    "paused": "(paused: held at a rung with no worker until they rank among the best there)",
    "adjourned": "(adjourned: unfinished, with a checkpoint; a relaunch goes on with them)",
    "interrupted": "(interrupted: not counted towards trials, others run in their place)",
}


def _tally(found: pd.Series) -> dict[str, int]:
    """How many trials have each outcome, in the order status prints them."""

    counted = found.value_counts()
    return {name: int(counted.get(name, 0)) for name in OUTCOMES}


def _numbers(frame: pd.DataFrame, found: pd.Series, outcome: str) -> list[int]:
    """The numbers of the trials whose outcome (``found``, per row) is ``outcome``."""

    return [int(n) for n in frame[Column.NUMBER][found == outcome]]


def _resumable(study: optuna.Study) -> list[int]:
    """The RUNNING trials a relaunch would go on with (each has a checkpoint on this machine)."""
    from optuna.trial import TrialState

    from search.record import resumable

    running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    return [t.number for t in running if resumable(t)]


def _status_record(study: optuna.Study, holder: str | None) -> dict[str, Any]:
    """The status of one search as data (plain Python values, keys in snake_case, a trial
    named by its ``number``); ``holder``: the live launch running it, if any."""
    import pandas as pd

    from search._format import json_number
    from search._trial_list import outcomes, paused
    from search.pareto import frame_of, front_of, objectives_of, usable, why_empty
    from search.record import constraints_of, read_study, recommendation_of, screened, search_cost

    records = read_study(study).trials
    frame = frame_of(records)
    objectives = objectives_of(study)
    spent = search_cost(study)
    live = holder is not None
    found = outcomes(frame, live=live, resumable=() if live else _resumable(study),
                     held=paused(records) if live else ())  # fmt: skip
    record: dict[str, Any] = {
        "search": study.study_name,
        "trials": len(frame),
        **_tally(found),
        "failed_trials": _numbers(frame, found, "failed"),
        "infeasible_trials": _numbers(frame, found, "infeasible"),
        "screened": sum(screened(t) for t in study.get_trials(deepcopy=False)),
        "running_now": holder,
        "objectives": [f"{n} ({d})" for n, d in objectives],
        "constraints": list(constraints_of(study)),
        **{k: json_number(spent[k]) for k in StudyAttr.COST},
        "energy_source": spent[StudyAttr.ENERGY_SOURCE],
        "front": [],
        "best": {},
        "recommended": _recommended(recommendation_of(study)),
    }
    names = [n for n, _ in objectives]
    if len(frame) == 0 or any(n not in frame.columns for n in names):
        record["front_empty"] = why_empty(frame, names) if len(frame) else "no trial"
        return record
    front = front_of(frame, objectives)
    record["front"] = [int(n) for n in front.numbers]
    if front.message:
        record["front_empty"] = front.message
        return record
    for name, direction in objectives:
        rows = frame[usable(frame, [name])]
        values = pd.to_numeric(rows[name], errors="coerce")
        pick = values.idxmax() if direction == "maximize" else values.idxmin()
        number = int(rows[Column.NUMBER].to_dict()[pick])
        value = json_number(values.to_dict()[pick])
        record["best"][name] = {"value": value, Column.NUMBER: number}
    return record


def _recommended(found: dict[str, Any] | None) -> dict[str, Any] | None:
    """The recommendation as status shows it: its trial, mean, std and n, and the line."""
    if found is None:
        return None
    from search.record import recommended_line

    keys = (Column.NUMBER, "mean_val_accuracy", "std", "seeds", "origin", "line")
    values = (found["trial"], found["mean"], found.get("std"), found["n"], found.get("origin"),
              recommended_line(found))  # fmt: skip
    return dict(zip(keys, values, strict=True))


def _status_lines(record: dict[str, Any]) -> list[str]:
    """One search's status as the lines ``search status`` prints."""
    from search._format import WIDTH, clip_list, duration, format_value
    from search._trial_list import OUTCOMES

    shown = [k for k in OUTCOMES if record[k] or k not in _ONLY_WHEN_ANY]
    counts = ", ".join(f"{record[k]} {k.replace('_', ' ')}" for k in shown)
    notes = "".join(f" {note}" for k, note in _NOTES.items() if record[k])
    lines = [f"Search {record['search']!r}: {record['trials']} trial(s): {counts}{notes}"]
    if record["screened"]:
        lines.append(f"  {record['screened']} of the infeasible refused before training by "
                     "the screen: never started, not counted toward trials")  # fmt: skip
    if record["running_now"] is not None:
        lines.append(f"  running now: launched on {record['running_now']}")
    named = {k: clip_list(record[f"{k}_trials"], WIDTH // 3)
             for k in ("failed", "infeasible") if record[f"{k}_trials"]}  # fmt: skip
    if named:
        lines.append("  " + "; ".join(f"{k}: {v}" for k, v in named.items())
                     + f" (search trials --state {'|'.join(named)} says why)")  # fmt: skip
    lines.append("  objectives: " + ", ".join(record["objectives"]))
    lines.append("  constraints: " + (", ".join(record["constraints"]) or "none"))
    if record[StudyAttr.TIME_S] is not None:
        energy, co2 = record[StudyAttr.ENERGY_J], record[StudyAttr.CO2_G]
        lines.append(
            f"  cost of the search: {duration(record[StudyAttr.TIME_S])}, "
            f"{format_value(energy, digits=4)} J, {format_value(co2, digits=4)} g CO2 (energy: "
            f"{', '.join(record['energy_source'] or ['estimate'])})"
        )
    if record["recommended"] is not None:
        lines.append(f"  recommended: {record['recommended']['line']} (search export without "
                     "--select writes it)")  # fmt: skip
    if "front_empty" in record:
        lines.append(f"  front: empty ({record['front_empty']})")
        return lines
    front = clip_list(record["front"], WIDTH - 55)
    whole = " (search pareto lists them all)" if front != str(record["front"]) else ""
    lines.append(f"  front: {len(record['front'])} trial(s) {front}{whole}")
    best = [
        f"{name} {format_value(b['value'])} (trial {b[Column.NUMBER]})"
        for name, b in record["best"].items()
    ]
    lines.append("  best: " + ", ".join(best))
    return lines



def _csv(records: Sequence[dict[str, Any]]) -> str:
    """Status records as CSV: one row each, one column per JSON field (nested names joined by
    dots: ``best.accuracy.value``); a cell is the JSON value (a whole number an integer even
    where another row has none), a list JSON text, None empty, as in ``trials.csv``."""
    import pandas as pd

    from search._format import json_number
    from search.record import plain

    def flat(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        cells: dict[str, Any] = {}
        for key, value in record.items():
            if isinstance(value, dict):
                cells.update(flat(value, f"{prefix}{key}."))
            else:
                cells[prefix + key] = plain(json_number(value))
        return cells

    rows = [flat(r) for r in records]
    return pd.DataFrame(rows, dtype=object).to_csv(index=False)  # object: no 1000 -> 1000.0


def _status(args: argparse.Namespace) -> int:
    import json

    import optuna

    from search._format import wrap, wrap_lines
    from search.record import folder_size, lease_holder

    _quiet_optuna()
    url = _storage_url(args)
    storage = _open(url)
    studies = [optuna.load_study(study_name=n, storage=storage) for n in _names(storage)]
    if args.trial is not None:
        return _trial_status(studies, args, lambda name: lease_holder(storage.engine, name))
    records = [_status_record(s, lease_holder(storage.engine, s.study_name)) for s in studies]
    if not args.storage:  # the run folder is known: its size (checkpoints take most of it)
        for record in records:
            record["run_folder_bytes"] = folder_size(args.run_folder)
    if args.format == "json":
        print(json.dumps(records, indent=2))
    elif args.format == "csv":
        sys.stdout.write(_csv(records))
    else:
        print(wrap(f"Storage {masked_url(url)}: {len(records)} search(es)"))
        for record in records:
            print("\n".join(wrap_lines(_status_lines(record))))
        if records and "run_folder_bytes" in records[0]:
            size = records[0]["run_folder_bytes"] / 2**20
            print(wrap(f"Run folder {args.run_folder}: {size:.1f} MiB (checkpoints "
                       "included)"))  # fmt: skip
    return 0


def _trial_status(
    studies: list[optuna.Study],
    args: argparse.Namespace,
    holder: Callable[[str], str | None],
) -> int:
    """``search status --trial N``: one trial's state, the outcome ``search status`` counts it
    under, epochs, why it stopped, its checkpoint and every rung decision the scheduler made on
    it; ``holder``: the live launch running a search (by name), if any."""
    import json

    from search._format import wrap_lines

    record = _trial_record(studies, args, holder)
    if args.format == "json":
        print(json.dumps(record, indent=2, default=str))
    elif args.format == "csv":  # one row per decision
        import pandas as pd

        from search.record import plain

        sys.stdout.write(pd.DataFrame(record["decisions"]).map(plain).to_csv(index=False))
    else:
        print("\n".join(wrap_lines(_trial_lines(record))))
    return 0


def _trial_record(
    studies: list[optuna.Study],
    args: argparse.Namespace,
    holder: Callable[[str], str | None],
) -> dict[str, Any]:
    """What ``search status --trial N`` says of the trial (``--name``'s search)."""
    from search._trial_list import outcomes, paused
    from search.config import unknown
    from search.pareto import frame_of
    from search.record import (
        constraints_of,
        latest_checkpoint,
        origin_of,
        read_trial,
        resume_checkpoint,
    )

    chosen = [s for s in studies if args.name in (None, s.study_name)]
    if len(chosen) != 1:
        names = [s.study_name for s in studies]
        raise unknown("--name", args.name, names, "search status")
    study = chosen[0]
    if not 0 <= args.trial < len(study.trials):
        raise ConfigError(f"--trial: got {args.trial}; allowed: 0 to {len(study.trials) - 1}")
    trial = study.trials[args.trial]
    read = read_trial(trial, constraints=constraints_of(study))
    live = holder(study.study_name) is not None
    resume = resume_checkpoint(trial)
    resumed = [read.number] if resume is not None else []
    held = paused([read]) if live else []
    outcome = outcomes(frame_of([read]), live=live, resumable=resumed, held=held)
    return {
        "search": study.study_name,
        Column.NUMBER: read.number,
        Column.STATE: read.state,
        Column.OUTCOME: str(outcome.iloc[0]),
        Column.EPOCHS: read.epochs or 0,
        "stopped": read.stopped or read.error or read.why_infeasible,
        "checkpoint": None if (found := latest_checkpoint(trial)) is None else str(found),
        "resumes_from": None if resume is None else str(resume),
        "decisions": list(read.decisions),
        "narrowed_from": read.narrowed_from,
        "origin": origin_of(study, read.number),
    }


def _trial_lines(record: dict[str, Any]) -> list[str]:
    """The table form of :func:`_trial_record`'s record."""
    outcome = record["outcome"].replace("_", " ")
    number, state = record[Column.NUMBER], record[Column.STATE]
    lines = [f"Search {record['search']!r}, trial {number}: {state} ({outcome}) "
             f"after {record[Column.EPOCHS]} epoch(s)"]  # fmt: skip
    if record["outcome"] in _NOTES:
        lines.append(f"  {_NOTES[record['outcome']][1:-1]}")
    if record["stopped"]:
        first, *more = str(record["stopped"]).splitlines()  # a traceback keeps its lines
        lines += [f"  why it ended: {first}", *(f"    {line}" for line in more)]
    if record["narrowed_from"] is not None:
        lines.append(f"  narrowed from trial {record['narrowed_from']}, which the screen "
                     "refused: the same point with narrower widths")  # fmt: skip
    else:
        lines.append(f"  its net: {record['origin']}")
    lines.append(f"  checkpoint: {record['checkpoint'] or 'none'}")
    if record["resumes_from"] != record["checkpoint"]:  # the latest cannot be read
        lines.append("  a relaunch resumes it from: "
                     f"{record['resumes_from'] or 'none (interrupted)'}")  # fmt: skip
    if not record["decisions"]:
        lines.append("  rung decisions: none (no multi-fidelity scheduler decided on it)")
    for d in record["decisions"]:
        why = f"; {d['why']}" if d.get("why") else ""
        chance = ", at chance" if d.get("at_chance") else ""
        arrived = d["arrival"] + 1
        lines.append(f"  rung {d['rung']}: {d['outcome']} — rank {d['rank']} of {d['n']} "
                     f"(top {d['top']} go on; arrived {arrived}){chance}{why}")  # fmt: skip
    return lines


def _trials(args: argparse.Namespace) -> int:
    """``search trials``: every trial of one search, or those of one outcome or state, with its
    hyper-parameters, objectives and why it ended as it did."""
    from search._format import table_text
    from search._trial_list import trial_list
    from search.pareto import objectives_of
    from search.record import lease_holder

    study = _study(args)
    live = lease_holder(_open(_storage_url(args)).engine, study.study_name) is not None
    names = [n for n, _ in objectives_of(study)]
    listed = trial_list(study, names, live=live, resumable=() if live else _resumable(study),
                        state=args.state)  # fmt: skip
    if _wrote_as_data(listed, args.format):
        return 0
    which = f" {args.state}" if args.state else ""
    print(f"Search {study.study_name!r}: {len(listed)}{which} trial(s)")
    if listed.empty:
        return 0
    print(table_text(listed.drop(columns=[Column.STATE]),
                     whole="search status --trial N, or --format json, has it whole"))  # fmt: skip
    return 0
