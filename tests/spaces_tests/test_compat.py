"""spaces._compat: the one module that uses torch's private APIs, and its check.

The check passes on the installed torch (``.ci/bounds`` runs this file again on the lowest
supported one) and refuses, naming the installed and the supported versions, a torch that
lost a private name the Shapeshifter Networks use, before a network takes weights over.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from torch import nn

from spaces import _compat
from spaces._errors import NpasError, UnsupportedDependency
from spaces.ssn import shapeshift

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fresh_check() -> Iterator[None]:
    """The check runs once per process: each test runs it anew, and leaves it to run again."""
    _compat.check.cache_clear()
    yield
    _compat.check.cache_clear()


def test_the_installed_torch_passes() -> None:
    _compat.check()


def test_the_range_is_the_one_pyproject_pins() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = [Requirement(t) for t in pyproject["project"]["dependencies"]]
    (torch_pin,) = [r.specifier for r in pins if r.name == "torch"]
    assert torch_pin == SpecifierSet(_compat.SUPPORTED)


def _without_flat_weight_refs(monkeypatch: pytest.MonkeyPatch) -> None:
    init = nn.RNNBase.__init__

    def lost(self: nn.RNNBase, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        del self._flat_weight_refs

    monkeypatch.setattr(nn.RNNBase, "__init__", lost)


def _without_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nn.Module, "to", lambda self, *args, **kwargs: self)


@pytest.mark.parametrize(
    ("lose", "named"),
    [
        (_without_flat_weight_refs, "RNNBase._flat_weight_refs"),
        (_without_apply, "Module._apply (what Module.to calls)"),
    ],
)
def test_a_torch_without_a_private_name_is_refused_before_a_network_is_built(
    monkeypatch: pytest.MonkeyPatch, lose: Any, named: str
) -> None:
    lose(monkeypatch)
    with pytest.raises(UnsupportedDependency) as caught:
        shapeshift(nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2)), budget=40)
    message = str(caught.value)
    assert isinstance(caught.value, NpasError)
    assert f"npas supports torch {_compat.SUPPORTED}" in message
    assert f"the installed torch {torch.__version__} does not fit: {named} is missing" in message
    assert "pip install 'torch" in message


def test_weights_set_on_an_rnn_and_marked_current_are_not_rebuilt_at_its_forward() -> None:
    gru = nn.GRU(3, 4)
    weight = torch.zeros_like(gru.weight_ih_l0)
    _compat.remove_parameter(gru, "weight_ih_l0")
    gru.weight_ih_l0 = weight
    assert gru._weights_have_changed()  # a forward would rebuild its list of weights
    _compat.mark_rnn_weights_current(gru)
    assert not gru._weights_have_changed()
    assert gru._flat_weights[_compat.rnn_weight_names(gru).index("weight_ih_l0")] is weight


def test_parameters_are_put_back_in_order_unset_ones_included() -> None:
    linear = nn.Linear(2, 2, bias=False)
    weight = linear.weight
    _compat.remove_parameter(linear, "weight")
    linear.register_parameter("weight", weight)
    assert list(_compat.own_parameters(linear)) == ["bias", "weight"]
    _compat.reorder_parameters(linear, ["weight", "bias"])
    assert _compat.own_parameters(linear) == {"weight": weight, "bias": None}
