"""The ``search`` command: launch a search, then look at it, export a trial and train it again.

Exit codes: 0 done; 2 a bad argument or config (the message names the key, the value and what
is allowed; nothing recorded is touched); 1 any other npas error (the message, no traceback);
130 interrupted (143 for SIGTERM).
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import signal
import sys
import tempfile
import textwrap
import time
import warnings
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from search._urls import masked_url
from search.errors import (
    ConfigError,
    NpasError,
    SearchInterrupted,
    StorageWriteError,
    UnknownNameError,
)
from search.record._schema import OUTCOMES, TRIAL_STATES, Column, StudyAttr, TrialAttr
from spaces._suggest import did_you_mean

if TYPE_CHECKING:  # loaded by the commands that need them: --help and presets stay quick
    import optuna
    import pandas as pd

__all__ = ["build_parser", "main"]

_DEFAULT_PRESET = "digits-quick"
_DEFAULT_OUT = "runs"
_FORMATS = ("table", "csv", "json")
#: The widest line the listing commands print (a terminal's usual width).
_WIDTH = 100


# -- storage and studies ------------------------------------------------------------------------


def _storage_url(args: argparse.Namespace) -> str:
    """``--storage``, else ``sqlite:///<--run folder>/npas.db``.

    One meaning per flag: ``--run`` is the run folder a command reads a search from (status,
    pareto, report, export, dashboard), ``--out`` where a command writes (launch's run folder,
    the report, the bundle, the retrained model).
    """
    from search.config import default_storage_url

    if args.storage:
        return str(args.storage)
    return default_storage_url(args.run_folder)


def _open(url: str) -> optuna.storages.RDBStorage:
    """The storage for reading (nothing is created in it: see ``read_storage``)."""
    from search.record._storage import read_storage

    return read_storage(url)


def _names(storage: optuna.storages.BaseStorage) -> list[str]:
    return sorted(s.study_name for s in storage.get_all_studies())


def _quiet_optuna() -> None:
    """Optuna's INFO lines and "experimental" warnings are noise for a command-line user."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def _user_code(args: argparse.Namespace, recorded: Sequence[str], whose: str) -> None:
    """Imports ``--import`` first, then the modules a search or bundle recorded, saying which
    (importing runs code, and a study may come from a shared storage); ``--no-imports``
    imports none of the recorded ones, and what needs one then names it."""
    from search._usercode import (
        import_modules,
        module_name,
        normalise_imports,
        refuse_imports,
        stand_in,
    )

    given = normalise_imports(args.imports, path="--import")
    modules = import_modules(given, path="--import")
    supplied = {module_name(e): m for e, m in zip(given, modules, strict=True)}
    pending = []
    for entry in recorded:
        if module_name(entry) in supplied:  # a file moved since: the same name, elsewhere
            stand_in(entry, supplied[module_name(entry)])
        else:
            pending.append(entry)
    if not pending:
        return
    names = ", ".join(pending)
    if args.no_imports:
        refuse_imports()
        print(f"search {args.command}: not importing {whose} modules ({names}): --no-imports",
              file=sys.stderr)  # fmt: skip
        return
    print(f"search {args.command}: importing {whose} modules: {names} (--no-imports skips "
          "them)", file=sys.stderr)  # fmt: skip
    import_modules(pending, path=f"{whose} imports")


def _study(args: argparse.Namespace) -> optuna.Study:
    """The study named by ``--name``; with no name, the storage's only study. The modules it
    recorded are imported (:func:`_user_code`)."""
    import optuna

    _quiet_optuna()
    url = _storage_url(args)
    storage = _open(url)
    names = _names(storage)
    name = args.name
    if name is None:
        if len(names) != 1:
            raise ConfigError(
                f"--name: missing; allowed: one of the studies in {masked_url(url)!r}: "
                f"{names or 'none'}"
            )
        name = names[0]
    if name not in names:
        raise ConfigError(
            f"--name: got {name!r}{did_you_mean(name, names)}; allowed: one of the studies in "
            f"{masked_url(url)}: {names}"
        )
    study = optuna.load_study(study_name=name, storage=storage)
    recorded = (study.user_attrs.get("config") or {}).get("imports") or []
    _user_code(args, recorded, "the search's")
    return study


def _objectives(study: optuna.Study, text: str | None) -> list[tuple[str, str]] | None:
    """``--objectives a,b`` as (name, direction) pairs (the study's direction where it has one)."""
    if text is None:
        return None
    from search.pareto._frame import direction_of, objectives_of

    stored = objectives_of(study)
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise ConfigError(
            f"--objectives: got {text!r}; allowed: comma-separated metric names such as "
            "accuracy,params"
        )
    return [(n, direction_of(n, stored)) for n in names]


# -- launch -------------------------------------------------------------------------------------


def _config(args: argparse.Namespace) -> Any:
    """The search config with the command line's overrides applied and validated."""
    from search._usercode import import_modules, normalise_imports
    from search.config import load_config, load_preset
    from search.config._source import check_source

    check_source(args.config, args.preset)

    extra = normalise_imports(args.imports, path="--import")
    import_modules(extra, path="--import")  # before the config names what they register
    if args.config:
        config = load_config(args.config)
    else:
        config = load_preset(args.preset or _DEFAULT_PRESET)
    try:
        return config.with_overrides(
            **{
                k: getattr(args, k)
                for k in ("trials", "name", "storage", "address", "out", "time_limit")
            },
            imports=[*config.imports, *extra] if extra else None,
        )
    except ConfigError as err:
        raise ConfigError(f"command-line override: {err}") from None


def _launch(args: argparse.Namespace) -> int:
    from search._launch_start import announce, start_ray_early
    from search.run._stages import count_from

    count_from(args.started)  # elapsed times include the imports and Ray's start-up
    announce(args)
    early = start_ray_early(args, _DEFAULT_PRESET)
    try:
        return _launched(args)
    finally:
        if early:
            from search.run._ray_session import stop_ray

            stop_ray()


def _launched(args: argparse.Namespace) -> int:
    from search._format import duration
    from search.config._describe import suspicions
    from search.run import launch

    config = _config(args)  # every check runs before the storage is opened
    url = masked_url(config.storage_url)
    for warning in suspicions(config, floor=False):  # launch() warns of the budget floor
        print(f"search launch: warning: {warning}", file=sys.stderr)
    done = _done_before(config)
    if done >= config.trials:
        print(f"{config.name!r} already has {done} trial(s) done, and --trials (or the config's "
              f"trials) asks for {config.trials} in all: no trial to run; give --trials above "
              f"{done} to go on", flush=True)  # fmt: skip
    elif not args.quiet:
        more = f" ({done} done, {config.trials - done} to run)" if done else ""
        print(f"Launching {config.name!r}: {config.trials} trial(s){more}, storage {url}; "
              f"`search dashboard{_where(config)}` in another shell watches it live",
              flush=True)  # fmt: skip
    study = launch(config, progress=not args.quiet, data_changed=args.data_changed)
    lines = _status_lines(_status_record(study, None))
    print("\n".join([lines[0], *(line for line in lines[1:] if "search trials" in line)]))
    print(f"Elapsed: {duration(time.monotonic() - args.started)} (since the command started, "
          "Ray's start-up included)")  # fmt: skip
    print(f"Storage: {url}")
    _hints(config.name, Path(config.out), _where(config))
    failure = _all_failed(study)
    if failure is not None:
        print(f"search launch: {failure}", file=sys.stderr)
        return 1
    return 0


def _done_before(config: Any) -> int:
    """Trials a relaunch finds done (counted towards ``trials``); 0 for a new search. A
    relaunch with another config, or of a search another launch runs now, is refused here,
    before anything is said about trials to run (it once said "no trial to run" or
    "Launching …", then gave the real error)."""
    import optuna

    from search.errors import SearchLocked
    from search.record import trials_counted
    from search.record._lease import lease_holder
    from search.record._study import check_same_search

    try:
        storage = _open(config.storage_url)
    except ConfigError:  # no storage yet: the launch creates it
        return 0
    if config.name not in _names(storage):
        return 0
    _quiet_optuna()
    study = optuna.load_study(study_name=config.name, storage=storage)
    check_same_search(config.name, study.user_attrs, config.to_dict(), config.objectives)
    holder = lease_holder(storage.engine, config.name)
    if holder is not None:
        raise SearchLocked(f"search {config.name!r} is being launched by {holder}: one launch "
                           "of a search at a time; wait for it to end or stop it")  # fmt: skip
    return trials_counted(study)


def _all_failed(study: optuna.Study) -> str | None:
    """Why every trial of the search that ended failed (its most common error), or None when
    one trained or none ended: such a search found nothing, and says so by its exit code."""
    from collections import Counter

    from optuna.trial import TrialState

    from search.record._counting import counts

    ended = [t for t in study.get_trials(deepcopy=False) if counts(t)]
    if not ended or any(t.state != TrialState.FAIL for t in ended):
        return None
    errors = Counter(
        (str(t.user_attrs.get("error") or "no error recorded").strip().splitlines() or [""])[-1]
        for t in ended
    )
    error, seen = errors.most_common(1)[0]
    return (
        f"every trial failed ({len(ended)}); the most common error ({seen} of {len(ended)}): "
        f"{error} (search trials --state failed lists them; search status --trial N shows "
        "one trial's whole error)"
    )


def _check(args: argparse.Namespace) -> int:
    """``launch``'s checks alone (the config, the user's code, its dataset and indicators),
    then the resolved search and its warnings; nothing is created, started or trained."""
    from search.config._describe import describe, suspicions
    from search.config._user_checks import check_user_code

    config = _config(args)
    fingerprint = check_user_code(config)
    _stored_data(config, fingerprint, args.data_changed)
    print("\n".join(describe(config)))
    if fingerprint is not None:
        print(_data_line(fingerprint))
    for warning in suspicions(config):
        print(f"search check: warning: {warning}", file=sys.stderr)
    print(f"{config.name!r}: the config, its imports, dataset and indicators are valid "
          "(nothing was created, started or trained)")  # fmt: skip
    return 0


def _stored_data(config: Any, fingerprint: dict[str, Any] | None, changed: bool) -> None:
    """``launch``'s check of the data against those the stored search recorded, read-only."""
    import optuna

    from search.record._data_record import refusal

    if fingerprint is None:  # a built-in dataset: its files' checksums are verified
        return
    try:
        storage = _open(config.storage_url)
    except ConfigError:  # no storage yet: nothing recorded
        return
    if config.name not in _names(storage):
        return
    _quiet_optuna()
    attrs = optuna.load_study(study_name=config.name, storage=storage).user_attrs
    message = refusal(config.name, attrs, fingerprint)
    if message is not None and not changed:
        raise ConfigError(message)
    if message is not None:
        print(f"search check: the data differ from those {config.name!r} recorded; `search "
              "launch --data-changed` records the change", file=sys.stderr)  # fmt: skip


def _data_line(fingerprint: dict[str, Any]) -> str:
    """The user's dataset as ``search check`` read it."""
    splits = fingerprint["splits"]
    counts = ", ".join(f"{s} {v['samples']:,}" for s, v in splits.items())
    shape = "×".join(str(n) for n in splits["train"]["shape"])
    skipped = fingerprint.get("skipped")
    note = f"; {skipped} unreadable image(s) skipped" if skipped else ""
    sample = splits["train"]["shape"]
    if len(sample) == 3 and sample[1] == 1:  # an (N, C, L) array read as images, unless told
        note += ("; read as images 1 pixel tall: 1-D signals take `layout: signal` in the "
                 "dataset declaration")  # fmt: skip
    return (
        f"Data {fingerprint['dataset']!r}: {counts} sample(s) of {shape} "
        f"{splits['train']['dtype']}, {fingerprint['classes']} classes; read and checked "
        f"(labels, shapes, values){note}; launch records its fingerprint with the search"
    )


def _where(config: Any) -> str:
    """How a command names the config's storage: its run folder (nothing, for the default
    one), or the storage the config gave (a password masked), with a leading space."""
    if config.storage is not None:
        return f" --storage {masked_url(config.storage_url)}"
    return "" if Path(config.out) == Path(_DEFAULT_OUT) else f" --run {config.out}"


def _hints(name: str, out: Path, store: str) -> None:
    """The next commands, the search's storage named as :func:`_where` does (``store``)."""
    commands = (
        f"status {store}",
        f"trials --name {name} {store}",
        f"pareto --name {name} {store}",
        f"report --name {name} {store} --out {out / name / 'report'}",
        f"export --name {name} {store} --select knee --out {out / name / 'bundle'}",
        f"dashboard {store}",
    )
    print("Look at the results:\n" + "\n".join(
        "  search " + " ".join(c.split()) for c in commands))  # fmt: skip


# -- status ------------------------------------------------------------------------------------


#: Outcomes the table names only when a trial has one.
_ONLY_WHEN_ANY = ("waiting", "adjourned", "interrupted")
#: What the table says of the adjourned and the interrupted ones.
_NOTES = {
    "adjourned": "(adjourned: unfinished, with a checkpoint; a relaunch goes on with them)",
    "interrupted": "(interrupted: not counted towards trials, others run in their place)",
}


def _counts(
    frame: pd.DataFrame, *, live: bool = True, resumable: Collection[int] = ()
) -> dict[str, int]:
    """Trials by outcome (:func:`search._trial_list.outcomes`), each counted once."""
    from search._trial_list import outcomes

    return _tally(outcomes(frame, live=live, resumable=resumable))


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

    from search.record._checkpoint_files import resumable

    running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    return [t.number for t in running if resumable(t)]


def _status_record(study: optuna.Study, holder: str | None) -> dict[str, Any]:
    """The status of one search as data (plain Python values, keys in snake_case, a trial
    named by its ``number``); ``holder``: the live launch running it, if any."""
    import pandas as pd

    from search._format import json_number
    from search._trial_list import outcomes
    from search.pareto._frame import objectives_of, trials_frame, usable
    from search.pareto._study_front import front_of, why_empty

    frame = trials_frame(study)
    objectives = objectives_of(study)
    attrs = study.user_attrs
    live = holder is not None
    found = outcomes(frame, live=live, resumable=() if live else _resumable(study))
    record: dict[str, Any] = {
        "search": study.study_name,
        "trials": len(frame),
        **_tally(found),
        "failed_trials": _numbers(frame, found, "failed"),
        "infeasible_trials": _numbers(frame, found, "infeasible"),
        "running_now": holder,
        "objectives": [f"{n} ({d})" for n, d in objectives],
        "constraints": [str(c) for c in attrs.get("constraints") or []],
        **{k: json_number(attrs.get(k)) for k in StudyAttr.COST},
        "energy_source": attrs.get("search_energy_source"),
        "front": [],
        "best": {},
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
        number = int(rows.loc[pick, Column.NUMBER])
        record["best"][name] = {"value": json_number(values[pick]), Column.NUMBER: number}
    return record


def _status_lines(record: dict[str, Any]) -> list[str]:
    """One search's status as the lines ``search status`` prints."""
    from search._format import duration, format_value
    from search._trial_list import OUTCOMES

    shown = [k for k in OUTCOMES if record[k] or k not in _ONLY_WHEN_ANY]
    counts = ", ".join(f"{record[k]} {k.replace('_', ' ')}" for k in shown)
    notes = "".join(f" {note}" for k, note in _NOTES.items() if record[k])
    lines = [f"Search {record['search']!r}: {record['trials']} trial(s): {counts}{notes}"]
    if record["running_now"] is not None:
        lines.append(f"  running now: launched on {record['running_now']}")
    named = {k: record[f"{k}_trials"] for k in ("failed", "infeasible") if record[f"{k}_trials"]}
    if named:
        lines.append("  " + "; ".join(f"{k}: {v}" for k, v in named.items())
                     + f" (search trials --state {'|'.join(named)} says why)")  # fmt: skip
    lines.append("  objectives: " + ", ".join(record["objectives"]))
    lines.append("  constraints: " + (", ".join(record["constraints"]) or "none"))
    if record["search_time_s"] is not None:
        lines.append(
            f"  cost of the search: {duration(record['search_time_s'])}, "
            f"{format_value(record['search_energy_j'], digits=4)} J, "
            f"{format_value(record['search_co2_g'], digits=4)} g CO2 (energy: "
            f"{', '.join(record['energy_source'] or ['estimate'])})"
        )
    if "front_empty" in record:
        lines.append(f"  front: empty ({record['front_empty']})")
        return lines
    lines.append(f"  front: {len(record['front'])} trial(s) {record['front']}")
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
    from search.record._records import plain

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

    from search.record._checkpoint_files import folder_size
    from search.record._lease import lease_holder

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
        print(f"Storage {masked_url(url)}: {len(records)} search(es)")
        for record in records:
            print("\n".join(_status_lines(record)))
        if records and "run_folder_bytes" in records[0]:
            size = records[0]["run_folder_bytes"] / 2**20
            print(f"Run folder {args.run_folder}: {size:.1f} MiB (checkpoints included)")
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

    from search.config._checks import unknown
    from search.pareto._frame import frame_of
    from search.record._checkpoint_files import latest_checkpoint, resumable
    from search.record._records import constraints_of, read_trial

    chosen = [s for s in studies if args.name in (None, s.study_name)]
    if len(chosen) != 1:
        names = [s.study_name for s in studies]
        raise unknown("--name", args.name, names)
    study = chosen[0]
    if not 0 <= args.trial < len(study.trials):
        raise ConfigError(f"--trial: got {args.trial}; allowed: 0 to {len(study.trials) - 1}")
    trial = study.trials[args.trial]
    read = read_trial(trial, constraints=constraints_of(study))
    live = holder(study.study_name) is not None
    counted = _counts(
        frame_of([read]), live=live, resumable=[read.number] if resumable(trial) else []
    )
    record = {
        "search": study.study_name,
        Column.NUMBER: read.number,
        Column.STATE: read.state,
        "outcome": next(k for k, n in counted.items() if n),
        Column.EPOCHS: read.epochs or 0,
        "stopped": trial.user_attrs.get(TrialAttr.STOPPED) or read.error or read.why_infeasible,
        "checkpoint": None if (found := latest_checkpoint(trial)) is None else str(found),
        "decisions": trial.user_attrs.get(TrialAttr.DECISIONS, []),
    }
    if args.format == "json":
        print(json.dumps(record, indent=2, default=str))
        return 0
    if args.format == "csv":  # one row per decision
        import pandas as pd

        from search.record._records import plain

        sys.stdout.write(pd.DataFrame(record["decisions"]).map(plain).to_csv(index=False))
        return 0
    outcome = record["outcome"].replace("_", " ")
    number, state = record[Column.NUMBER], record[Column.STATE]
    print(f"Search {record['search']!r}, trial {number}: {state} ({outcome}) "
          f"after {record[Column.EPOCHS]} epoch(s)")  # fmt: skip
    if record["outcome"] in _NOTES:
        print(f"  {_NOTES[record['outcome']][1:-1]}")
    if record["stopped"]:
        print(f"  why it ended: {record['stopped']}")
    print(f"  checkpoint: {record['checkpoint'] or 'none'}")
    if not record["decisions"]:
        print("  rung decisions: none (no multi-fidelity scheduler decided on it)")
    for d in record["decisions"]:
        why = f"; {d['why']}" if d.get("why") else ""
        chance = ", at chance" if d.get("at_chance") else ""
        print(f"  rung {d['rung']}: {d['outcome']} — rank {d['rank']} of {d['n']} "
              f"(top {d['top']} go on; arrived {d['arrival'] + 1}){chance}{why}")  # fmt: skip
    return 0


def _trials(args: argparse.Namespace) -> int:
    """``search trials``: every trial of one search, or those of one outcome or state, with its
    hyper-parameters, objectives and why it ended as it did."""
    from search._format import format_value
    from search._trial_list import trial_list
    from search.pareto._frame import objectives_of
    from search.record._lease import lease_holder

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
    shown = listed.drop(columns=["state"]).astype(object)
    for column in shown.columns[3:-1]:
        shown[column] = [format_value(v) for v in shown[column]]
    shown["why"] = [_clipped(w) for w in shown["why"]]
    print(shown.fillna("").to_string(index=False))
    return 0


def _wrote_as_data(frame: pd.DataFrame, form: str) -> bool:
    """Writes ``frame`` as CSV or as JSON records when ``form`` asks for one; True if it did."""
    if form == "csv":
        sys.stdout.write(frame.to_csv(index=False))
    elif form == "json":
        print(frame.to_json(orient="records", indent=2))
    return form in ("csv", "json")


def _clipped(text: Any, width: int = 60) -> str:
    """One line of ``text`` at most ``width`` characters (the last line of a traceback)."""
    if not isinstance(text, str) or not text.strip():
        return ""
    line = text.strip().splitlines()[-1]
    return line if len(line) <= width else line[: width - 1] + "…"


def _delete(args: argparse.Namespace) -> int:
    """``search delete``: one search out of its storage, after a yes (``--yes``: no question;
    without a terminal to ask on, ``--yes`` is required)."""
    from search._deletion import delete_search

    _quiet_optuna()

    def confirm(question: str) -> bool:
        if args.yes:
            return True
        if not sys.stdin.isatty():
            raise ConfigError("--yes: missing; there is no terminal to ask on, and a search is "
                              "deleted only when you say so")  # fmt: skip
        return input(question).strip().lower() in ("y", "yes")

    folder = None if args.storage else Path(args.run_folder)
    said = delete_search(_storage_url(args), args.name, confirm=confirm, run_folder=folder)
    print(said or "nothing deleted")
    return 0 if said else 1


def _stop(args: argparse.Namespace) -> int:
    """``search stop``: the launch running a search stops as on Ctrl-C (see
    :mod:`search._remote_stop`)."""
    from search._remote_stop import stop_search

    _quiet_optuna()
    print(stop_search(_storage_url(args), args.name))
    return 0


# -- pareto, report, export, train ----------------------------------------------------------------


def _pareto(args: argparse.Namespace) -> int:
    """The front table; csv and json keep every column on every row (for programs), the table
    states the conditions equal on every row once above it."""
    from search._format import format_value
    from search.pareto._frame import condition_columns
    from search.pareto._study_front import constant_conditions, front_table

    study = _study(args)
    table = front_table(study, _objectives(study, args.objectives))
    if _wrote_as_data(table, args.format):
        return 0
    conditions = set(condition_columns(table))
    names = [
        str(c)
        for c in table.columns[1:]
        if c not in conditions and not str(c).startswith(Column.PARAMS_PREFIX)
    ]
    title = f"Front of {study.study_name!r}: {len(table)} trial(s) ({', '.join(names)})"
    print(textwrap.fill(title, width=_WIDTH, subsequent_indent="  "))
    if table.empty:
        print(f"(empty: {table.attrs.get('message')})")
        return 0
    constant = constant_conditions(table)
    if constant:
        print("Measured under (the same for every trial below):")
        width = max(len(str(k)) for k in constant)
        for key, value in constant.items():
            print(f"  {key:<{width}}  {format_value(value)}")
    print(table.drop(columns=list(constant)).to_string(index=False, line_width=_WIDTH))
    return 0


def _replay(args: argparse.Namespace) -> int:
    """The what-if table of ``search replay`` (``search.lab``); progress on stderr."""
    from search.lab import CurveTable
    from search.lab._whatif import what_if

    if args.optimiser is not None:
        from search.optimisers import OPTIMISERS

        OPTIMISERS.get(args.optimiser)  # an unknown name fails before any replay
    study = _study(args)
    table = CurveTable.from_study(study)
    kinds = (args.kind,) if args.kind else ("stopping", "promotion")
    total = args.seeds * (1 + (len(kinds) if args.scheduler == "moasha" else 1))
    done = [0]

    def progress(run: Any) -> None:
        done[0] += 1
        print(f"\r[npas] replayed {done[0]}/{total}", end="", file=sys.stderr, flush=True)

    result = what_if(table, scheduler=args.scheduler, kinds=kinds, optimiser=args.optimiser,
                     workers=args.workers, seeds=args.seeds, jobs=args.jobs,
                     progress=progress)  # fmt: skip
    print(file=sys.stderr)
    print(result.json() if args.format == "json" else result.text())
    if args.plot:
        print(f"plot: {result.plot(args.plot)}", file=sys.stderr)
    return 0


def _report(args: argparse.Namespace) -> int:
    from search.pareto import parse_spec
    from search.report._report import write_report

    parse_spec(args.select)  # a bad spec fails before anything is written
    study = _study(args)
    paths = write_report(study, args.out, select=args.select)
    print(f"Report of {study.study_name!r} in {Path(args.out)}:")
    for name, path in paths.items():
        print(f"  {name}: {path}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from search.bundle._folder import bundle_target
    from search.bundle._write import export_bundle
    from search.pareto import parse_spec

    parse_spec(args.select)
    bundle_target(args.out, replace=args.replace)  # before the search's modules are imported
    study = _study(args)
    done = export_bundle(
        study,
        args.out,
        select=args.select,
        objectives=_objectives(study, args.objectives),
        storage_url=_storage_url(args),
        from_checkpoint=args.from_checkpoint,
        replace=args.replace,
    )
    recorded = done.recorded_test_accuracy
    print(f"Exported trial {done.number} of {study.study_name!r} to {done.folder}")
    print(f"  why: {done.selection.reason}")
    print(
        f"  test accuracy: {done.test_accuracy:.4f} (exported model), "
        f"{'n/a' if recorded is None else f'{recorded:.4f}'} (recorded by the search)"
    )
    for name, path in done.paths.items():
        print(f"  {name}: {path}")
    warm = " --from-checkpoint" if args.from_checkpoint else ""
    print(f"Retrain it at a full schedule: search train {done.folder}{warm}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from search._format import format_value
    from search.bundle import read_bundle, train_bundle
    from search.bundle._retrain import check_device

    check_device(args.device)  # a bad flag first, as before a bundle is read
    recorded = read_bundle(args.bundle)["trial_config"].get("imports") or []
    _user_code(args, recorded, "the bundle's")
    done = train_bundle(args.bundle, epochs=args.epochs, out=args.out, device=args.device,
                        seed=args.seed, from_checkpoint=args.from_checkpoint)  # fmt: skip
    start = "from its checkpoint" if args.from_checkpoint else "from scratch"
    print(f"Retrained {args.bundle} {start} for {done.metrics.get('epochs')} epoch(s): "
          "search vs train")  # fmt: skip
    print(done.table.to_string(index=False, float_format=format_value))
    print(f"Saved: {done.path}")
    return 0


def _dashboard(args: argparse.Namespace) -> int:
    from search._dashboard import loopback, start_dashboard, stop_dashboard

    url = _storage_url(args)
    _open(url)  # a missing SQLite file is an error, not a new empty storage
    log = Path(tempfile.mkdtemp(prefix="npas-dashboard-")) / "dashboard.log"
    # A service manager's SIGTERM stops it as Ctrl-C does; so does a SIGINT sent to a server
    # started with SIGINT ignored (a background job), which Python would leave ignored.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _interrupt)
    process, address = start_dashboard(url, host=args.host, port=args.port, log=log,
                                       expose=args.expose, writable=args.writable)  # fmt: skip
    try:  # from here on, a stop at any moment also stops the server
        mode = "writable" if args.writable else "read-only"
        print(f"optuna-dashboard ({mode}) on {masked_url(url)}: {address}  (Ctrl-C or "
              f"SIGTERM stops it; its log: {log})", flush=True)  # fmt: skip
        if not loopback(args.host):
            port = address.rsplit(":", 1)[1]
            print(f"search dashboard: warning: listening on {args.host}:{port}, beyond this "
                  "machine, with no authentication: anyone who reaches it reads every study "
                  f"in the storage{' and can change or delete them' if args.writable else ''}",
                  file=sys.stderr, flush=True)  # fmt: skip
        return process.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        stop_dashboard(process)


def _interrupt(*_: Any) -> None:
    raise KeyboardInterrupt


# -- registries ---------------------------------------------------------------------------------


def _families(args: argparse.Namespace) -> int:

    from spaces._build import FAMILIES, hyper_keys

    width = max(len(n) for n in FAMILIES)
    for name in FAMILIES:
        hypers = ", ".join(hyper_keys(FAMILIES.get(name))) or "(none free: a fixed variant)"
        print(textwrap.fill(hypers, width=_WIDTH, initial_indent=f"{name:<{width}}  ",
                            subsequent_indent=" " * (width + 2)))  # fmt: skip
    return 0


def _indicators(args: argparse.Namespace) -> int:
    import pandas as pd

    from objectives._indicators import INDICATORS

    rows = []
    for name in INDICATORS.names():
        ind = INDICATORS.get(name)
        rows.append(
            {
                "indicator": name,
                "unit": ind.unit,
                "direction": ind.direction,
                "phase": ind.phase,
                "analytic": ind.analytic,
                "description": ind.description,
            }
        )
    with pd.option_context("display.max_colwidth", 80, "display.width", 200):
        print(pd.DataFrame(rows).to_string(index=False))
    return 0


def _first_sentence(text: str) -> str:
    """The first sentence of a file's leading comment (its lines joined: a description that
    runs over two lines once stopped mid-sentence)."""
    words = []
    for line in text.splitlines():
        if not line.startswith("#") or not line[1:].strip():
            break
        words.append(line[1:].strip())
    joined = " ".join(words)
    end = re.search(r"\.(\s|$)", joined)
    return joined[: end.start() + 1] if end else joined


def _presets(args: argparse.Namespace) -> int:
    """The presets as their files say (what `search launch --preset` validates and runs);
    ``--show NAME``: one preset's YAML, as shipped (a start for a config of one's own)."""
    import yaml

    from search.config._presets import list_presets, preset_text, unknown_preset

    if args.show is not None:
        text = preset_text(args.show)
        if text is None:
            raise unknown_preset(args.show)
        sys.stdout.write(text)
        return 0
    for name in list_presets():
        text = preset_text(name) or ""
        data = yaml.safe_load(text) or {}
        objectives = ", ".join(str(o[0] if isinstance(o, list) else o)
                               for o in data.get("objectives", []))  # fmt: skip
        print(f"{name}: {data.get('dataset')}, {data.get('trials', 16)} trials, "
              f"{(data.get('algorithm') or {}).get('name', 'tpe')}; {objectives}")  # fmt: skip
        about = _first_sentence(text).removeprefix(f"{name}: ")
        if about:
            print(textwrap.fill(about, width=_WIDTH, initial_indent="    ",
                                subsequent_indent="    "))  # fmt: skip
    print("One preset's YAML: search presets --show NAME; check it: search check --preset NAME")
    return 0


# -- the parser ---------------------------------------------------------------------------------


def _positive(text: str) -> int:
    return _integer(text, 1)


def _count(text: str) -> int:
    return _integer(text, 0)


def _integer(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if value < low:
        raise argparse.ArgumentTypeError(f"got {text!r}; allowed: an integer >= {low}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 65536:
        raise argparse.ArgumentTypeError(
            f"got {text!r}; allowed: an integer in [1, 65535], or 0 for any free port"
        )
    return value


class _Moved(argparse.Action):
    """``--out`` given to a command that only reads a search: it now names where a command
    writes, so it is refused with the flag to use instead of being taken for a run folder."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        parser.error("--out names where a command writes; give the run folder with --run DIR")


def _flag(parser: argparse.ArgumentParser, name: str, text: str) -> None:
    """An on/off option (off unless given)."""
    parser.add_argument(name, action="store_true", help=text)


def _storage_options(parser: argparse.ArgumentParser, *, writes: bool = False) -> None:
    """--storage and --run (the run folder read); ``writes``: the command has its own --out."""
    parser.add_argument(
        "--storage",
        metavar="URL",
        help="Optuna storage (SQLAlchemy URL, e.g. sqlite:///runs/npas.db or "
        "postgresql://user@host/db); default: sqlite:///<run>/npas.db",
    )
    parser.add_argument(
        "--run",
        dest="run_folder",
        default=_DEFAULT_OUT,
        metavar="DIR",
        help=f"run folder (launch's --out) whose npas.db is the default storage "
        f"(default: {_DEFAULT_OUT})",
    )
    if not writes:
        parser.add_argument("--out", action=_Moved, nargs=0, help=argparse.SUPPRESS)


def _import_options(parser: argparse.ArgumentParser, *, reads: bool = True) -> None:
    """--import (the user's code); for a command that reads a search, --no-imports."""
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="a module or .py file of yours (families, datasets, indicators) to import first; "
        "repeatable" + ("; the modules a search recorded are imported too" if reads else ""),
    )
    if reads:
        _flag(
            parser,
            "--no-imports",
            "import none of the modules the search recorded (importing runs their code); "
            "what needs one then says which",
        )


def _study_options(
    parser: argparse.ArgumentParser, *, objectives: str | None = None, writes: bool = False
) -> None:
    """--name, --storage, --run and the import options; with ``objectives``, --objectives."""
    parser.add_argument(
        "--name", help="search (study) name; may be left out when the storage holds one search"
    )
    _storage_options(parser, writes=writes)
    _import_options(parser)
    if objectives is not None:
        parser.add_argument(
            "--objectives",
            metavar="A,B",
            help=f"{objectives} (default: the search's objectives)",
        )


#: ``--select``'s help; the forms themselves live on the registered selectors.
_SELECT_HELP = "which trial: a selection spec (default: knee); `search selectors` lists the forms"
_DATA_CHANGED_HELP = (
    "your dataset changed since this search was launched (launch refuses that otherwise): go "
    "on with the new data, the change recorded in the study and its unfinished trials started "
    "again"
)


def _selectors(args: argparse.Namespace) -> int:
    from search.pareto import SELECTORS

    for name in SELECTORS.names():
        selector = SELECTORS.get(name)
        doc = " ".join(inspect.cleandoc(type(selector).__doc__ or "").split("\n\n")[0].split())
        print(f"{' | '.join(selector.forms)}\n    {doc}")
    return 0


class _Parser(argparse.ArgumentParser):
    """Errors name the argument, the value and what is allowed, as one paragraph (exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n(see `{self.prog} --help`)\n")


def _version() -> str:
    from importlib import metadata

    try:
        return f"(npas) {metadata.version('npas')}"
    except metadata.PackageNotFoundError:
        return "(npas) unknown"


def build_parser() -> argparse.ArgumentParser:
    """The ``search`` argument parser with every subcommand."""
    parser = _Parser(
        prog="search",
        description="npas: Neural Parameter Allocation Search. Launch a multi-objective search "
        "over architectures x parameter budgets x Shapeshifter mappings on Ray Tune, then look "
        "at its Pareto front, export a trial and train it again. Every search is recorded in "
        "an Optuna storage.",
        epilog="Exit codes: 0 done, 2 bad argument or config, 1 other error, 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, run: Callable[[argparse.Namespace], int], text: str) -> _Parser:
        cmd = sub.add_parser(name, help=text, description=text)
        cmd.set_defaults(run=run)
        return cmd

    cmd = add("launch", _launch, "Run or resume a search; no arguments: the digits-quick preset.")
    cmd.add_argument("config", nargs="?", metavar="CONFIG", help="search config YAML file")
    cmd.add_argument("--preset", metavar="NAME", help="a packaged preset (see `search presets`)")
    cmd.add_argument(
        "--trials",
        type=_positive,
        metavar="N",
        help="total trials (a resumed search counts those already done)",
    )
    cmd.add_argument("--name", help="search (study) name; relaunching a name resumes it")
    cmd.add_argument(
        "--storage",
        metavar="URL",
        help="Optuna storage (SQLAlchemy URL); default: sqlite:///<out>/npas.db",
    )
    cmd.add_argument(
        "--address",
        metavar="ADDR",
        help="Ray cluster to join: HOST:PORT, or auto (RAY_ADDRESS, else the head `ray start` "
        "started on this machine); default: a local Ray, on loopback only",
    )
    cmd.add_argument(
        "--out",
        metavar="DIR",
        help="run folder: storage, Ray files, trained models (default: the config's, runs)",
    )
    cmd.add_argument(
        "--time-limit",
        "--time-budget",  # its name before the rename to limits; kept for one release
        dest="time_limit",
        metavar="T",
        help="start no trial once it would pass this wall-clock limit (45m, 2h, 90s); the "
        "trials in flight finish (limits.time)",
    )
    _flag(cmd, "--quiet", "no live progress lines")
    _flag(cmd, "--data-changed", _DATA_CHANGED_HELP)
    _import_options(cmd, reads=False)

    cmd = add(
        "check",
        _check,
        "Check a config and your code as launch does, then print the resolved search (space, "
        "objectives, budgets, what one trial costs); create, start and train nothing.",
    )
    cmd.add_argument("config", nargs="?", metavar="CONFIG", help="search config YAML file")
    cmd.add_argument("--preset", metavar="NAME", help="a packaged preset (see `search presets`)")
    _flag(cmd, "--data-changed", _DATA_CHANGED_HELP)
    _import_options(cmd, reads=False)
    cmd.set_defaults(**dict.fromkeys(("trials", "name", "storage", "address", "out",
                                      "time_limit")))  # fmt: skip

    cmd = add("status", _status, "Every search in a storage: trials, objectives, front, best.")
    _storage_options(cmd)
    cmd.add_argument("--format", choices=_FORMATS, default="table", help="output format")
    cmd.add_argument(
        "--trial", type=int, metavar="N", help="one trial: why it ended, the rung decisions"
    )
    cmd.add_argument("--name", help="the search of --trial, when the storage holds several")

    cmd = add("trials", _trials, "Every trial of a search: outcome, hyper-parameters, why.")
    _study_options(cmd)
    cmd.add_argument("--state", choices=TRIAL_STATES, metavar="Column.STATE",
                     help=f"only these: {', '.join(TRIAL_STATES)}")  # fmt: skip
    cmd.add_argument("--format", choices=_FORMATS, default="table", help="output format")

    cmd = add("delete", _delete, "Delete one search from its storage (its files stay).")
    cmd.add_argument("--name", required=True, help="the search (study) to delete")
    _storage_options(cmd)
    _flag(cmd, "--yes", "do not ask (required without a terminal)")

    cmd = add("stop", _stop, "Stop a running search from another shell, as Ctrl-C would.")
    cmd.add_argument("--name", required=True, help="the search (study) to stop")
    _storage_options(cmd)

    cmd = add("pareto", _pareto, "The feasible non-dominated trials with every indicator.")
    _study_options(cmd, objectives="front on these metrics")
    cmd.add_argument("--format", choices=_FORMATS, default="table", help="output format")

    cmd = add("report", _report, "Write the efficiency report (HTML, Markdown, PNG, CSV).")
    _study_options(cmd, writes=True)
    cmd.add_argument("--out", required=True, metavar="DIR", help="folder for the report")
    cmd.add_argument("--select", default="knee", metavar="SPEC", help=_SELECT_HELP)

    cmd = add("export", _export, "Write a training-ready bundle of one trial.")
    _study_options(cmd, objectives="front for knee/pepr on these metrics", writes=True)
    cmd.add_argument("--select", default="knee", metavar="SPEC", help=_SELECT_HELP)
    cmd.add_argument("--out", required=True, metavar="DIR", help="bundle folder")
    _flag(
        cmd,
        "--from-checkpoint",
        "weights from the trial's latest checkpoint, kept in the bundle for `search train`",
    )
    _flag(cmd, "--replace", "replace the npas bundle in --out (never a folder of other files)")

    cmd = add("train", _train, "Retrain a bundle at a full schedule (or from its checkpoint).")
    cmd.add_argument("bundle", metavar="BUNDLE", help="folder written by `search export`")
    cmd.add_argument(
        "--epochs", type=_positive, metavar="N", help="epochs (default: 4x the search's)"
    )
    cmd.add_argument(
        "--out",
        metavar="DIR",
        help="where train.json and trained/model.pt go (default: the bundle folder)",
    )
    cmd.add_argument("--device", help="torch device (default: cuda if available, else cpu)")
    _import_options(cmd)
    cmd.add_argument(
        "--seed", type=_count, metavar="N",
        help="seed of initialisation, data order and validation split (default: the bundle's)",
    )  # fmt: skip
    _flag(
        cmd,
        "--from-checkpoint",
        "start from the checkpoint the bundle holds (`search export --from-checkpoint`)",
    )

    cmd = add(
        "replay",
        _replay,
        "Replay a finished search's own learning curves under other schedulers on a simulated "
        "clock: how long each would have taken to reach the search's final hypervolume.",
    )
    _study_options(cmd)
    cmd.add_argument("--scheduler", choices=("moasha", "asha", "fifo"), default="moasha",
                     help="the scheduler to compare with FIFO (default: moasha)")  # fmt: skip
    cmd.add_argument("--type", choices=("stopping", "promotion"), dest="kind",
                     help="MOASHA's type (default: both)")  # fmt: skip
    cmd.add_argument("--optimiser", metavar="NAME",
                     help="the optimiser replayed (default: the search's own)")  # fmt: skip
    cmd.add_argument("--workers", type=_positive, default=2, metavar="N",
                     help="trials trained at once in the replay (default: 2)")  # fmt: skip
    cmd.add_argument("--seeds", type=_positive, default=20, metavar="N",
                     help="replays per scheduler (default: 20)")  # fmt: skip
    cmd.add_argument("--jobs", type=_positive, default=min(2, os.cpu_count() or 1), metavar="N",
                     help="replays run at once (default: 2, or 1 on one CPU)")  # fmt: skip
    cmd.add_argument("--plot", metavar="PNG", help="also draw hypervolume against time here")
    cmd.add_argument("--format", choices=("table", "json"), default="table",
                     help="output format")  # fmt: skip

    cmd = add("dashboard", _dashboard, "Serve optuna-dashboard on a storage until Ctrl-C.")
    _storage_options(cmd)
    cmd.add_argument("--host", default="127.0.0.1", help="interface (default: 127.0.0.1)")
    cmd.add_argument(
        "--port", type=_port, default=8080, help="TCP port; 0: any free one (default: 8080)"
    )
    _flag(cmd, "--expose", "allow a --host beyond loopback (the dashboard has no authentication)")
    _flag(
        cmd,
        "--writable",
        "let the dashboard change the storage (notes, deleting studies); default read-only",
    )

    add("families", _families, "List the architecture families and their hyper-parameters.")
    add("indicators", _indicators, "List the cost indicators: unit, direction, phase.")
    cmd = add("presets", _presets, "List the packaged search presets, or print one's YAML.")
    cmd.add_argument("--show", metavar="NAME", help="print this preset's YAML file")
    add("selectors", _selectors, "List the --select forms: knees, PePR, epsilon, best, trial.")
    return parser


def _message(err: BaseException) -> str:
    """The error's text as one paragraph (a KeyError's str() would quote it)."""
    text = str(err.args[0]) if err.args else str(err)
    return " ".join(text.split())


def _supervised_launch(started: float) -> tuple[int | None, float]:
    """The exit code of the launch run as a supervised child; or None, with the command's
    start (its parent's), where this process is that child (or supervision is unavailable)
    and runs the search itself."""
    from search._supervisor import die_with_parent, supervise, supervised

    parent = supervised()
    if parent is None:
        return supervise(sys.argv[1:], started), started
    die_with_parent(parent[0])
    return None, parent[1]


def _leave_storage_alone(code: int) -> NoReturn:
    """Ends the program without the interpreter's cleanup, once its storage failed: that
    cleanup closes the storage's SQLite connections, and SQLite checkpoints its WAL on close,
    writing the files that just failed (a ``-shm`` made immutable: SIGBUS, exit 135, a fatal
    dump after the one-line error). Ray was stopped already."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the ``search`` command line and returns its exit code.

    Args:
        argv: The arguments after the program name; None: ``sys.argv[1:]``, as the program,
            whose ``launch`` runs the search in a child process group (``search._supervisor``).
    """
    started = time.monotonic()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help (0) or a bad argument (2, the message is printed)
        return int(stop.code or 0)
    if args.command in ("launch", "check"):  # answered before torch and Ray load
        from search.config._source import check_source

        try:
            check_source(args.config, args.preset)
        except ConfigError as err:
            print(f"search {args.command}: error: {_message(err)}", file=sys.stderr)
            return 2
    if args.command == "launch" and argv is None:
        code, started = _supervised_launch(started)
        if code is not None:
            return code
    args.started = started
    try:
        return int(args.run(args))
    except (ConfigError, UnknownNameError) as err:
        print(f"search {args.command}: error: {_message(err)}", file=sys.stderr)
        return 2
    except SearchInterrupted as err:
        print(f"search {args.command}: interrupted: {_message(err)}", file=sys.stderr)
        return 128 + err.signum  # 130 for Ctrl-C, 143 for SIGTERM
    except NpasError as err:
        print(f"search {args.command}: {type(err).__name__}: {_message(err)}", file=sys.stderr)
        if argv is None and isinstance(err, StorageWriteError):
            _leave_storage_alone(1)
        return 1
    except KeyboardInterrupt:
        print(f"search {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `search ... | head`: the reader left, which is no error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
