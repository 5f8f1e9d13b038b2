"""Shapeshifter Networks at work: a 10 % ConvNet learns digits, a 1 % WRN-28-10 builds and runs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

import spaces
from spaces.ssn import shapeshift

pytestmark = pytest.mark.slow  # real training to an accuracy



def digits() -> tuple[torch.Tensor, ...]:
    """scikit-learn's 8x8 digits, scaled to [0, 1], with a fixed stratified 75/25 split."""
    x, y = load_digits(return_X_y=True)
    xtr, xte, ytr, yte = train_test_split(x / 16.0, y, test_size=0.25, stratify=y, random_state=0)
    as_img = lambda a: torch.tensor(a, dtype=torch.float32).view(-1, 1, 8, 8)  # noqa: E731
    return as_img(xtr), torch.tensor(ytr), as_img(xte), torch.tensor(yte)


def convnet() -> nn.Sequential:
    """A plain ConvNet of about 29k parameters."""
    torch.manual_seed(0)

    def block(i: int, o: int) -> list[nn.Module]:
        return [nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]

    return nn.Sequential(
        *block(1, 32), *block(32, 32), nn.MaxPool2d(2), *block(32, 64),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    )


def fit(net: nn.Module, x: torch.Tensor, y: torch.Tensor, *, epochs: int) -> None:
    """AdamW with a one-cycle schedule; deliberately minimal."""
    batch = 64
    steps = epochs * -(-len(x) // batch)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, 1e-2, total_steps=steps)
    rng = torch.Generator().manual_seed(0)
    net.train()
    for _ in range(epochs):
        order = torch.randperm(len(x), generator=rng)
        for i in range(0, len(x), batch):
            idx = order[i : i + batch]
            loss = F.cross_entropy(net(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()


def accuracy(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    net.eval()
    with torch.no_grad():
        return (net(x).argmax(1) == y).float().mean().item()


@pytest.mark.parametrize(("generator", "upsampler"), [("wavg", "mask"), ("emb", "repeat")])
def test_ssn_convnet_at_10_percent_learns_digits(generator: str, upsampler: str) -> None:
    torch.manual_seed(0)
    xtr, ytr, xte, yte = digits()
    model = convnet()
    plain = sum(p.numel() for p in model.parameters())
    net = shapeshift(model, plain // 10, generator=generator, upsampler=upsampler)
    assert 0.9 * plain // 10 <= net.num_params <= plain // 10
    assert any(info.upsampled for info in net.layers)
    fit(net, xtr, ytr, epochs=8)
    acc = accuracy(net, xte, yte)
    assert acc >= 0.9, acc
    assert accuracy(net.materialize(), xte, yte) == acc


def wrn_28_10() -> nn.Module:
    """WRN-28-10 for CIFAR (36.5M parameters), from the architecture families."""
    return spaces.build_model("wrn-28-10", (3, 32, 32), 10)


def test_wrn_28_10_at_one_percent_builds_and_runs() -> None:
    torch.manual_seed(0)
    model = wrn_28_10()
    plain = sum(p.numel() for p in model.parameters())
    assert plain > 36_000_000
    budget = plain // 100
    net = shapeshift(model, budget)
    del model
    assert 0.9 * budget <= net.num_params <= budget
    assert sum(info.upsampled for info in net.layers) >= 10
    x = torch.randn(2, 3, 8, 8)
    out = net(x)
    assert out.shape == (2, 10) and torch.isfinite(out).all()
    out.sum().backward()
    assert all(torch.isfinite(s.grad).all() for s in net.stores)
