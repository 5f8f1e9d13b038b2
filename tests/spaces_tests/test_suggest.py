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
    with pytest.raises(ConfigError, match=r"got 'tpr' \(did you mean 'tpe'\?\)"):
        name("tpr", "optimiser.name", ["tpe", "random"])
    with pytest.raises(ConfigError, match=r"got 'acuracy' \(did you mean 'accuracy'\?\)"):
        metric_direction("acuracy")


#: What an error line may take after ``search launch: error: ``.
_ROOM = 100 - len("search launch: error: ")

_FAMILIES = [f"family-{i}" for i in range(26)]


@pytest.mark.parametrize(
    ("value", "names", "listing", "said"),
    [
        ("zzz", ["tpe", "random"], "", "x: got 'zzz'; allowed: one of ['tpe', 'random']"),
        (
            "tpr",
            ["tpe", "random"],
            "",
            "x: got 'tpr' (did you mean 'tpe'?); allowed: one of ['tpe', 'random']",
        ),
        ("nope", _FAMILIES, "search families", "x: got 'nope'; allowed: see search families"),
        (
            "family-3x",
            _FAMILIES,
            "search families",
            "x: got 'family-3x' (did you mean 'family-3'?)",
        ),
        (
            "nope",
            _FAMILIES,
            "",
            "x: got 'nope'; allowed: one of ['family-0', … 25 more]",
        ),
    ],
)
def test_a_long_list_of_names_is_not_written_out(
    value: str, names: list[str], listing: str, said: str
) -> None:
    """A short list is written whole; a registry's is replaced by the closest name, by the
    command that lists it, or by as many names as fit: the line stays within 100 columns."""
    with pytest.raises(ConfigError) as raised:
        name(value, "x", names, listing)
    assert str(raised.value) == said
    assert len(said) <= _ROOM
