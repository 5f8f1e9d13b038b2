"""Architecture families: a contract over every registered family (on a sample of each layout
it declares), counts, errors, SCS maths."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from spaces import family_layouts
from spaces._build import FAMILIES, build_model, family_variant, list_families, register_family
from spaces._builtin import BUILTIN_FAMILIES
from spaces._errors import ConfigError, NpasError, UnknownNameError
from spaces._families.scs import MaxAbsPool2d, SharpCosSim2d
from spaces.ssn import shapeshift

# Too big for a training step in the contract test: counted below, and one batch-1 forward.
HEAVY = {"wrn-28-10"}
SMALL = (1, 8, 8)  # sklearn digits
#: A small sample of each layout: digits' images, two-channel signals of 24 steps, table rows.
SAMPLES = {"image": SMALL, "signal": (2, 24), "table": (12,)}
#: Each family (but the heavy one) with a sample of every layout it declares.
CASES = [
    pytest.param(family, SAMPLES[layout], id=f"{family}-{layout}")
    for family in list_families()
    if family not in HEAVY
    for layout in family_layouts(family) or ()
]


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def forward_backward(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    out = model(x)
    out.square().mean().backward()
    return out


def test_every_built_in_family_declares_its_layouts():
    # Built-ins only: a test run registers users' families of its own in the same process.
    assert all(family_layouts(f) for f in BUILTIN_FAMILIES)
    assert {f for f in BUILTIN_FAMILIES if "signal" in family_layouts(f)} == {
        "conv1d", "mlp", "resnet1d", "sepconv1d"}  # fmt: skip


@pytest.mark.parametrize(("family", "shape"), CASES)
def test_every_family_trains_on_its_samples_with_finite_values(family, shape):
    torch.manual_seed(0)
    model = build_model(family, shape, 10)
    out = forward_backward(model, torch.randn(2, *shape))
    assert out.shape == (2, 10)
    assert torch.isfinite(out).all()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert grads and all(g is not None and torch.isfinite(g).all() for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)


@pytest.mark.parametrize(("family", "shape"), CASES)
def test_every_family_is_deterministic_under_manual_seed(family, shape):
    x = torch.randn(2, *shape)
    outs = []
    for _ in range(2):
        torch.manual_seed(123)
        outs.append(build_model(family, shape, 3)(x))
    torch.manual_seed(124)
    other = build_model(family, shape, 3)(x)
    assert torch.equal(outs[0], outs[1])
    assert not torch.equal(outs[0], other)


@pytest.mark.parametrize(
    ("family", "shape"), [c for c in CASES if not hasattr(FAMILIES.get(c.values[0]), "hyper_base")]
)
def test_every_base_family_meets_a_shapeshifter_budget(family, shape):
    """Shapeshifted at a third of its weights, a family's default model stays within budget
    and trains (every store parameter gets a finite gradient)."""
    torch.manual_seed(0)
    model = build_model(family, shape, 10)
    budget = n_params(model) // 3
    net = shapeshift(model, budget)
    assert 0.9 * budget <= net.num_params <= budget
    out = forward_backward(net, torch.randn(4, *shape))
    assert out.shape == (4, 10) and torch.isfinite(out).all()
    assert all(s.grad is not None and torch.isfinite(s.grad).all() for s in net.stores)


@pytest.mark.parametrize("family", ["mlp", "convnet", "wrn", "resnet", "convmixer", "scs"])
def test_base_families_accept_mnist_and_cifar_shapes(family):
    for shape in [(1, 28, 28), (3, 32, 32)]:
        model = build_model(family, shape, 7).eval()
        with torch.no_grad():
            out = model(torch.randn(2, *shape))
        assert out.shape == (2, 7) and torch.isfinite(out).all()


def test_heavy_variant_runs_one_batch_one_forward():
    model = build_model("wrn-28-10", SMALL, 10).eval()
    with torch.no_grad():
        out = model(torch.randn(1, *SMALL))
    assert out.shape == (1, 10) and torch.isfinite(out).all()


CIFAR = (3, 32, 32)
#: What one more basic block in each of a CIFAR ResNet's three stages adds: two 3×3
#: convolutions and two BNs at widths 16, 32 and 64.
RESNET_BLOCKS = 2 * 9 * (16**2 + 32**2 + 64**2) + 2 * 2 * (16 + 32 + 64)

# (family, in_shape, our exact count, published figure, relative tolerance to it)
KNOWN_COUNTS = [
    # Zagoruyko & Komodakis 2016, Table 1/4 (CIFAR-10)
    ("wrn-16-4", CIFAR, 2_748_890, 2.7e6, 0.02),
    ("wrn-16-8", CIFAR, 10_961_370, 11.0e6, 0.01),
    ("wrn-28-10", CIFAR, 36_479_194, 36.5e6, 0.001),
    ("wrn-40-4", CIFAR, 8_949_210, 8.9e6, 0.01),
    # He et al. 2016, Table 6 (option A shortcuts): ResNet-(6n+2) has n blocks a stage
    *[
        (f"resnet-{6 * n + 2}", CIFAR, 269_722 + (n - 3) * RESNET_BLOCKS, paper, tol)
        for n, paper, tol in [
            (3, 0.27e6, 0.005),
            (5, 0.46e6, 0.01),
            (7, 0.66e6, 0.005),
            (9, 0.85e6, 0.005),
            (18, 1.7e6, 0.02),
        ]
    ],
    # Trockman & Kolter, CIFAR-10 script (kernel 5, patch 2)
    ("convmixer-256-8", CIFAR, 594_186, 0.59e6, 0.01),
    # Parameter-efficiency leaderboard (exact figures)
    ("scs-fashion-7659", (1, 28, 28), 7_659, 7_659, 0.0),
    ("scs-cifar-47643", CIFAR, 47_643, 47_643, 0.0),
]


@pytest.mark.parametrize(("family", "shape", "exact", "paper", "tol"), KNOWN_COUNTS)
def test_variant_parameter_counts_match_published_figures(family, shape, exact, paper, tol):
    count = n_params(build_model(family, shape, 10))
    assert count == exact
    assert abs(count - paper) <= tol * paper


def test_resnet_shortcut_options_differ_only_in_projection_parameters():
    a = build_model("resnet-20", (3, 32, 32), 10, shortcut="A")
    b = build_model("resnet-20", (3, 32, 32), 10, shortcut="B")
    # Option B adds two 1×1 conv + BN projections: 16·32 + 64 and 32·64 + 128.
    assert n_params(b) - n_params(a) == 16 * 32 + 2 * 32 + 32 * 64 + 2 * 64


def test_convnet_stops_pooling_at_one_pixel_on_tiny_inputs():
    model = build_model("convnet", SMALL, 10, depth=6, width=4, growth=1.0, pooling="avg")
    pools = [m for m in model.modules() if isinstance(m, nn.AvgPool2d)]
    assert len(pools) == 3  # 8 → 4 → 2 → 1, then no more
    assert model(torch.randn(2, *SMALL)).shape == (2, 10)


def test_convnet_separable_blocks_count_depthwise_plus_pointwise_weights():
    dense = build_model("convnet", (1, 28, 28), 10, depth=3, width=8, growth=1.5)
    net = build_model("convnet", (1, 28, 28), 10, depth=3, width=8, growth=1.5, separable=True)
    # first block 1→8 full 3×3; then 8→12 and 12→18 as 3×3 depthwise + 1×1 pointwise;
    # BN (2 per channel) and no conv bias; head 18→10 with bias
    expect = 9 * 8 + (9 * 8 + 8 * 12) + (9 * 12 + 12 * 18) + 2 * (8 + 12 + 18) + 18 * 10 + 10
    assert sum(p.numel() for p in net.parameters()) == expect == 830
    assert sum(p.numel() for p in dense.parameters()) == 3146
    convs = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [c.groups for c in convs] == [1, 8, 1, 12, 1]
    out = net(torch.randn(2, 1, 28, 28))
    out.sum().backward()
    assert out.shape == (2, 10) and all(p.grad is not None for p in net.parameters())


def test_mlp_flattens_any_shape_and_honours_hyper_parameters():
    model = build_model("mlp", (64,), 5, hidden=[16, 8], activation="gelu", dropout=0.1)
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(64, 16), (16, 8), (8, 5)]
    assert sum(isinstance(m, nn.GELU) for m in model.modules()) == 2
    assert build_model("mlp", (2, 3, 4), 5)(torch.randn(2, 2, 3, 4)).shape == (2, 5)


def test_unknown_family_lists_the_known_ones():
    with pytest.raises(UnknownNameError, match=r"unknown family 'vgg'.*resnet-20"):
        build_model("vgg", SMALL, 10)


def test_unknown_hyper_parameter_names_family_key_and_allowed_keys():
    with pytest.raises(ConfigError, match=r"'convnet'.*'widht'.*allowed: depth, width"):
        build_model("convnet", SMALL, 10, widht=8)
    # A variant's fixed arguments are no longer free.
    with pytest.raises(ConfigError, match=r"'wrn-16-4'.*'depth'.*allowed: dropout"):
        build_model("wrn-16-4", SMALL, 10, depth=28)


@pytest.mark.parametrize(
    ("family", "hyper", "needle"),
    [
        ("wrn", {"depth": 15}, "depth must be 6n \\+ 4"),
        ("resnet", {"shortcut": "C"}, "shortcut must be one of"),
        ("convnet", {"pooling": "median"}, "pooling must be one of"),
        ("convnet", {"kernel": 4}, "kernel must be an odd int"),
        ("mlp", {"hidden": 32}, "mlp.hidden: got 32; allowed: a list"),
        ("mlp", {"dropout": 1.0}, "mlp.dropout: got 1.0; allowed: a number in"),
        ("scs", {"widths": [8, 0]}, "scs.widths\\[1\\]: got 0; allowed: an int in \\[1,"),
        ("convnet", {"width": "16"}, "convnet.width: got '16'; allowed: an int in"),
        ("wrn-16-4", {"dropout": -0.1}, "wrn-16-4.dropout: got -0.1; allowed: a number in"),
    ],
)
def test_bad_hyper_values_raise_config_errors_naming_the_family(family, hyper, needle):
    with pytest.raises(ConfigError, match=f"family '{family}': {needle}"):
        build_model(family, SMALL, 10, **hyper)


def test_bad_shapes_and_class_counts_are_rejected():
    with pytest.raises(ConfigError, match="in_shape"):
        build_model("mlp", (0, 8), 10)
    with pytest.raises(ConfigError, match="num_classes"):
        build_model("mlp", SMALL, 0)
    with pytest.raises(ConfigError, match=r"\(channels, height, width\)"):
        build_model("convnet", (64,), 10)


@pytest.fixture
def scratch_registry(monkeypatch):
    """Lets a test register families without leaving them in the global registry."""
    monkeypatch.setattr(FAMILIES, "_entries", dict(FAMILIES._entries))


def test_a_user_family_is_one_decorator_and_duplicates_raise(scratch_registry):
    @register_family("tiny-linear")
    class TinyLinear(nn.Module):
        def __init__(self, in_shape, num_classes, *, scale: float = 1.0):
            super().__init__()
            self.scale = scale
            self.fc = nn.Linear(in_shape[0], num_classes)

        def forward(self, x):
            return self.fc(x) * self.scale

    register_family("tiny-linear-x2")(family_variant(TinyLinear, scale=2.0))
    assert list_families("tiny-*") == ["tiny-linear", "tiny-linear-x2"]
    assert build_model("tiny-linear", (4,), 3, scale=0.5).scale == 0.5
    assert build_model("tiny-linear-x2", (4,), 3).scale == 2.0
    with pytest.raises(ConfigError, match="allowed: \\(none\\)"):
        build_model("tiny-linear-x2", (4,), 3, scale=1.0)
    with pytest.raises(NpasError, match="already registered"):
        register_family("TINY-linear")(TinyLinear)


# -- Sharpened cosine similarity -------------------------------------------------------------


def naive_scs(layer: SharpCosSim2d, x: torch.Tensor) -> torch.Tensor:
    """The formula written out with unfold, one group at a time."""
    k, g = layer.kernel_size, layer.groups
    cols = F.unfold(x, k, padding=layer.padding, stride=layer.stride)  # (N, C·kh·kw, L)
    n, _, length = cols.shape
    cols = cols.view(n, g, -1, length)
    w = layer.weight.view(g, layer.out_channels // g, -1)
    dot = torch.einsum("ngkl,gok->ngol", cols, w).reshape(n, layer.out_channels, length)
    x_norm = cols.norm(dim=2).repeat_interleave(layer.out_channels // g, dim=1)
    w_norm = layer.weight.flatten(1).norm(dim=1).view(1, -1, 1)
    s = dot / ((x_norm + layer.floor) * w_norm)
    out = s.sign() * s.abs() ** layer.exponent.view(1, -1, 1)
    h = (x.shape[2] + 2 * layer.padding[0] - k[0]) // layer.stride[0] + 1
    return out.view(n, layer.out_channels, h, -1)


@pytest.mark.parametrize("groups", [1, 4])
def test_scs_layer_matches_the_formula(groups):
    torch.manual_seed(0)
    layer = SharpCosSim2d(4, 8, 3, padding=1, stride=2, groups=groups, eps=1e-12).double()
    with torch.no_grad():
        layer.p.uniform_(-3.0, 3.0)  # distinct exponents per channel
    x = torch.randn(2, 4, 7, 7, dtype=torch.float64)
    assert torch.allclose(layer(x), naive_scs(layer, x), atol=1e-5)


def test_scs_layer_is_a_conv2d_whose_forward_reads_self_weight():
    layer = SharpCosSim2d(3, 5, 3)
    assert isinstance(layer, nn.Conv2d) and layer.bias is None
    x = torch.randn(2, 3, 6, 6)
    before = layer(x)
    # Take the weight over as Shapeshifter Networks do: a plain tensor computed elsewhere.
    generated = torch.randn_like(layer.weight, requires_grad=True)
    del layer.weight
    layer.weight = generated
    after = layer(x)
    assert not torch.allclose(before, after)
    after.sum().backward()
    assert generated.grad is not None and torch.isfinite(generated.grad).all()


def test_scs_layer_is_finite_with_finite_gradients_at_zero():
    layer = SharpCosSim2d(2, 3, 3, padding=1)
    x = torch.zeros(1, 2, 5, 5, requires_grad=True)
    with torch.no_grad():
        layer.weight[0].zero_()  # a dead kernel as well
    out = layer(x)
    out.sum().backward()
    assert torch.isfinite(out).all() and out.abs().max() < 1e-3
    for t in (x.grad, layer.weight.grad, layer.p.grad, layer.q.grad):
        assert t is not None and torch.isfinite(t).all()


def test_scs_sharpening_parameters_start_where_documented_and_stay_finite_at_extremes():
    layer = SharpCosSim2d(1, 4, 3, p_init=2.0, q_init=0.1)
    assert torch.allclose(layer.exponent, torch.full((4,), 2.0))
    assert torch.allclose(layer.floor, torch.tensor([0.1]))
    x = torch.randn(2, 1, 5, 5)
    for p, q in [(-100.0, 100.0), (20.0, -3.0)]:  # exponent → 0 / floor → 0; large both
        with torch.no_grad():
            layer.p.fill_(p)
            layer.q.fill_(q)
        assert (layer.exponent > 0).all() and (layer.floor >= 0).all()
        out = layer(x)
        out.sum().backward()
        assert torch.isfinite(out).all() and torch.isfinite(layer.p.grad).all()


def test_scs_gradcheck_in_double():
    torch.manual_seed(1)
    layer = SharpCosSim2d(2, 2, 3, padding=1).double()
    x = torch.randn(1, 2, 4, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(layer, (x,))


def test_max_abs_pool_keeps_the_sign_of_the_largest_magnitude():
    x = torch.tensor([[[[1.0, -3.0], [2.0, 0.5]], [[-1.0, 0.2], [0.3, 0.1]]]])
    assert MaxAbsPool2d(2)(x).flatten().tolist() == [-3.0, -1.0]


def test_scs_depthwise_form_uses_far_fewer_parameters():
    dense = build_model("scs", (1, 28, 28), 10, widths=[24, 24, 24], kernel=3)
    paired = build_model("scs", (1, 28, 28), 10, widths=[24, 24, 24], kernel=3, depthwise=True)
    assert n_params(paired) < n_params(dense) / 3
    groups = [m.groups for m in paired.modules() if isinstance(m, SharpCosSim2d)]
    assert groups == [1, 24, 1, 24, 1]


@pytest.mark.parametrize(
    "family", ["mlp", "convnet", "convmixer", "sepnet", "scs", "wrn", "resnet"]
)
def test_a_direct_call_refuses_what_a_config_refuses(family):
    """The signature declares each range once: building the class directly checks the same."""
    import inspect

    from spaces._hyper import check_hyper

    cls = FAMILIES.get(family)
    shape = (3, 16, 16) if family != "mlp" else SMALL
    params = inspect.signature(cls).parameters.values()
    ints = [
        p.name
        for p in params
        if p.kind is p.KEYWORD_ONLY and p.annotation in ("int", "int | None")
    ]
    assert ints, family
    for key in ints:
        with pytest.raises(ConfigError, match=f"{family}.{key}: got 0; allowed: an int in"):
            check_hyper(family, cls, key, 0)
        with pytest.raises(ConfigError, match=f"^{key}: got 0; allowed: an int in"):
            cls(shape, 10, **{key: 0})
