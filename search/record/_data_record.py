"""The data a search ran on, recorded with its study, and a relaunch on other data refused.

Why: a dataset declared by path (``npz: data.npz``) can change under that path between two
launches of a search; resumed, the study would then rank trials trained on two datasets (and a
checkpoint of the old data fails on new shapes with torch's ``size mismatch``). A relaunch on
other data is refused unless the user says ``--data-changed``; then the change is recorded and
the unfinished trials start again rather than go on from checkpoints of the old data.

The study user attribute :data:`StudyAttr.DATA` is a list, oldest first, of ``{"fingerprint": ...,
"since": <UTC time>, "first_trial": <number>, "event": ...}`` (the fingerprint is
:meth:`objectives._custom.CustomDataset.check`'s); the last entry is the data the search runs
on now. Plain JSON: Optuna's API returns it as stored, ``pandas.json_normalize`` tabulates it.
A built-in dataset (its files' checksums verified on every load) has no fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, NamedTuple

import optuna

from search.errors import ConfigError
from search.record._schema import StudyAttr

__all__ = ["DataCheck", "differences", "record_data", "refusal"]



class DataCheck(NamedTuple):
    """What a launch knows of its data.

    Attributes:
        fingerprint: The data's fingerprint; None for a built-in dataset.
        changed: The user said the data changed (``--data-changed``).
    """

    fingerprint: dict[str, Any] | None
    changed: bool = False


def differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between two fingerprints, one phrase per field (hashes shortened)."""
    found = []
    if old.get("classes") != new.get("classes"):
        found.append(f"classes {old.get('classes')} -> {new.get('classes')}")
    splits = {**old.get("splits", {}), **new.get("splits", {})}
    for split in splits:
        a, b = old.get("splits", {}).get(split), new.get("splits", {}).get(split)
        if a is None or b is None:
            found.append(f"split {split!r} {'added' if a is None else 'gone'}")
            continue
        for key in a.keys() | b.keys():
            if a.get(key) != b.get(key):
                short = [v[:12] if isinstance(v, str) and key.endswith("sha256") else v
                         for v in (a.get(key), b.get(key))]  # fmt: skip
                found.append(f"{split} {key.removesuffix('_sha256')} {short[0]} -> {short[1]}")
    if old.get("skipped") != new.get("skipped"):
        found.append(f"images skipped {old.get('skipped', 0)} -> {new.get('skipped', 0)}")
    return sorted(found)


def _stored(attrs: Mapping[str, Any]) -> dict[str, Any] | None:
    entries = attrs.get(StudyAttr.DATA) or []
    return entries[-1]["fingerprint"] if entries else None


def refusal(name: str, attrs: Mapping[str, Any], fingerprint: dict[str, Any] | None) -> str | None:
    """The one-line refusal of a relaunch of search ``name`` (study user attributes
    ``attrs``) on data other than those it recorded; None when they are the same, or when
    there is nothing to compare."""
    stored = _stored(attrs)
    if stored is None or fingerprint is None or stored == fingerprint:
        return None
    found = "; ".join(differences(stored, fingerprint))
    return (
        f"search {name!r} ran on other data: dataset {fingerprint.get('dataset')!r} differs "
        f"from the one it recorded ({found}); relaunch with --data-changed to go on with the "
        "new data (recorded in the study; unfinished trials start again), or use another "
        "--name for a new search"
    )


def record_data(study: optuna.Study, check: DataCheck) -> bool:
    """Records the launch's data with ``study``: on its first launch, when the study has none
    recorded, or when they changed and the user said so.

    Returns:
        Whether the data changed since the last launch (the change is recorded).

    Raises:
        ConfigError: the data changed and ``check.changed`` is false (nothing is recorded).
    """
    if check.fingerprint is None:
        return False
    attrs = study.user_attrs
    entries = list(attrs.get(StudyAttr.DATA) or [])
    message = refusal(study.study_name, attrs, check.fingerprint)
    if entries and message is None:
        return False
    if message is not None and not check.changed:
        raise ConfigError(message)
    trials = len(study.get_trials(deepcopy=False))
    event = "first launch" if not trials else "recorded (the study had no fingerprint)"
    if message is not None:
        event = "--data-changed"
    entries.append({
        "fingerprint": check.fingerprint,
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
        "first_trial": trials,
        "event": event,
    })  # fmt: skip
    study.set_user_attr(StudyAttr.DATA, entries)
    return message is not None
