"""Properties of Shapeshifter Networks that must hold for every architecture and budget."""

from __future__ import annotations

import itertools
import re

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from spaces import BudgetError
from spaces.ssn import GENERATORS, UPSAMPLERS, shapeshift
from spaces.ssn._combine import Combine, windows
from spaces.ssn._plan import window_store


@st.composite
def architectures(draw: st.DrawFn) -> tuple[nn.Module, tuple[int, ...]]:
    """Random small Linear stacks or Conv1d/Conv2d stacks (strides, groups, dilation)."""
    torch.manual_seed(draw(st.integers(0, 1000)))
    kind = draw(st.sampled_from(["mlp", "conv1d", "conv2d"]))
    depth = draw(st.integers(1, 3))
    if kind == "mlp":
        dims = [draw(st.integers(1, 16)) for _ in range(depth + 1)]
        layers: list[nn.Module] = []
        for a, b in itertools.pairwise(dims):
            layers += [nn.Linear(a, b, bias=draw(st.booleans())), nn.Tanh()]
        return nn.Sequential(*layers[:-1]), (dims[0],)
    conv = nn.Conv1d if kind == "conv1d" else nn.Conv2d
    channels = draw(st.integers(1, 3))
    first = channels
    layers = []
    for i in range(depth):
        groups = draw(st.sampled_from([1, 2])) if channels % 2 == 0 else 1
        out = groups * draw(st.integers(1, 4))
        k, dilation = draw(st.integers(1, 3)), draw(st.integers(1, 2))
        layers += [
            conv(channels, out, k, stride=2 if i == 0 and draw(st.booleans()) else 1,
                 padding=dilation * (k - 1) // 2, dilation=dilation, groups=groups,
                 bias=draw(st.booleans())),
            nn.Tanh(),
        ]
        channels = out
    pool = nn.AdaptiveAvgPool1d(1) if kind == "conv1d" else nn.AdaptiveAvgPool2d(1)
    layers += [pool, nn.Flatten(), nn.Linear(channels, draw(st.integers(1, 4)))]
    return nn.Sequential(*layers), (first, 8) if kind == "conv1d" else (first, 8, 8)


def _count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    arch=architectures(),
    fraction=st.floats(0.02, 4.0),
    generator=st.sampled_from(GENERATORS.names()),
    upsampler=st.sampled_from(UPSAMPLERS.names()),
    stores=st.integers(1, 2),
)
def test_budget_gradients_and_materialize_hold_for_random_models(
    arch: tuple[nn.Module, tuple[int, ...]],
    fraction: float,
    generator: str,
    upsampler: str,
    stores: int,
) -> None:
    model, in_shape = arch
    layers = sum(isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d)) for m in model.modules())
    stores = min(stores, layers)
    budget = max(1, int(_count(model) * fraction))
    kwargs = {"generator": generator, "upsampler": upsampler, "stores": stores,
              "mapping": "random" if stores > 1 else "single"}
    try:
        net = shapeshift(model, budget, **kwargs)
    except BudgetError as err:
        bound = re.search(r"(minimum|maximum) budget is (\d+)", str(err))
        assert bound is not None, str(err)
        limit = int(bound.group(2))
        assert limit > budget if bound.group(1) == "minimum" else limit < budget
        net, budget = shapeshift(model, limit, **kwargs), limit
    assert 0.9 * budget <= net.num_params <= budget
    assert net.num_params == sum(p.numel() for p in net.parameters())
    x = torch.randn(3, *in_shape)
    out = net(x)
    (out * torch.randn_like(out)).sum().backward()
    for store in net.stores:
        assert store.grad is not None and int((store.grad == 0).sum()) == 0
    plain = net.materialize().eval()
    net.eval()
    assert _count(plain) == _count(model)
    with torch.no_grad():
        assert (net(x) - plain(x)).abs().max().item() < 1e-5


@settings(max_examples=200, deadline=None)
@given(
    numels=st.lists(st.integers(1, 300), min_size=1, max_size=6),
    size=st.integers(1, 2000),
    limit=st.integers(1, 6),
)
def test_template_windows_cover_every_store_parameter(
    numels: list[int], size: int, limit: int
) -> None:
    plan = window_store(size, range(len(numels)), numels, limit=limit, raisable=True)
    assert plan is not None
    paper = [max(1, min(size // n, limit)) for n in numels]
    paper_cover = sum(c * n for c, n in zip(paper, numels, strict=True))
    capacity = max(numels) <= size and paper_cover < size
    covered = set()
    for c, n, up, start, rule in zip(
        plan.templates, numels, plan.upsampled, plan.starts, paper, strict=True
    ):
        if up:
            assert n > size and c == 1
            covered = set(range(size))
        elif capacity:  # more templates, the last one may wrap around the store's end
            assert c == min(-(-size // n), plan.template_limit) and plan.template_limit >= limit
        else:
            assert c == rule and plan.template_limit == limit
        covered.update(i % size for i in range(start, start + c * n))
    assert covered == set(range(size))


@settings(max_examples=40, deadline=None)
@given(
    size=st.integers(1, 40),
    blocks=st.lists(st.tuples(st.integers(1, 5), st.integers(1, 40)), min_size=1, max_size=4),
    data=st.data(),
)
def test_fused_combination_matches_slices_and_its_gradient_is_exact(
    size: int, blocks: list[tuple[int, int]], data: st.DataObject
) -> None:
    blocks = [(c, min(n, size)) for c, n in blocks]
    starts = [data.draw(st.integers(0, 3 * size)) for _ in blocks]
    layout = tuple((n, windows(s, c, n, size)) for (c, n), s in zip(blocks, starts, strict=True))
    gen = torch.Generator().manual_seed(0)
    theta = torch.randn(size, dtype=torch.float64, generator=gen, requires_grad=True)
    coefs = [torch.randn(c, dtype=torch.float64, generator=gen, requires_grad=True)
             for c, _ in blocks]
    outs = Combine.apply(theta, layout, *coefs)
    ring = theta.repeat(-(-(4 * size + 5 * 40) // size))
    for (c, n), s, coef, out in zip(blocks, starts, coefs, outs, strict=True):
        assert torch.allclose(out, coef @ ring[s : s + c * n].view(c, n))
    assert torch.autograd.gradcheck(lambda t, *cs: Combine.apply(t, layout, *cs), (theta, *coefs))
