"""``search launch`` and ``search check``: the config with the command line's overrides, the
checks a launch makes before it starts, and what it prints at the end."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from search._urls import RUN_FOLDER, masked_url
from search.cli._common import _DEFAULT_PRESET, _names, _open, _quiet_optuna
from search.cli._status import _status_lines, _status_record
from search.errors import ConfigError

if TYPE_CHECKING:  # loaded by the commands that need them: --help and presets stay quick
    import optuna


def _config(args: argparse.Namespace) -> Any:
    """The search config with the command line's overrides applied and validated."""
    return _derived_config(args)[0]


def _derived_config(args: argparse.Namespace) -> tuple[Any, Any]:
    """:func:`_config`, and the derivation of a config file without ``space`` (else None)."""
    from search._usercode import import_modules, normalise_imports
    from search.config import check_source, load_preset
    from search.derive import load_config

    check_source(args.config, args.preset)

    extra = normalise_imports(args.imports, path="--import")
    import_modules(extra, path="--import")  # before the config names what they register
    derivation = None
    if args.config:
        config, derivation = load_config(args.config)
    else:
        config = load_preset(args.preset or _DEFAULT_PRESET)
    try:
        return config.with_overrides(
            **{
                k: getattr(args, k)
                for k in ("trials", "name", "storage", "address", "out", "time_limit")
            },
            imports=[*config.imports, *extra] if extra else None,
        ), derivation
    except ConfigError as err:
        raise ConfigError(f"command-line override: {err}") from None


def _launch(args: argparse.Namespace) -> int:
    from search._early_start import announce, start_ray_early
    from search.run import count_from

    count_from(args.started)  # elapsed times include the imports and Ray's start-up
    announce(args)
    early = start_ray_early(args, _DEFAULT_PRESET)
    try:
        return _launched(args)
    finally:
        if early:
            from search.run import stop_ray

            stop_ray()


def _launched(args: argparse.Namespace) -> int:
    from search._format import duration, wrap, wrap_lines

    config, derivation = _derived_config(args)  # every check runs before the storage opens
    from search.run import launch
    from search.screening import check_user_code

    # data that differ from those the search recorded: refused before a line says "Launching"
    _stored_data(config, check_user_code(config), args.data_changed, said=False)
    url = masked_url(config.storage_url)
    for warning in _warnings(config, floor=False):  # launch() warns of the budget floor
        print(wrap(f"search launch: warning: {warning}"), file=sys.stderr)
    done = _done_before(config)

    def started() -> None:
        """What is launched, said once launch() has checked everything (bad data, a run folder
        that is a file: it once said "Launching 'x' …", then refused)."""
        if derivation is not None and not args.quiet:
            print(wrap(f"{len(derivation.values)} value(s) derived from the data and the "
                       f"constraints (`search check {args.config}` prints each with its "
                       "rule)"), flush=True)  # fmt: skip
        if done >= config.trials:
            finalists = "; its finalists' missing runs only" if config.finalists.on else ""
            print(wrap(f"{config.name!r} already has {done} trial(s) done, and --trials (or "
                       f"the config's trials) asks for {config.trials} in all: no trial to "
                       f"run{finalists}; give --trials above {done} to go on"),
                  flush=True)  # fmt: skip
        elif not args.quiet:
            print(wrap(f"Launching {config.name!r}: {_trials_said(config, done)}, "
                       f"storage {url}; `search dashboard{_where(config)}` in another shell "
                       "watches it live"), flush=True)  # fmt: skip

    study = launch(config, progress=not args.quiet, data_changed=args.data_changed,
                   on_start=started)  # fmt: skip
    lines = _status_lines(_status_record(study, None))
    shown = ("search trials", "recommended: ")
    kept = [lines[0], *(line for line in lines[1:] if any(s in line for s in shown))]
    print("\n".join(wrap_lines(kept)))
    print(f"Elapsed: {duration(time.monotonic() - args.started)} (since the command started, "
          "Ray's start-up included)")  # fmt: skip
    print(f"Storage: {url}")
    _hints(config.name, Path(config.out), _where(config))
    failure = _all_failed(study)
    if failure is not None:
        print(f"search launch: {failure}", file=sys.stderr)  # an error: one line
        return 1
    return 0


def _trials_said(config: Any, done: int) -> str:
    """``480 trial(s) (3 done, 477 to run)``; for a count the time limit cannot let the search
    reach on this machine's CPUs (a derived timed search's ceiling), the time instead (it once
    said "480 trial(s)" of a one-minute search that ran 30), by the rule the progress lines
    follow (``LimitsConfig.count_reachable``)."""
    from search._format import duration

    if not config.limits.count_reachable(config.trials, os.cpu_count() or 1):
        before = f"; {done} done before" if done else ""
        return (f"trials until its time limit ({duration(config.limits.time)}; at most "
                f"{config.trials:,}{before})")  # fmt: skip
    more = f" ({done} done, {config.trials - done} to run)" if done else ""
    return f"{config.trials} trial(s){more}"


def _done_before(config: Any) -> int:
    """Trials a relaunch finds done (counted towards ``trials``); 0 for a new search. A
    relaunch with another config, or of a search another launch runs now, is refused here,
    before anything is said about trials to run (it once said "no trial to run" or
    "Launching …", then gave the real error)."""
    import optuna

    from search.errors import SearchLocked
    from search.record import check_same_search, lease_busy, trials_counted

    try:
        storage = _open(config.storage_url)
    except ConfigError:  # no storage yet: the launch creates it
        return 0
    if config.name not in _names(storage):
        return 0
    _quiet_optuna()
    study = optuna.load_study(study_name=config.name, storage=storage)
    check_same_search(config.name, study.user_attrs, config.to_dict(), config.objectives)
    busy = lease_busy(storage.engine, config.name)
    if busy is not None:
        raise SearchLocked(f"{busy}: one launch or delete of a search at a time; wait for it "
                           "to end or stop it")  # fmt: skip
    return trials_counted(study)


def _all_failed(study: optuna.Study) -> str | None:
    """Why every trial of the search that ended failed (its most common error), or None when
    one trained or none ended: such a search found nothing, and says so by its exit code."""
    from collections import Counter

    from optuna.trial import TrialState

    from search.record import counts, read_trial

    ended = [t for t in study.get_trials(deepcopy=False) if counts(t)]
    if not ended or any(t.state != TrialState.FAIL for t in ended):
        return None
    said = [read_trial(t).error or "no error recorded" for t in ended]
    errors = Counter((s.strip().splitlines() or [""])[-1] for s in said)
    error, seen = errors.most_common(1)[0]
    return (
        f"every trial failed ({len(ended)}); the most common error ({seen} of {len(ended)}): "
        f"{error} (search trials --state failed lists them; search status --trial N shows "
        "one trial's whole error)"
    )


def _check(args: argparse.Namespace) -> int:
    """``launch``'s checks alone (the config, the user's code, its dataset and indicators),
    then the resolved search and its warnings; nothing is created, started or trained."""
    config, derivation = _derived_config(args)  # its errors come before torch loads
    from search.screening import check_user_code, describe

    fingerprint = check_user_code(config)
    _stored_data(config, fingerprint, args.data_changed)
    from search._format import wrap, wrap_lines

    if derivation is not None:
        print("\n".join(wrap_lines(derivation.lines())))
    print("\n".join(wrap_lines(describe(config))))
    if fingerprint is not None:
        print(wrap(_data_line(fingerprint)))
    for warning in _warnings(config):
        print(wrap(f"search check: warning: {warning}"), file=sys.stderr)
    print(wrap(f"{config.name!r}: the config, its imports, dataset and indicators are valid "
               "(nothing was created, started or trained)"))  # fmt: skip
    return 0


def _warnings(config: Any, *, floor: bool = True) -> list[str]:
    """The config's suspicions, and its data's (``search.derive.data_warnings``)."""
    from search.derive import data_warnings
    from search.screening import suspicions

    return [*suspicions(config, floor=floor), *data_warnings(config)]


def _stored_data(
    config: Any, fingerprint: dict[str, Any] | None, changed: bool, *, said: bool = True
) -> None:
    """``launch``'s check of the data against those the stored search recorded, read-only;
    ``said``: a change allowed by ``--data-changed`` is said (``check``; launch records it)."""
    import optuna

    from search.record import refusal

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
    if message is not None and said:
        print(f"search check: the data differ from those {config.name!r} recorded; `search "
              "launch --data-changed` records the change", file=sys.stderr)  # fmt: skip


def _data_line(fingerprint: dict[str, Any]) -> str:
    """The user's dataset as ``search check`` read it."""
    splits = fingerprint["splits"]
    counts = ", ".join(f"{s} {v['samples']:,}" for s, v in splits.items())
    shape = "×".join(str(n) for n in splits["train"]["shape"])
    skipped = fingerprint.get("skipped")
    note = f"; {skipped} unreadable image(s) skipped" if skipped else ""
    labels = fingerprint.get("labels")
    if labels is not None:  # not class indices 0..K-1: mapped in sorted order
        shown = ", ".join(map(repr, labels[:4])) + (", ..." if len(labels) > 4 else "")
        note += (f"; labels {shown} read as classes 0..{len(labels) - 1} in that order "
                 "(an export names them)")
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
    return "" if Path(config.out) == Path(RUN_FOLDER) else f" --run {config.out}"


def _hints(name: str, out: Path, store: str) -> None:
    """The next commands, the search's storage named as :func:`_where` does (``store``)."""
    commands = (
        f"status {store}",
        f"trials --name {name} {store}",
        f"pareto --name {name} {store}",
        f"report --name {name} {store} --out {out / name / 'report'}",
        f"export --name {name} {store} --out {out / name / 'bundle'}",
        f"dashboard {store}",
    )
    print("Look at the results:\n" + "\n".join(
        "  search " + " ".join(c.split()) for c in commands))  # fmt: skip
