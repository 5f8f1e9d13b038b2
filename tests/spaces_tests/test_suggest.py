"""One "did you mean" for every unknown name: config keys, registry entries, presets and
selectors all append the hint of spaces._suggest."""

from __future__ import annotations

import pytest

from search.config._checks import known_keys, name
from search.config._metrics import metric_direction
from spaces._build import FAMILIES
from spaces._errors import ConfigError, UnknownNameError
from spaces._suggest import did_you_mean


def test_the_hint() -> None:
    assert did_you_mean("trails", ["trials", "seed"]) == " (did you mean 'trials'?)"
    assert did_you_mean("zzz", ["trials", "seed"]) == ""
    assert did_you_mean("acc", ["accuracy", "params"]) == " (did you mean 'accuracy'?)"
    assert did_you_mean("lat", ["latency_ms", "latency_p90_ms"]) == ""  # two: no guess


def test_every_unknown_name_gets_the_same_hint() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown family 'mpl' \(did you mean 'mlp'\?\)"):
        FAMILIES.get("mpl")
    with pytest.raises(ConfigError, match=r"unknown key 'seeed' .*\(did you mean 'seed'\?\)"):
        known_keys({"seeed": 1}, ["seed", "trials"], "")
    with pytest.raises(ConfigError, match=r"got 'tpr' \(did you mean 'tpe'\?\); allowed: one of"):
        name("tpr", "optimiser.name", ["tpe", "random"])
    with pytest.raises(ConfigError, match=r"got 'acuracy' \(did you mean 'accuracy'\?\)"):
        metric_direction("acuracy")
