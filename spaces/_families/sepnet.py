"""SepNet: the design of the public tiny-MNIST records — a 3×3 stem pooled early,
depthwise-separable blocks, a block reused several times, a global-average-pooled head — and
two of those records layer by layer (``record-697``, ``record-997``, declared in
``records.yaml``)."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated

import torch
from torch import nn

from spaces._errors import ConfigError
from spaces._families._common import activation as make_activation
from spaces._families._common import check_choice, check_odd, image_shape
from spaces._families._norm import BatchNorm2d
from spaces._family_registry import register_family
from spaces._hyper import Range, checked

NORMS = ("none", "batch", "layer")
PADDINGS = ("same", "valid")
#: Where ``dropout`` runs (see :class:`SepNet`).
DROPOUT_AT = ("head", "every", "layers", "between")
HEADS = ("gap", "flatten")


@dataclass(frozen=True)
class _Blocks:
    """How the net's convs and blocks are made: one recipe for the stem and every stage."""

    norm: str
    act: Callable[[], nn.Module]
    kernel: int
    separable: bool
    expansion: float
    valid: bool  # k×k convs unpadded: each shrinks the sides by k - 1
    inner_dropout: float  # after the activations inside a block (a widening's; 0: none)

    def pad(self, k: int, side: int, times: int = 1) -> int:
        """The padding of a k×k conv applied ``times`` times from ``side``-wide maps: none
        when ``valid`` and the last application's maps still hold the kernel."""
        return 0 if self.valid and side - (k - 1) * (times - 1) >= k else k // 2

    def conv(self, c_in: int, c_out: int, k: int, pad: int = 0) -> nn.Conv2d:
        """A k×k conv with a bias only where no norm follows."""
        return nn.Conv2d(c_in, c_out, k, padding=pad, bias=self.norm == "none")

    def tail(self, channels: int, dropout: float) -> list[nn.Module]:
        """[norm] → act → [dropout]; ``layer`` normalises each sample over its whole tensor."""
        norm: dict[str, list[nn.Module]] = {
            "batch": [BatchNorm2d(channels)],
            "layer": [nn.GroupNorm(1, channels)],
        }
        drop = [nn.Dropout(dropout)] if dropout > 0 else []
        return [*norm.get(self.norm, []), self.act(), *drop]

    def block(self, c_in: int, c_out: int, pad: int, dropout: float) -> nn.Sequential:
        """One block, with ``dropout`` after its output's activation."""
        k = self.kernel
        if not self.separable:
            return nn.Sequential(self.conv(c_in, c_out, k, pad), *self.tail(c_out, dropout))
        mid = max(1, round(c_in * self.expansion))
        widen = []
        if mid != c_in:
            widen = [self.conv(c_in, mid, 1), *self.tail(mid, self.inner_dropout)]
        depthwise = nn.Conv2d(mid, mid, k, padding=pad, groups=mid, bias=False)
        pointwise = self.conv(mid, c_out, 1)
        return nn.Sequential(*widen, depthwise, pointwise, *self.tail(c_out, dropout))


class _Reused(nn.Module):
    """One block applied ``times`` times with the same weights (plain weight tying), with a
    skip around each application when ``residual`` (the input's centre, where an unpadded
    block shrank the maps)."""

    def __init__(self, block: nn.Module, times: int, residual: bool) -> None:
        super().__init__()
        self.block, self.times, self.residual = block, times, residual

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.times):
            y = self.block(x)
            if self.residual:
                dh, dw = (x.shape[-2] - y.shape[-2]) // 2, (x.shape[-1] - y.shape[-1]) // 2
                y = y + x[..., dh : x.shape[-2] - dh, dw : x.shape[-1] - dw]
            x = y
        return x


@register_family("sepnet")
class SepNet(nn.Module):
    """stem (conv k×k → [norm] → act → [2×2 max pool]) → stages → GAP (or flatten) →
    [dropout] → Linear.

    Stage ``s`` has ``round(width * growth**s)`` channels and ``blocks`` blocks; every stage
    after the first starts with a 2×2 max pool (only while both sides are at least 2). A block
    is a depthwise k×k conv then a pointwise 1×1 conv (``separable``; with ``expansion`` > 1 a
    pointwise conv widens the input first, as in MobileNetV2) or one full k×k conv, then
    [norm] → act → [dropout]. A block whose input and output channels match is applied
    ``reuse`` times with the same weights, so reuse adds depth and FLOPs but no parameters.
    ``padding="valid"`` leaves the k×k convs unpadded, as the 997-parameter record does: each
    shrinks the maps by k - 1 (a conv whose maps are narrower than k is padded instead).
    ``widths`` lists the blocks' channels one by one in a single stage instead, as the records
    have them (10, 10, 11, 12 in the 997-parameter one: no width and growth give those).

    ``dropout_at`` places the dropout: ``head`` before the head only; ``every`` after every
    activation too (the stem's before its pool, each block's, a widening's) and before the
    head; ``layers`` after each layer's output (the stem's after its pool, each block's, each
    application of a reused block) and not before the head, as the 997- and 1,936-parameter
    records; ``between`` between the blocks only (after each but the last), as the
    697-parameter record. ``head="flatten"`` feeds the last maps whole to the linear head
    instead of their global average: more parameters (channels × height × width per class),
    and where the digit's parts lie.

    Args:
        in_shape: ``(channels, height, width)``.
        num_classes: Outputs of the head.
        stem: Channels of the stem conv.
        stem_kernel: Odd kernel size of the stem conv.
        stem_pool: A 2×2 max pool right after the stem (early pooling: a quarter of the work).
        stages: Number of stages.
        blocks: Distinct blocks per stage.
        width: Channels of the first stage.
        growth: Channel multiplier per stage.
        kernel: Odd kernel size of the blocks' depthwise (or full) conv.
        separable: Depthwise-separable blocks, else full convs.
        expansion: Widening of a separable block's input before its depthwise conv (1: none).
        reuse: Applications of each block whose input and output channels match.
        residual: A skip around each such application.
        norm: ``none``, ``batch`` or ``layer`` (the whole tensor of each sample).
        activation: Nonlinearity name (``prelu`` learns one slope per activation).
        dropout: The dropout's rate; where it runs is ``dropout_at``'s.
        padding: ``same`` (the maps keep their size) or ``valid`` (unpadded k×k convs).
        dropout_every: True is ``dropout_at="every"`` (the older spelling, which stored configs
            use).
        negative_slope: LeakyReLU's slope below zero (PReLU's initial one); None keeps
            PyTorch's 0.01 (0.25). The records use 0.2.
        dropout_at: ``head``, ``every``, ``layers`` or ``between`` (above).
        head: ``gap`` (global average pool) or ``flatten`` (the last maps whole).
        widths: Each block's channels, in one stage; replaces ``stages``, ``blocks``,
            ``width`` and ``growth``, which must then keep their defaults.
        stem_padding: The stem conv's padding when it differs from ``padding`` (the
            697-parameter record pads its stem and no block); None: ``padding``.
    """

    @checked
    def __init__(
        self,
        in_shape: Sequence[int],
        num_classes: int,
        *,
        stem: int = 8,
        stem_kernel: int = 3,
        stem_pool: bool = True,
        stages: int = 2,
        blocks: int = 1,
        width: int = 12,
        growth: Annotated[float, Range(0.25, 16)] = 1.5,
        kernel: int = 3,
        separable: bool = True,
        expansion: Annotated[float, Range(1, 16)] = 1.0,
        reuse: Annotated[int, Range(1, 64)] = 1,
        residual: bool = False,
        norm: str = "none",
        activation: str = "leaky_relu",
        dropout: Annotated[float, Range(0, 0.9)] = 0.0,
        padding: str = "same",
        dropout_every: bool = False,
        negative_slope: Annotated[float, Range(0, 1)] | None = None,
        dropout_at: str = "head",
        head: str = "gap",
        widths: Sequence[int] | None = None,
        stem_padding: str | None = None,
    ) -> None:
        super().__init__()
        channels, h, w = image_shape(in_shape)
        check_odd("stem_kernel", stem_kernel)
        check_odd("kernel", kernel)
        place = _dropout_at(dropout_at, dropout_every)
        plan = _plan(widths, stages=stages, blocks=blocks, width=width, growth=growth)
        make = _Blocks(check_choice("norm", norm, NORMS),
                       make_activation(activation, negative_slope),
                       kernel, separable, expansion,
                       check_choice("padding", padding, PADDINGS) == "valid",
                       dropout if place == "every" else 0.0)  # fmt: skip
        stem_valid = make.valid
        if stem_padding is not None:
            stem_valid = check_choice("stem_padding", stem_padding, PADDINGS) == "valid"
        pad = dataclasses.replace(make, valid=stem_valid).pad(stem_kernel, min(h, w))
        layers: list[nn.Module] = [
            make.conv(channels, stem, stem_kernel, pad),
            *make.tail(stem, make.inner_dropout),
        ]
        lost = 2 * (stem_kernel // 2 - pad)  # what an unpadded conv takes off each side
        h, w = h - lost, w - lost
        if stem_pool and min(h, w) >= 2:
            layers.append(nn.MaxPool2d(2))
            h, w = h // 2, w // 2
        if place == "layers" and dropout > 0:
            layers.append(nn.Dropout(dropout))
        channels = stem
        last = sum(len(outs) for outs in plan)
        count = 0
        for s, outs in enumerate(plan):
            if s > 0 and min(h, w) >= 2:
                layers.append(nn.MaxPool2d(2))
                h, w = h // 2, w // 2
            for out in outs:
                count += 1
                after = place in ("every", "layers") or (place == "between" and count < last)
                times = reuse if channels == out else 1
                pad = make.pad(kernel, min(h, w), times)
                block = make.block(channels, out, pad, dropout if after else 0.0)
                layers.append(_Reused(block, reuse, residual) if channels == out else block)
                lost = times * 2 * (kernel // 2 - pad)
                h, w = h - lost, w - lost
                channels = out
        self.features = nn.Sequential(*layers)
        flatten = check_choice("head", head, HEADS) == "flatten"
        self.pool = nn.Identity() if flatten else nn.AdaptiveAvgPool2d(1)
        at_head = dropout > 0 and place in ("head", "every")
        self.drop = nn.Dropout(dropout) if at_head else nn.Identity()
        self.head = nn.Linear(channels * h * w if flatten else channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.drop(self.pool(self.features(x)).flatten(1)))


def _dropout_at(dropout_at: str, dropout_every: bool) -> str:
    """Where the dropout runs, from ``dropout_at`` and its older spelling ``dropout_every``."""
    place = check_choice("dropout_at", dropout_at, DROPOUT_AT)
    if dropout_every and place not in ("head", "every"):
        raise ConfigError(
            f"dropout_every is dropout_at='every'; give one of them, got dropout_every=True "
            f"and dropout_at={dropout_at!r}"
        )
    return "every" if dropout_every else place


def _plan(
    widths: Sequence[int] | None, *, stages: int, blocks: int, width: int, growth: float
) -> list[list[int]]:
    """Each stage's block widths: ``widths`` as one stage, else ``blocks`` blocks of
    ``round(width * growth**s)`` channels in stage ``s``."""
    if widths is None:
        return [[max(1, round(width * growth**s))] * blocks for s in range(stages)]
    if isinstance(widths, int | str) or not isinstance(widths, Sequence) or not widths:
        raise ConfigError(f"widths must be a non-empty list of ints, got {widths!r}")
    grid = {"stages": stages, "blocks": blocks, "width": width, "growth": growth}
    defaults = inspect.signature(SepNet.__init__).parameters  # checked keeps the signature
    changed = [f"{k}={v!r}" for k, v in grid.items() if v != defaults[k].default]
    if changed:
        raise ConfigError(
            f"widths replaces stages, blocks, width and growth; give either, got widths="
            f"{list(widths)!r} and {', '.join(changed)}"
        )
    return [list(widths)]

