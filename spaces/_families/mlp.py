"""MLP: the baseline every image family must beat; it flattens any input shape."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from spaces._build import register_family
from spaces._errors import ConfigError
from spaces._families._common import ACTIVATIONS, check_choice, check_float, check_int


@register_family("mlp")
class MLP(nn.Module):
    """Flatten → (Linear → activation → dropout) per hidden width → Linear head.

    Args:
        in_shape: Shape of one sample; flattened, so any rank works.
        num_classes: Outputs of the head.
        hidden: Width of each hidden layer, in order; empty gives a linear classifier.
        activation: Name of the nonlinearity ("relu", "gelu", "silu", "tanh", "elu",
            "leaky_relu").
        dropout: Dropout probability after each hidden activation.
    """

    def __init__(
        self,
        in_shape: Sequence[int],
        num_classes: int,
        *,
        hidden: Sequence[int] = (128,),
        activation: str = "relu",
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if isinstance(hidden, int | str) or not isinstance(hidden, Sequence):
            raise ConfigError(f"hidden must be a sequence of widths, got {hidden!r}")
        widths = [check_int("hidden", w) for w in hidden]
        p = check_float("dropout", dropout, low=0.0, high=1.0)
        act = ACTIVATIONS[check_choice("activation", activation, ACTIVATIONS)]
        layers: list[nn.Module] = [nn.Flatten()]
        fan_in = math.prod(in_shape)
        for width in widths:
            layers += [nn.Linear(fan_in, width), act()]
            if p > 0:
                layers.append(nn.Dropout(p))
            fan_in = width
        layers.append(nn.Linear(fan_in, num_classes))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)
