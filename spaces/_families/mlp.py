"""MLP: the baseline every image family must beat; it flattens any input shape."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated

import torch
from torch import nn

from spaces._errors import ConfigError
from spaces._families._common import ACTIVATIONS, check_choice
from spaces._family_registry import register_family
from spaces._hyper import Range, checked


@register_family("mlp")
class MLP(nn.Module):
    """Flatten → (Linear → activation → dropout) per hidden width → Linear head.

    Args:
        in_shape: Shape of one sample; flattened, so any rank works.
        num_classes: Outputs of the head.
        hidden: Width of each hidden layer, in order; empty gives a linear classifier.
            Default ``(128,)``.
        depth: Number of hidden layers, all of width ``width``: the scalar form a search
            space can sample (a list cannot be one dimension). Exclusive with ``hidden``.
        width: Width of each of the ``depth`` hidden layers (default 128 when only ``depth``
            is given; ``width`` alone means one hidden layer).
        activation: Name of the nonlinearity ("relu", "gelu", "silu", "tanh", "elu",
            "leaky_relu").
        dropout: Dropout probability after each hidden activation.
    """

    @checked
    def __init__(
        self,
        in_shape: Sequence[int],
        num_classes: int,
        *,
        hidden: Sequence[int] | None = None,
        depth: Annotated[int, Range(0, 2**20)] | None = None,
        width: int | None = None,
        activation: str = "relu",
        dropout: Annotated[float, Range(0.0, 0.99)] = 0.0,
    ) -> None:
        super().__init__()
        widths = _widths(hidden, depth, width)
        act = ACTIVATIONS[check_choice("activation", activation, ACTIVATIONS)]
        layers: list[nn.Module] = [nn.Flatten()]
        fan_in = math.prod(in_shape)
        for width in widths:
            layers += [nn.Linear(fan_in, width), act()]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            fan_in = width
        layers.append(nn.Linear(fan_in, num_classes))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def _widths(hidden: Sequence[int] | None, depth: int | None, width: int | None) -> list[int]:
    """The hidden widths from either ``hidden`` or ``depth`` × ``width``."""
    if hidden is not None and (depth is not None or width is not None):
        raise ConfigError(
            f"give either hidden or depth/width, not both; got hidden={hidden!r}, "
            f"depth={depth!r}, width={width!r}"
        )
    if depth is not None or width is not None:
        return [128 if width is None else width] * (1 if depth is None else depth)
    hidden = (128,) if hidden is None else hidden
    if isinstance(hidden, int | str) or not isinstance(hidden, Sequence):
        raise ConfigError(f"hidden must be a sequence of widths, got {hidden!r}")
    return list(hidden)
