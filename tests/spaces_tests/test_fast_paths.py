"""The families' fast CPU paths compute what the plain formulas compute, forward and backward.

Each reference below is the code the fast path replaced (or the PyTorch module it stands in
for); values and gradients are compared in float32 and float64, in both memory formats.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from spaces import build_model
from spaces._families._box import box_sum
from spaces._families._norm import BatchNorm2d
from spaces._families.scs import MaxAbsPool2d, SharpCosSim2d

LAYOUTS = [torch.contiguous_format, torch.channels_last]


def grads(out: torch.Tensor, inputs: list[torch.Tensor], seed: int = 0) -> list[torch.Tensor]:
    """Gradients of ``(out * r).sum()`` for a fixed random ``r`` (not the inputs' stream)."""
    gen = torch.Generator().manual_seed(1000 + seed)
    r = torch.randn(out.shape, generator=gen, dtype=out.dtype)
    return list(torch.autograd.grad(out, inputs, r, retain_graph=True))


def assert_close(actual: list[torch.Tensor], expected: list[torch.Tensor], rtol: float) -> None:
    for a, e in zip(actual, expected, strict=True):
        scale = e.abs().max().clamp_min(1e-30)
        assert ((a - e).abs().max() / scale).item() <= rtol, (a - e).abs().max()


# -- SCS layer ---------------------------------------------------------------------------------


def reference_scs(layer: SharpCosSim2d, x: torch.Tensor) -> torch.Tensor:
    """The layer as written before its fast path: autograd through every elementwise op."""
    w = layer.weight
    w_norm = torch.sqrt(w.square().sum(dim=(1, 2, 3)) + layer.eps)
    dot = layer._conv_forward(x, w / w_norm.view(-1, 1, 1, 1), None)
    ones = torch.ones(layer.groups, layer.in_channels // layer.groups, *layer.kernel_size)
    sq = F.conv2d(
        x.square(), ones.to(x.dtype), None, layer.stride, layer.padding, layer.dilation,
        layer.groups,
    )  # fmt: skip
    x_norm = torch.sqrt(sq + layer.eps) + layer.floor
    s = dot / x_norm.repeat_interleave(layer.out_channels // layer.groups, dim=1)
    return torch.sign(s) * (s.abs() + layer.eps) ** layer.exponent.view(1, -1, 1, 1)


SCS_CASES = [  # in, out, kernel, options
    (1, 6, 5, {}),
    (6, 8, 5, {"padding": 1}),
    (5, 5, 5, {"padding": 1, "groups": 5}),
    (4, 8, 3, {"padding": 1, "groups": 2}),
    (4, 6, 3, {"padding": (1, 0), "stride": 2}),
    (3, 4, 3, {"padding": 2, "dilation": 2}),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("cin", "cout", "kernel", "options"), SCS_CASES)
def test_scs_layer_matches_the_reference(cin, cout, kernel, options, layout, dtype):
    torch.manual_seed(0)
    layer = SharpCosSim2d(cin, cout, kernel, **options).to(dtype)
    with torch.no_grad():
        layer.p.uniform_(-3.0, 3.0)
    x = torch.randn(4, cin, 11, 11, dtype=dtype)
    x[:, :, :4] = 0.0  # empty patches: s = 0 exactly, where sign(s) has no gradient
    x = x.to(memory_format=layout).requires_grad_()
    params = [x, layer.weight, layer.p, layer.q]
    fast, ref = layer(x), reference_scs(layer, x)
    rtol = 1e-5 if dtype == torch.float32 else 1e-10
    assert_close([fast], [ref], rtol)
    assert_close(grads(fast, params), grads(ref, params), rtol * 10)


def test_scs_layer_gradcheck_through_the_box_sum_and_sharpening():
    torch.manual_seed(2)
    layer = SharpCosSim2d(3, 4, 3, padding=1).double()
    with torch.no_grad():
        layer.p.uniform_(-2.0, 2.0)
    x = torch.randn(2, 3, 5, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(layer, (x,))


@pytest.mark.parametrize(
    ("kernel", "padding"), [((5, 5), (0, 0)), ((3, 5), (1, 2)), ((1, 1), (0, 0))]
)
def test_box_sum_is_a_convolution_with_ones(kernel, padding):
    x = torch.randn(3, 4, 9, 8, dtype=torch.float64, requires_grad=True)
    ones = torch.ones(4, 1, *kernel, dtype=torch.float64)
    ref = F.conv2d(x, ones, padding=padding, groups=4)
    fast = box_sum(x, kernel, padding)
    assert_close([fast], [ref], 1e-12)
    assert_close(grads(fast, [x]), grads(ref, [x]), 1e-12)
    assert torch.autograd.gradcheck(lambda t: box_sum(t, kernel, padding), (x[:1, :1, :5, :5],))


# -- Max-abs pooling ----------------------------------------------------------------------------


def reference_max_abs(x: torch.Tensor, ceil_mode: bool) -> torch.Tensor:
    pos = F.max_pool2d(x, 2, ceil_mode=ceil_mode)
    neg = F.max_pool2d(-x, 2, ceil_mode=ceil_mode)
    return torch.where(pos >= neg, pos, -neg)


def tied(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """Values with many ties within windows: ±v pairs, repeats and zeros."""
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed)).round(decimals=1)
    x[:, :, 1::2] = x[:, :, 0 : x.shape[2] - 1 : 2]  # row pairs equal
    x[:, 0] = x[:, 0].abs()
    x[:, 1, :, 1::2] = -x[:, 1, :, 0 : x.shape[3] - 1 : 2]  # v next to -v
    x[:, 2] = 0.0
    return x


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("shape", "ceil_mode"), [((4, 5, 12, 10), True), ((4, 5, 7, 9), False)])
def test_max_abs_pool_matches_two_max_pools_ties_included(shape, ceil_mode, layout):
    x = tied(shape, 0).to(memory_format=layout).requires_grad_()
    pool = MaxAbsPool2d(2, ceil_mode=ceil_mode)
    fast, ref = pool(x), reference_max_abs(x, ceil_mode)
    assert torch.equal(fast, ref)
    assert fast.is_contiguous(memory_format=layout)
    for seed in range(3):  # exactly the same element of each window gets the gradient
        assert torch.equal(grads(fast, [x], seed)[0], grads(ref, [x], seed)[0])


def test_max_abs_pool_with_odd_sizes_in_ceil_mode_takes_the_reference_path():
    x = tied((2, 3, 7, 7), 1).requires_grad_()
    fast = MaxAbsPool2d(2)(x)
    assert fast.shape[-2:] == (4, 4)
    assert torch.equal(fast, reference_max_abs(x, True))


# -- Batch norm ---------------------------------------------------------------------------------


BN_CASES = [  # channels, options
    (3, {}),
    (5, {"momentum": None}),
    (4, {"affine": False}),
    (6, {"track_running_stats": False}),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("channels", "options"), BN_CASES)
def test_batch_norm_matches_torch_in_training_and_eval(channels, options, dtype):
    torch.manual_seed(0)
    ref = nn.BatchNorm2d(channels, **options).to(dtype)
    if ref.affine:
        with torch.no_grad():
            ref.weight.uniform_(0.5, 1.5)
            ref.bias.uniform_(-1.0, 1.0)
    fast = BatchNorm2d(channels, **options).to(dtype)
    fast.load_state_dict(ref.state_dict())
    rtol = 1e-5 if dtype == torch.float32 else 1e-10
    for step in range(3):  # running statistics accumulate alike
        x = torch.randn(32, channels, 24, 24, dtype=dtype) * 3 + step  # 18,432 pixels
        x = x.to(memory_format=torch.channels_last).requires_grad_()
        params = [x, *ref.parameters()]
        out_ref, out_fast = ref(x), fast(x)
        assert out_fast.is_contiguous(memory_format=torch.channels_last)
        assert_close([out_fast], [out_ref], rtol)
        expected = grads(out_ref, params, step)
        assert_close(grads(out_fast, [x, *fast.parameters()], step), expected, rtol * 10)
        for name, buffer in ref.named_buffers():
            assert_close([fast.get_buffer(name).double()], [buffer.double()], rtol)
    ref.eval()
    fast.eval()
    x = torch.randn(32, channels, 24, 24, dtype=dtype).to(memory_format=torch.channels_last)
    assert_close([fast(x)], [ref(x)], rtol)


def test_batch_norm_leaves_other_inputs_to_torch():
    bn = BatchNorm2d(3)
    x = torch.randn(2, 3, 4, 4)  # NCHW, and too few pixels for the fast path either way
    ref = nn.BatchNorm2d(3)
    assert torch.equal(bn(x), ref(x))
    x = x.to(memory_format=torch.channels_last)
    assert torch.equal(bn(x), ref(x))


# -- ConvNet: ReLU after max pooling -------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_convnet_pooling_before_relu_computes_the_textbook_block(layout):
    torch.manual_seed(0)
    model = build_model("convnet", (1, 28, 28), 10, depth=3, width=3, growth=1.5)
    ref = copy.deepcopy(model)
    layers: list[nn.Module] = []
    for layer in ref.features:  # back to conv → BN → ReLU → pool, with torch's own BN
        if isinstance(layer, nn.BatchNorm2d):
            plain = nn.BatchNorm2d(layer.num_features)
            plain.load_state_dict(layer.state_dict())
            layer = plain
        if isinstance(layer, nn.ReLU) and isinstance(layers[-1], nn.MaxPool2d):
            layers.insert(-1, layer)
        else:
            layers.append(layer)
    ref.features = nn.Sequential(*layers)
    assert [type(m) for m in ref.features][1:4] == [nn.BatchNorm2d, nn.ReLU, nn.MaxPool2d]
    ties = torch.rand(64, 1, 28, 28).round(decimals=1).to(memory_format=layout)
    assert_close([model(ties)], [ref(ties)], 1e-5)
    # Gradients without exact ties: at a tie, max pooling may route the gradient to another
    # (equally valid) element depending on the kernel torch picks (memory layout, threads).
    x = torch.rand(64, 1, 28, 28).to(memory_format=layout)
    out, expected = model(x), ref(x)
    assert_close([out], [expected], 1e-5)
    assert_close(
        grads(out, list(model.parameters())), grads(expected, list(ref.parameters())), 1e-4
    )


# -- Tracing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("family", "hyper"),
    [("scs", {"widths": (4, 4)}), ("convnet", {"depth": 2, "width": 3, "growth": 1.5})],
)
def test_channels_last_fast_paths_export_with_a_free_batch_size(family, hyper):
    """Under ``torch.export`` the row layout is off: its ``k`` would fix the traced batch size."""
    torch.manual_seed(0)
    model = build_model(family, (1, 28, 28), 10, **hyper).eval()
    example = torch.randn(32, 1, 28, 28).to(memory_format=torch.channels_last)
    batch = torch.export.Dim("batch", min=1)
    program = torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
    for n in (1, 5, 32):
        x = torch.randn(n, 1, 28, 28).to(memory_format=torch.channels_last)
        assert_close([program.module()(x)], [model(x)], 1e-5)
