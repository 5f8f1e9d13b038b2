"""Analytic indicators: counts fixed by the model's structure, the same on every machine.

FLOP convention (stated in every result as ``cond_flop_convention``): 2 FLOPs per multiply-add of
matrix products, convolutions and attention, as ``torch.utils.flop_counter.FlopCounterMode``
counts them; bias additions, normalisation, activation functions, pooling, the loss and the
optimiser step are not counted. Counting runs with grad enabled, which keeps attention off the
fused inference fast path the counter cannot see; the fused CPU attention kernel, which the
counter does not know, gets the standard attention formula (:func:`attention_flops`).
Convolution backward is recounted too: torch's formula charges a grouped convolution's weight
gradient ``groups`` times over (a depthwise 16-channel layer's backward comes out at 17× its
forward instead of 2×, torch 2.13), whereas each gradient costs exactly the forward's FLOPs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from objectives._conditions import MeasureContext, module_mode, surrogate_loss

FLOP_CONVENTION = (
    "2 FLOPs per multiply-add of matmul/conv/attention (torch FlopCounterMode + attention "
    "formula for the CPU kernel + group-correct conv backward); bias adds, norms, activation "
    "functions, pooling, loss and optimizer step not counted; train = forward + backward, "
    "no input gradient"
)

_aten = torch.ops.aten


def attention_flops(batch_heads: int, q_len: int, k_len: int, qk_dim: int, v_dim: int) -> int:
    """Forward FLOPs of softmax(QKᵀ)V: the two batched products QKᵀ and (scores)V."""
    return 2 * batch_heads * q_len * k_len * (qk_dim + v_dim)


def attention_backward_flops(
    batch_heads: int, q_len: int, k_len: int, qk_dim: int, v_dim: int
) -> int:
    """Backward FLOPs: recomputed scores, dV, d(scores), dQ and dK (as torch's fused kernels)."""
    return 2 * batch_heads * q_len * k_len * (3 * qk_dim + 2 * v_dim)


def _sdpa_cpu_flop(query_shape: Any, key_shape: Any, value_shape: Any, *_: Any, **__: Any) -> int:
    *lead_q, q_len, qk_dim = query_shape
    k_len, v_dim = key_shape[-2], value_shape[-1]
    return attention_flops(_prod(lead_q), q_len, k_len, qk_dim, v_dim)


def _sdpa_cpu_backward_flop(
    grad_shape: Any, query_shape: Any, key_shape: Any, value_shape: Any, *_: Any, **__: Any
) -> int:
    *lead_q, q_len, qk_dim = query_shape
    k_len, v_dim = key_shape[-2], value_shape[-1]
    return attention_backward_flops(_prod(lead_q), q_len, k_len, qk_dim, v_dim)


def conv_flops(x_shape: Any, w_shape: Any, out_shape: Any, *, transposed: bool = False) -> int:
    """Forward FLOPs of a (grouped, strided, dilated) convolution.

    Each output element of a plain convolution takes ``prod(w_shape[1:])`` multiply-adds
    (``w_shape[1]`` is already ``in_channels / groups``); a transposed one spreads each input
    element over ``prod(w_shape[1:])`` outputs instead.
    """
    spatial = x_shape[2:] if transposed else out_shape[2:]
    return 2 * int(x_shape[0]) * _prod(w_shape) * _prod(spatial)


def _conv_backward_flop(
    grad_out_shape: Any,
    x_shape: Any,
    w_shape: Any,
    _bias: Any,
    _stride: Any,
    _padding: Any,
    _dilation: Any,
    transposed: bool,
    _output_padding: Any,
    _groups: Any,
    output_mask: Any,
    **_: Any,
) -> int:
    """Input and weight gradients each cost the forward's FLOPs (the bias gradient is a sum)."""
    forward = conv_flops(x_shape, w_shape, grad_out_shape, transposed=transposed)
    return forward * (int(bool(output_mask[0])) + int(bool(output_mask[1])))


def _prod(values: Any) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


def _custom_formulas() -> dict[Any, Any]:
    """Fused CPU attention (FlopCounterMode leaves it at 0) and a group-correct conv backward."""
    pairs = {
        "convolution_backward": _conv_backward_flop,
        "_scaled_dot_product_flash_attention_for_cpu": _sdpa_cpu_flop,
        "_scaled_dot_product_flash_attention_for_cpu_backward": _sdpa_cpu_backward_flop,
    }
    return {getattr(_aten, op): fn for op, fn in pairs.items() if hasattr(_aten, op)}


def count_flops(run: Any) -> int:
    """Total FLOPs of ``run()`` under torch's counter with the formulas above."""
    with _flop_counter() as counter:
        run()
    return int(counter.get_total_flops())


def _flop_counter() -> FlopCounterMode:
    """Torch's counter with the formulas above, not displaying."""
    return FlopCounterMode(display=False, custom_mapping=_custom_formulas())


def probe_flops_infer(ctx: MeasureContext) -> dict[str, Any]:
    """Per-sample inference FLOPs (and MACs = FLOPs / 2 by construction) of the deployed form."""
    model, x = ctx.infer_model, ctx.example
    with module_mode(model, training=False), torch.enable_grad():
        total = count_flops(lambda: model(x))
    flops = total / len(x)
    return {"flops_infer": flops, "macs": flops / 2, "cond_flop_convention": FLOP_CONVENTION}


def probe_flops_train(ctx: MeasureContext) -> dict[str, Any]:
    """Per-sample FLOPs of a training forward + backward of the train form (batch >= 2 for BN)."""
    model = ctx.train_model()
    x = ctx.batch(max(2, len(ctx.example)))

    def step() -> None:
        surrogate_loss(model(x)).backward()

    with module_mode(model, training=True), torch.enable_grad():
        total = count_flops(step)
    model.zero_grad(set_to_none=True)
    return {"flops_train": total / len(x), "cond_flop_convention": FLOP_CONVENTION}


def probe_params(ctx: MeasureContext) -> dict[str, Any]:
    """Trainable parameters of the model as given, each shared tensor once."""
    return {"params": sum(p.numel() for p in ctx.model.parameters() if p.requires_grad)}


def _call_counts(model: nn.Module, x: torch.Tensor, around: AbstractContextManager[Any]
                 ) -> Counter[nn.Module]:  # fmt: skip
    """How many times each submodule's forward ran during one forward pass, run inside
    ``around`` (no_grad, or a FLOP counter that counts the same pass)."""
    calls: Counter[nn.Module] = Counter()
    handles = [m.register_forward_hook(lambda m, *_: calls.update([m])) for m in model.modules()]
    with around:
        _forward_then_unhook(model, x, handles)
    return calls


def _forward_then_unhook(model: nn.Module, x: torch.Tensor, handles: list[Any]) -> None:
    """One eval-mode forward pass with the given hooks attached, removed afterwards."""
    try:
        with module_mode(model, training=False):
            model(x)
    finally:
        for h in handles:
            h.remove()


def _uses(module: nn.Module, calls: Counter[nn.Module], inherited: int) -> Iterator[int]:
    """Weights used by ``module``'s subtree: direct parameters × uses, recursively.

    A submodule whose forward never runs (MultiheadAttention's ``out_proj``, a store read by
    its parent) has its parameters used by the parent's code, so it inherits the parent's uses.
    """
    uses = calls[module] or inherited
    yield uses * sum(p.numel() for p in module.parameters(recurse=False))
    for child in module.children():
        yield from _uses(child, calls, uses)


def count_weights(model: nn.Module, x: torch.Tensor) -> int:
    """Effective weights of ``model`` in one forward pass of ``x``: every use of a shared
    module counted (on the meta device too: the screen counts them before training)."""
    return int(sum(_uses(model, _call_counts(model, x, torch.no_grad()), 1)))


def count_weights_and_flops(model: nn.Module, x: torch.Tensor) -> tuple[int, int]:
    """:func:`count_weights` and the eval-mode forward's FLOPs (:func:`count_flops`) from one
    pass: the screen counts many models on the meta device, where each pass is slow."""
    counter = _flop_counter()
    calls = _call_counts(model, x, counter)
    return int(sum(_uses(model, calls, 1))), int(counter.get_total_flops())


def probe_weights(ctx: MeasureContext) -> dict[str, Any]:
    """Effective weights of the deployed form: every use of a shared module counted."""
    return {"weights": count_weights(ctx.infer_model, ctx.example[:1])}


def _is_weight_layer(module: nn.Module) -> bool:
    """Conv/Linear, or a custom leaf layer owning a weight matrix or kernel (e.g. SCS layers)."""
    if isinstance(module, nn.Conv1d | nn.Conv2d | nn.Conv3d | nn.Linear):
        return True
    if isinstance(module, nn.MultiheadAttention) or next(module.children(), None) is not None:
        return False  # containers (a ViT owning its position embedding) are not layers
    return any(p.ndim >= 2 for p in module.parameters(recurse=False))


def _attention_outputs(module: nn.MultiheadAttention, args: tuple, kwargs: dict) -> int:
    """Elements output by MultiheadAttention's q/k/v and output projections."""
    names = ("query", "key", "value")
    q, k, v = (args[i] if len(args) > i else kwargs[n] for i, n in enumerate(names))
    rows = [t.numel() // t.shape[-1] for t in (q, k, v)]
    return module.embed_dim * (2 * rows[0] + rows[1] + rows[2])


@torch.no_grad()
def probe_activations(ctx: MeasureContext) -> dict[str, Any]:
    """Elements output by conv/linear layers per sample (Dollár et al. 2021)."""
    model, x = ctx.infer_model, ctx.example
    total = [0]

    def layer_hook(module: nn.Module, args: tuple, out: Any) -> None:
        total[0] += sum(t.numel() for t in _tensors(out))

    def attention_hook(
        module: nn.MultiheadAttention, args: tuple, kwargs: dict, out: Any
    ) -> None:
        total[0] += _attention_outputs(module, args, kwargs)

    handles = []
    for m in model.modules():
        if isinstance(m, nn.MultiheadAttention):
            handles.append(m.register_forward_hook(attention_hook, with_kwargs=True))
        elif _is_weight_layer(m):
            handles.append(m.register_forward_hook(layer_hook))
    _forward_then_unhook(model, x, handles)
    return {"activations": total[0] / len(x)}


def _tensors(out: Any) -> Iterator[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        yield out
    elif isinstance(out, tuple | list):
        for item in out:
            yield from _tensors(item)
