"""Shapeshifter networks train under bf16 autocast, the default of a training step on CUDA.

Found on a real GPU (H100, 2026-11-23): every Shapeshifted trial failed in its first backward
("expected scalar type Float but found BFloat16") because the fused weight generation ran in
bf16 while the store's gradient is float32. CPU autocast reproduces it without a GPU.
"""

from __future__ import annotations

import pytest
import torch

from spaces import build_model
from spaces.ssn import shapeshift

FAMILIES = [
    ("convnet", {"depth": 3, "width": 8}, (1, 28, 28)),
    ("scs", {"widths": (6, 8, 8)}, (1, 28, 28)),
    ("mlp", {"depth": 2, "width": 32}, (1, 8, 8)),
]


@pytest.mark.parametrize("generator", ["wavg", "emb"])
@pytest.mark.parametrize("upsampler", ["mask", "inter", "repeat"])
@pytest.mark.parametrize(("family", "hyper", "shape"), FAMILIES)
def test_shapeshifted_step_under_bf16_autocast(family, hyper, shape, generator, upsampler):
    torch.manual_seed(0)
    net = shapeshift(build_model(family, shape, 10, **hyper), 1200,
                     generator=generator, upsampler=upsampler)  # fmt: skip
    x = torch.randn(8, *shape)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = net(x).float().logsumexp(1).mean()
    loss.backward()
    for name, param in net.named_parameters():
        if param.requires_grad:
            assert param.grad is not None, name
            assert param.grad.dtype == param.dtype == torch.float32, name
            assert torch.isfinite(param.grad).all(), name
