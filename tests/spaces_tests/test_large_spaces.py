"""A space as large as a config file allows (1 MiB: about 140,000 choices of one dimension) is
checked in linear work: counted, not timed (issue 60, item 4: the uniqueness test compared
every pair of choices, and each value of a family's hyper-parameter resolved the family's type
hints again; 140,000 choices took over 120 s of `search check`)."""

from __future__ import annotations

import typing

import pytest

import spaces._dsl
import spaces._hyper
from spaces import Categorical, ConfigError

N = 20_000


class _NotLinear(BaseException):
    """Past the calls allowed: a BaseException, so no ``except Exception`` of the code under
    test swallows it."""


class _Counted:
    """Wraps ``call``, counting calls; past ``most`` the test fails at once (the quadratic
    code would make 200 million comparisons here)."""

    def __init__(self, call: typing.Callable[..., typing.Any], most: int) -> None:
        self.call, self.most, self.calls = call, most, 0

    def __call__(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        self.calls += 1
        if self.calls > self.most:
            raise _NotLinear(f"more than {self.most:,} calls: not linear")
        return self.call(*args, **kwargs)


def test_unique_choices_are_checked_in_linear_work(monkeypatch):
    counted = _Counted(spaces._dsl.same_value, 4 * N)
    monkeypatch.setattr(spaces._dsl, "same_value", counted)
    dim = Categorical(list(range(N)))
    assert len(dim.choices) == N and dim.check(N - 1) and not dim.check(float(N - 1))
    with pytest.raises(ConfigError, match="choices must be unique, 7 appears twice"):
        Categorical([*range(N), 7])
    Categorical([1, 1.0, True, "1", None])  # equal under ==, but different types: allowed


def test_a_hyper_parameter_with_many_values_resolves_its_familys_hints_once(monkeypatch):
    from search.config import load_config

    counted = _Counted(typing.get_type_hints, 10)
    monkeypatch.setattr(spaces._hyper, "_RESOLVED", {}, raising=False)  # none resolved yet
    monkeypatch.setattr(spaces._hyper.typing, "get_type_hints", counted)
    space = {"family": ["mlp"], "mlp.width": {"choices": list(range(8, 8 + N))}}
    config = load_config({"dataset": "digits", "space": space})
    assert len(config.space["mlp.width"].choices) == N and counted.calls >= 1
