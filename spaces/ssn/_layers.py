"""Finding the weights a Shapeshifter Network takes over, and swapping generated tensors into them.

A *layer* here is one weight tensor (a Linear/Conv weight, one GRU/LSTM matrix, an attention
projection). Its *slots* are the (module, attribute) pairs that hold it: usually one, several
when a Parameter is tied between supported modules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch import Tensor, nn

from spaces import _compat
from spaces._errors import ConfigError

SUPPORTED = "Linear, Conv1d/2d/3d (and transposed), GRU/LSTM/RNN, MultiheadAttention"
#: The convolutions of :data:`SUPPORTED` (their lazy forms and subclasses among them).
_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d,
          nn.ConvTranspose3d)  # fmt: skip


@dataclass(frozen=True)
class Slot:
    """One place a layer's weight lives: ``getattr(model.get_submodule(module), attr)``."""

    module: str
    attr: str


@dataclass(frozen=True)
class LayerSpec:
    """A weight tensor taken over by the SSN, with the variance of its module's default init."""

    name: str
    shape: tuple[int, ...]
    slots: tuple[Slot, ...]
    default_var: float

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def _fans(weight: Tensor) -> tuple[int, int]:
    """A weight's fan-in and fan-out as ``torch.nn.init`` counts them (input or output
    channels times the kernel's size)."""
    kernel = math.prod(weight.shape[2:])
    return weight.shape[1] * kernel, weight.shape[0] * kernel


def _xavier_var(weight: Tensor) -> float:
    fan_in, fan_out = _fans(weight)
    return 2.0 / (fan_in + fan_out)


def _kaiming_a5_var(weight: Tensor) -> float:
    # nn.Linear / nn.Conv default: kaiming_uniform_(a=sqrt(5)) = U(+-1/sqrt(fan_in)).
    fan_in, _ = _fans(weight)
    return 1.0 / (3.0 * fan_in)


def _candidates(module: nn.Module) -> list[tuple[str, float]]:
    """(attribute, default-init variance) of the weights of ``module`` an SSN can generate."""
    if isinstance(module, (nn.Linear, *_CONVS)):
        weight = module.weight
        return [("weight", _kaiming_a5_var(weight))] if isinstance(weight, Tensor) else []
    if isinstance(module, nn.RNNBase):
        var = 1.0 / (3.0 * module.hidden_size)  # reset_parameters: U(-1/sqrt(H), 1/sqrt(H))
        names = _compat.rnn_weight_names(module)
        return [(n, var) for n in names if n.startswith("weight_")]
    if isinstance(module, nn.MultiheadAttention):
        names = (
            ["in_proj_weight"]  # one projection when q, k and v have the same size
            if module.in_proj_weight is not None
            else ["q_proj_weight", "k_proj_weight", "v_proj_weight"]
        )
        return [(n, _xavier_var(getattr(module, n))) for n in names]
    return []


def find_layers(model: nn.Module) -> list[LayerSpec]:
    """Lists the trainable supported weights of ``model`` in module order.

    A Parameter that is also held by an unsupported module (e.g. a decoder tied to an embedding)
    stays an ordinary parameter, since the other holder would not see generated values.
    """
    _compat.check()
    slots: dict[int, list[Slot]] = {}
    params: dict[int, tuple[nn.Parameter, float]] = {}
    taken: set[tuple[int, str]] = set()
    for mod_name, module in model.named_modules():
        for attr, var in _candidates(module):
            param = _compat.own_parameters(module).get(attr)
            if isinstance(param, nn.parameter.UninitializedParameter):
                raise ConfigError(
                    f"model: {type(module).__name__} {mod_name!r} is lazy and not initialised yet;"
                    " run one forward pass before shapeshift"
                )
            if not isinstance(param, nn.Parameter) or not param.requires_grad:
                continue
            if not param.is_floating_point():
                continue
            slots.setdefault(id(param), []).append(Slot(mod_name, attr))
            params[id(param)] = (param, var)
            taken.add((id(module), attr))
    held_elsewhere = {
        id(p)
        for module in model.modules()
        for attr, p in _compat.own_parameters(module).items()
        if id(p) in slots and (id(module), attr) not in taken
    }
    layers = []
    for key, slot_list in slots.items():
        if key in held_elsewhere:
            continue
        param, var = params[key]
        first = slot_list[0]
        name = f"{first.module}.{first.attr}" if first.module else first.attr
        layers.append(LayerSpec(name, tuple(param.shape), tuple(slot_list), var))
    return layers


class WeightSwapper:
    """Removes the taken-over Parameters from a model; installs generated tensors in their place.

    The generated tensors become plain attributes, so any ``forward`` that reads ``self.weight``
    (subclasses included) uses them. RNN modules keep a private list of their weights
    which is refreshed too, so cuDNN/the CPU kernel see the generated values.
    """

    def __init__(self, model: nn.Module, layers: list[LayerSpec]) -> None:
        self._targets = [
            [(model.get_submodule(s.module), s.attr) for s in layer.slots] for layer in layers
        ]
        self._rnns = list(
            {
                id(m): m for slots in self._targets for m, _ in slots if isinstance(m, nn.RNNBase)
            }.values()
        )
        self.param_order = {
            s.module: list(_compat.own_parameters(model.get_submodule(s.module)))
            for layer in layers
            for s in layer.slots
        }
        for slots in self._targets:
            for module, attr in slots:
                _compat.remove_parameter(module, attr)

    def install(self, weights: list[Tensor]) -> None:
        """Makes every slot of layer ``i`` read ``weights[i]``."""
        for slots, weight in zip(self._targets, weights, strict=True):
            for module, attr in slots:
                setattr(module, attr, weight)
        for rnn in self._rnns:  # RNNBase.__setattr__ updated its list of weights
            _compat.mark_rnn_weights_current(rnn)


def restore_parameters(
    model: nn.Module, layers: list[LayerSpec], weights: list[Tensor], order: dict[str, list[str]]
) -> None:
    """Turns generated weights back into ordinary Parameters of ``model``, in original order."""
    for layer, weight in zip(layers, weights, strict=True):
        param = nn.Parameter(weight.detach().clone())
        for slot in layer.slots:
            module = model.get_submodule(slot.module)
            if slot.attr in module.__dict__:
                delattr(module, slot.attr)
            module.register_parameter(slot.attr, param)
    for mod_name, names in order.items():
        module = model.get_submodule(mod_name)
        _compat.reorder_parameters(module, names)
        if isinstance(module, nn.RNNBase):
            _compat.reset_rnn_weights(module)
