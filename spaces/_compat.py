"""The one place ``spaces`` reaches into torch's private APIs, and the check that they hold.

A Shapeshifter Network takes a model's weights over (``spaces.ssn._layers``): it removes them
from the modules that hold them and installs generated tensors in their place, and turns them
back into parameters for a plain copy. torch's public API reads and registers parameters, but:

- ``Module._parameters``: a module's own parameters in registration order, an unset one (a
  ``bias=False`` bias, None) included, which ``named_parameters`` leaves out; restoring a
  model puts them back in that order (:func:`reorder_parameters`), so that the copy's
  ``state_dict`` lists them as the original did;
- ``RNNBase._flat_weights_names`` (an RNN's weights, in the order its kernel takes them),
  ``_flat_weight_refs`` (how a forward tells that a weight changed since the last one: it then
  rebuilds the list and, on a GPU, flattens the weights anew) and ``_init_flat_weights`` (that
  rebuild): :func:`mark_rnn_weights_current` after each install, :func:`reset_rnn_weights`
  after a restore;
- ``Tensor._version`` (how many times a tensor was changed in place): a cached generation of
  the weights is stale once an optimiser stepped (:func:`version_of`);
- ``Module._apply``, what ``to``, ``cuda`` and ``half`` call: ``ShapeshiftNet`` overrides it to
  install weights generated from the moved tensors (the override stays in ``spaces.ssn._net``;
  the check tests that ``Module.to`` still calls it).

npas supports the torch versions of :data:`SUPPORTED` (``pyproject.toml``'s range; a test keeps
the two equal, and ``.ci/bounds`` runs the SSN tests on its lower end). :func:`check`, run once
before the first network takes weights over, refuses a torch without one of these, naming it
and the installed version, instead of failing with an ``AttributeError`` inside a forward.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable

import torch
from torch import Tensor, nn

from spaces._errors import UnsupportedDependency

__all__ = [
    "SUPPORTED",
    "check",
    "mark_rnn_weights_current",
    "own_parameters",
    "remove_parameter",
    "reorder_parameters",
    "reset_rnn_weights",
    "rnn_weight_names",
    "version_of",
]

#: The torch versions npas supports: ``pyproject.toml``'s range (a test keeps them equal).
SUPPORTED = ">=2.2,<3"


@functools.cache
def check() -> None:
    """Refuses, once per process, an installed torch without a private name ``spaces`` uses.

    Raises:
        UnsupportedDependency: naming the installed torch, the supported versions and what
            is missing.
    """
    linear = nn.Linear(2, 2, bias=False)
    if not isinstance(getattr(linear, "_parameters", None), dict) or list(linear._parameters) != [
        "weight",
        "bias",
    ]:
        _refuse("Module._parameters (a module's own parameters, unset ones included)")
    gru = nn.GRU(2, 2)
    for name in ("_flat_weights_names", "_flat_weights", "_flat_weight_refs"):
        if not isinstance(getattr(gru, name, None), list):
            _refuse(f"RNNBase.{name}")
    if not callable(getattr(gru, "_init_flat_weights", None)):
        _refuse("RNNBase._init_flat_weights")
    if not isinstance(getattr(torch.zeros(1), "_version", None), int):
        _refuse("Tensor._version")

    class Probe(nn.Module):
        applied = False

        def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Probe:
            Probe.applied = True
            return super()._apply(fn, recurse)

    Probe().to(torch.float64)
    if not Probe.applied:
        _refuse("Module._apply (what Module.to calls)")


def _refuse(what: str) -> None:
    raise UnsupportedDependency(
        f"npas supports torch {SUPPORTED}; the installed torch {torch.__version__} does not "
        f"fit: {what} is missing. Install a supported version: pip install 'torch{SUPPORTED}'"
    )


def own_parameters(module: nn.Module) -> dict[str, nn.Parameter | None]:
    """The parameters registered on ``module`` itself, in order, unset ones (None) included."""
    return dict(module._parameters)


def remove_parameter(module: nn.Module, name: str) -> None:
    """Unregisters ``module``'s parameter ``name`` if it has one, so that a plain tensor can be
    set in its place."""
    module._parameters.pop(name, None)


def reorder_parameters(module: nn.Module, names: list[str]) -> None:
    """Puts ``module``'s own parameters in the order of ``names`` (any others after them)."""
    params = module._parameters
    ordered = {n: params[n] for n in names if n in params}
    ordered.update(params)
    params.clear()
    params.update(ordered)


def rnn_weight_names(rnn: nn.RNNBase) -> list[str]:
    """The names of an RNN's weights and biases, in the order its kernel takes them."""
    return list(rnn._flat_weights_names)


def mark_rnn_weights_current(rnn: nn.RNNBase) -> None:
    """Marks the tensors ``rnn`` holds now (set by ``setattr``, which updates its list of them)
    as those its last forward saw, so that its next forward does not rebuild the list."""
    rnn._flat_weight_refs = [weakref.ref(w) if w is not None else None for w in rnn._flat_weights]


def reset_rnn_weights(rnn: nn.RNNBase) -> None:
    """Rebuilds ``rnn``'s list of its weights from its attributes (after they were restored)."""
    rnn._init_flat_weights()


def version_of(tensor: Tensor) -> int:
    """How many times ``tensor`` was changed in place (an optimiser's step among them)."""
    return tensor._version
