"""One declaration per config key: the reference lists every key a config file takes, and the
keys renamed in this release still load, with a FutureWarning that names the new key."""

from __future__ import annotations

import copy
import dataclasses
import warnings

import pytest

from search.config import ConfigKey, SearchConfig, load_config, reference
from search.config._keys import RENAMED_KEYS
from search.record._study import _comparable
from spaces import ConfigError
from tests._support.configs import MINIMAL


def test_the_reference_lists_every_key_a_config_file_takes() -> None:
    rows = reference()
    assert all(isinstance(r, ConfigKey) and r.help for r in rows if "." not in r.key)
    keys = [r.key for r in rows]
    assert len(keys) == len(set(keys))
    written = load_config(MINIMAL).to_dict()
    assert set(written) <= set(keys)  # what a config writes back, the reference names
    top = [f.name for f in dataclasses.fields(SearchConfig) if f.metadata.get("in_yaml", True)]
    assert [k for k in keys if "." not in k] == ["name", *[k for k in top if k != "name"]]
    for section in ("resources", "scheduler", "limits", "algorithm", "loading", "train"):
        nested = {k.split(".", 1)[1] for k in keys if k.startswith(section + ".")}
        assert nested, section
        if section in written and isinstance(written[section], dict) and section != "train":
            assert nested == set(written[section]), section


def test_the_reference_gives_defaults_and_allowed_values_from_the_checks() -> None:
    rows = {r.key: r for r in reference()}
    assert rows["trials"].default == 16 and rows["trials"].allowed == "an int >= 1"
    assert rows["dataset"].default == "required" and "digits" in rows["dataset"].allowed
    assert "tpe" in rows["algorithm.name"].allowed and rows["algorithm.name"].default == "tpe"
    assert rows["train.optimizer"].default == "sgd" and "adamw" in rows["train.optimizer"].allowed
    assert rows["measure.intensity_g_per_kwh"].default == 475.0
    assert all(r.help for r in rows.values()), [k for k, r in rows.items() if not r.help]


@pytest.mark.parametrize(
    ("old", "new", "value", "read"),
    [
        ("optimiser", "algorithm", {"name": "random"}, lambda c: c.algorithm.name == "random"),
        ("budget", "limits", {"time": "45m"}, lambda c: c.limits.time == 45 * 60),
    ],
)
def test_a_renamed_key_still_loads_with_a_warning_naming_the_new_key(old, new, value, read):
    with pytest.warns(FutureWarning, match=f"'{old}' is renamed '{new}'"):
        config = load_config({**MINIMAL, old: value})
    assert read(config)
    assert old not in config.to_dict() and new in config.to_dict()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new key alone: no warning
        assert read(load_config({**MINIMAL, new: value}))


def test_a_renamed_key_given_under_both_names_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"optimiser.*old name of algorithm"):
        load_config({**MINIMAL, "optimiser": "tpe", "algorithm": "random"})


def test_a_search_stored_under_the_old_names_compares_equal_after_the_rename() -> None:
    new = load_config(MINIMAL).to_dict()
    old = copy.deepcopy(new)
    for before, after in RENAMED_KEYS.items():
        old[before] = old.pop(after)
    assert _comparable(old) == _comparable(new)
    changed = {**new, "algorithm": {"name": "random", "options": {}}}
    assert _comparable(old) != _comparable(changed)


def test_the_old_time_budget_flag_still_sets_the_time_limit(tmp_path, capsys) -> None:
    from search.cli import main

    assert main(["launch", "--time-budget", "soon", "--out", str(tmp_path)]) == 2
    assert "limits.time" in capsys.readouterr().err
