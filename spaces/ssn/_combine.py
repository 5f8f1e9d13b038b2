"""One fused autograd step that turns a store into the weights of all its directly served layers.

Layer ``j`` reads ``C`` consecutive templates of ``n`` values starting at ``a`` in the circular
store ``theta`` and returns ``sum_k coef[k] * template_k``. Built from slices, autograd would give
every layer a full-size zero gradient for ``theta`` (cost: layers x store size per step) and a
circular extension would copy the store several times over. Here the forward reads templates as
views, and the backward allocates one gradient for the store and adds each layer's rank-one
contribution into its window in place: linear in the number of template values.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable


@dataclass(frozen=True)
class Window:
    """Templates ``[k0, k1)`` of a layer: contiguous at ``start`` (``wrap=False``), or one
    template that runs past the store's end and continues at 0 (``wrap=True``, ``k1 = k0 + 1``).
    """

    k0: int
    k1: int
    start: int
    wrap: bool


def windows(start: int, templates: int, numel: int, size: int) -> tuple[Window, ...]:
    """Splits a block of ``templates`` templates at circular position ``start`` into windows."""
    out: list[Window] = []
    k = 0
    while k < templates:
        p = (start + k * numel) % size
        if p + numel > size:
            out.append(Window(k, k + 1, p, True))
            k += 1
            continue
        run = min(templates - k, (size - p) // numel)
        out.append(Window(k, k + run, p, False))
        k += run
    return tuple(out)


def _gather(theta: Tensor, w: Window, numel: int) -> Tensor:
    """The ``(k1 - k0, numel)`` templates of a window (a view unless it wraps)."""
    if not w.wrap:
        return theta[w.start : w.start + (w.k1 - w.k0) * numel].view(-1, numel)
    head = theta[w.start :]
    return torch.cat((head, theta[: numel - head.numel()])).view(1, numel)


class Combine(torch.autograd.Function):
    """``outputs[j] = sum over windows of coef_j[k0:k1] @ templates`` for every layer ``j``."""

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        theta: Tensor,
        layout: tuple[tuple[int, tuple[Window, ...]], ...],
        *coefs: Tensor,
    ) -> tuple[Tensor, ...]:
        ctx.layout = layout  # type: ignore[attr-defined]
        ctx.save_for_backward(theta, *coefs)
        outputs = []
        # In the store's precision even under autocast (bf16 on CUDA by default): the backward
        # adds into a gradient of the store's dtype, and the weights are a tiny share of the
        # step's work; the layers that use them are autocast as usual.
        with torch.autocast(theta.device.type, enabled=False):
            for (numel, wins), coef in zip(layout, coefs, strict=True):
                out: Tensor | None = None
                for w in wins:
                    part = coef[w.k0 : w.k1] @ _gather(theta, w, numel)
                    out = part if out is None else out.add_(part)
                assert out is not None  # a layer takes at least one template: one window
                outputs.append(out)
        return tuple(outputs)

    @staticmethod
    @once_differentiable
    def backward(
        ctx: torch.autograd.function.FunctionCtx, *grads: Tensor | None
    ) -> tuple[Tensor | None, ...]:
        theta, *coefs = ctx.saved_tensors  # type: ignore[attr-defined]
        need_theta, _, *need_coefs = ctx.needs_input_grad  # type: ignore[attr-defined]
        grad_theta = torch.zeros_like(theta) if need_theta else None
        grad_coefs: list[Tensor | None] = []
        layout = ctx.layout  # type: ignore[attr-defined]
        for (numel, wins), coef, grad, need in zip(layout, coefs, grads, need_coefs, strict=True):
            if grad is None:
                grad_coefs.append(None)
                continue
            grad_coef = torch.empty_like(coef) if need else None
            grad = grad.to(theta.dtype)
            for w in wins:
                if grad_coef is not None:
                    grad_coef[w.k0 : w.k1] = _gather(theta, w, numel) @ grad
                if grad_theta is None:
                    continue
                if not w.wrap:
                    rows = grad_theta[w.start : w.start + (w.k1 - w.k0) * numel].view(-1, numel)
                    rows.addr_(coef[w.k0 : w.k1], grad)
                else:
                    first = theta.numel() - w.start
                    grad_theta[w.start :].add_(grad[:first] * coef[w.k0])
                    grad_theta[: numel - first].add_(grad[first:] * coef[w.k0])
            grad_coefs.append(grad_coef)
        return (grad_theta, None, *grad_coefs)
