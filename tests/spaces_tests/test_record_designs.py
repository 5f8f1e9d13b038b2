"""The public tiny-MNIST record designs, counted by hand layer by layer, and the levers they
use (LeakyReLU's slope, dropout placement, a flatten head), each refused where the signature
says and sampled from a search space."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from search.config import load_config
from spaces import ConfigError, build_model, hyper_keys, list_families
from spaces._build import FAMILIES
from spaces._families.minimal import SampleNorm

MNIST = (1, 28, 28)
DIGITS = (1, 8, 8)


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def separable(c_in: int, c_out: int) -> int:
    """A keras SeparableConv2D 3×3, depth_multiplier 1: depthwise without bias, pointwise with."""
    return 3 * 3 * c_in + (c_in * c_out + c_out)


def dropouts(model: nn.Module) -> list[float]:
    return [m.p for m in model.modules() if isinstance(m, nn.Dropout)]


def test_record_697_counts_697_by_hand() -> None:
    net = build_model("record-697", MNIST, 10)
    stem = 3 * 3 * 1 * 6 + 6  # Conv2D 1→6 3×3 with bias: 60
    blocks = [separable(6, 5), separable(5, 9), separable(9, 10), separable(10, 8)]
    assert blocks == [54 + 30 + 5, 45 + 45 + 9, 81 + 90 + 10, 90 + 80 + 8] == [89, 99, 181, 178]
    head = 8 * 10 + 10  # Dense 8→10 after GAP
    assert n_params(net) == stem + sum(blocks) + head == 697
    # 28 "same" → 28 → pool 14 → four unpadded 3×3: 12, 10, 8, 6
    assert net.features(torch.randn(1, *MNIST)).shape == (1, 8, 6, 6)
    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d) and m.kernel_size == (3, 3)]
    assert [c.padding for c in convs] == [(1, 1)] + [(0, 0)] * 4
    assert dropouts(net) == [0.05] * 3  # after the first three blocks only
    assert {m.negative_slope for m in net.modules() if isinstance(m, nn.LeakyReLU)} == {0.2}
    assert sum(isinstance(m, nn.LeakyReLU) for m in net.modules()) == 5
    assert net(torch.randn(2, *MNIST)).shape == (2, 10)


def test_record_997_counts_997_by_hand() -> None:
    net = build_model("record-997", MNIST, 10)
    stem = 3 * 3 * 1 * 7 + 7  # Conv2D 1→7 3×3 "valid" with bias: 70
    blocks = [separable(7, 10), separable(10, 10), separable(10, 11), separable(11, 12)]
    assert blocks == [63 + 70 + 10, 90 + 100 + 10, 90 + 110 + 11, 99 + 132 + 12]
    head = 12 * 10 + 10
    assert n_params(net) == stem + sum(blocks) + head == 70 + 143 + 200 + 211 + 243 + 130 == 997
    # 28 → 26 → pool 13 → 11, 9, 7, 5
    assert net.features(torch.randn(1, *MNIST)).shape == (1, 12, 5, 5)
    assert dropouts(net) == [0.1] * 5  # after the stem's pool and after every block
    stem_part = [type(m) for m in net.features[:4]]
    assert stem_part == [nn.Conv2d, nn.LeakyReLU, nn.MaxPool2d, nn.Dropout]
    assert isinstance(net.drop, nn.Identity)  # none between the GAP and the head
    assert net(torch.randn(2, *MNIST)).shape == (2, 10)


def test_record_1936_counts_1936_by_hand() -> None:
    net = build_model("record-1936", MNIST, 10)
    norm = 2  # InstanceNormalization(axis=None): one scale and one shift per tensor
    stem = 3 * 3 * 1 * 8 + 8  # Conv2D 1→8 3×3 "valid": 80
    first = separable(8, 26)  # 72 + 208 + 26 = 306
    tied = separable(26, 26)  # 234 + 676 + 26 = 936, once for its three applications
    hidden = 26 * 16 + 16  # Dense 26→16: 432
    head = 16 * 10 + 10  # Dense 16→10: 170
    total = stem + norm + first + norm + tied + 3 * norm + hidden + norm + head
    assert (first, tied) == (306, 936)
    assert n_params(net) == total == 80 + 2 + 306 + 2 + 936 + 6 + 432 + 2 + 170 == 1936
    assert sum(isinstance(m, SampleNorm) for m in net.modules()) == 6
    assert dropouts(net) == [0.1] * 6  # stem (after the pool), first, 3 applications, hidden
    # 28 → 26 → pool 13 → 11 (unpadded), then 11 three times (padded)
    assert net.features(torch.randn(1, *MNIST)).shape == (1, 26, 11, 11)
    assert net(torch.randn(2, *MNIST)).shape == (2, 10)


def test_the_tied_conv_is_one_set_of_weights_applied_three_times() -> None:
    net = build_model("minimal", MNIST, 10)
    once = build_model("minimal", MNIST, 10, reuse=1)
    assert n_params(net) - n_params(once) == 2 * 2  # two more norms, no more conv weights
    calls = []
    tied = net.features[-1].conv
    tied.register_forward_hook(lambda *_: calls.append(1))
    net(torch.randn(2, *MNIST))
    assert len(calls) == 3


def test_sample_norm_is_keras_contribs_instance_norm_over_the_whole_tensor() -> None:
    torch.manual_seed(0)
    norm = SampleNorm()
    with torch.no_grad():
        norm.weight.fill_(1.5)
        norm.bias.fill_(-0.25)
    x = torch.randn(3, 4, 5, 5, dtype=torch.float64) * 2 + 1
    flat = x.numpy().reshape(3, -1)
    mean, std = flat.mean(1), flat.std(1)  # numpy's std: the population one, as K.std
    expect = (flat - mean[:, None]) / (std[:, None] + 1e-3) * 1.5 - 0.25
    got = norm(x).detach().numpy().reshape(3, -1)
    np.testing.assert_allclose(got, expect, rtol=1e-12)
    flat_input = torch.zeros(2, 16, requires_grad=True)  # a hidden layer's ReLUs all off
    norm(flat_input).sum().backward()
    assert flat_input.grad is not None and torch.isfinite(flat_input.grad).all()


@pytest.mark.parametrize("name", ["record-697", "record-997", "record-1936"])
def test_a_records_layers_are_fixed(name: str) -> None:
    assert name in list_families("record-*")
    assert hyper_keys(FAMILIES.get(name)) == ()
    with pytest.raises(ConfigError, match=f"'{name}' has no hyper-parameter 'dropout'"):
        build_model(name, MNIST, 10, dropout=0.0)
    assert build_model(name, DIGITS, 10)(torch.randn(2, *DIGITS)).shape == (2, 10)


# -- the levers ----------------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["sepnet", "convnet", "minimal"])
def test_negative_slope_sets_leaky_relus_slope_and_prelus_start(family: str) -> None:
    leaky = build_model(family, DIGITS, 10, activation="leaky_relu", negative_slope=0.2)
    slopes = {m.negative_slope for m in leaky.modules() if isinstance(m, nn.LeakyReLU)}
    assert slopes == {0.2}
    prelu = build_model(family, DIGITS, 10, activation="prelu", negative_slope=0.1)
    starts = [m.weight.item() for m in prelu.modules() if isinstance(m, nn.PReLU)]
    assert starts and starts == pytest.approx([0.1] * len(starts))
    plain = build_model(family, DIGITS, 10, activation="leaky_relu")
    assert {m.negative_slope for m in plain.modules() if isinstance(m, nn.LeakyReLU)} == {0.01}
    with pytest.raises(ConfigError, match="activation 'relu' has none"):
        build_model(family, DIGITS, 10, activation="relu", negative_slope=0.2)
    with pytest.raises(ConfigError, match=f"{family}.negative_slope: got 1.5"):
        build_model(family, DIGITS, 10, negative_slope=1.5)


def test_dropout_at_places_the_dropout_as_documented() -> None:
    hyper = {"stem": 4, "stages": 1, "blocks": 3, "width": 4, "dropout": 0.1, "padding": "valid"}
    placed = {at: build_model("sepnet", MNIST, 10, dropout_at=at, **hyper)
              for at in ("head", "every", "layers", "between")}  # fmt: skip
    assert {at: len(dropouts(net)) for at, net in placed.items()} == {
        "head": 1,  # before the head
        "every": 1 + 3 + 1,  # the stem's activation, each block's, before the head
        "layers": 1 + 3,  # the stem's output (after its pool), each block's; not the head
        "between": 2,  # after the first and second of three blocks
    }
    stem = [type(m) for m in placed["layers"].features[:4]]
    assert stem == [nn.Conv2d, nn.LeakyReLU, nn.MaxPool2d, nn.Dropout]
    assert all(isinstance(placed[at].drop, nn.Identity) for at in ("layers", "between"))
    # dropout_every is dropout_at="every": the same net, the same random draws
    old = build_model("sepnet", MNIST, 10, dropout_every=True, **hyper)
    assert [type(m) for m in old.modules()] == [type(m) for m in placed["every"].modules()]
    with pytest.raises(ConfigError, match="dropout_every is dropout_at='every'"):
        build_model("sepnet", MNIST, 10, dropout_every=True, dropout_at="layers")
    with pytest.raises(ConfigError, match="dropout_at must be one of"):
        build_model("sepnet", MNIST, 10, dropout_at="stem")


def test_a_flatten_head_reads_the_last_maps_whole() -> None:
    sep = build_model("sepnet", MNIST, 10, stem=4, stages=1, width=6, head="flatten")
    gap = build_model("sepnet", MNIST, 10, stem=4, stages=1, width=6)
    # 28 → pool 14, "same" blocks keep it: 6·14·14 inputs per class instead of 6
    assert n_params(sep) - n_params(gap) == (6 * 14 * 14 - 6) * 10
    conv = build_model("convnet", MNIST, 10, depth=3, width=4, growth=1.0, head="flatten")
    # three max pools: 28 → 14 → 7 → 3; BN without conv bias
    convs = 9 * 4 + 2 * (9 * 4 * 4)
    assert n_params(conv) == convs + 3 * 2 * 4 + (4 * 3 * 3 * 10 + 10)
    for net in (sep, conv):
        assert net(torch.randn(2, *MNIST)).shape == (2, 10)
    with pytest.raises(ConfigError, match="head must be one of"):
        build_model("convnet", MNIST, 10, head="max")


def test_widths_and_stem_padding_give_the_records_layout() -> None:
    net = build_model("sepnet", MNIST, 10, stem=4, widths=[5, 6, 7], padding="valid",
                      stem_padding="same")  # fmt: skip
    # 28 "same" → pool 14 → 12, 10, 8 in one stage (no pool between the blocks)
    assert net.features(torch.randn(1, *MNIST)).shape == (1, 7, 8, 8)
    assert sum(isinstance(m, nn.MaxPool2d) for m in net.modules()) == 1
    with pytest.raises(ConfigError, match=r"widths replaces.*stages=3"):
        build_model("sepnet", MNIST, 10, widths=[5, 6], stages=3)
    with pytest.raises(ConfigError, match="widths must be a non-empty list"):
        build_model("sepnet", MNIST, 10, widths=[])
    with pytest.raises(ConfigError, match="stem_padding must be one of"):
        build_model("sepnet", MNIST, 10, stem_padding="full")


@settings(max_examples=25, deadline=None)
@given(
    side=st.sampled_from([1, 3, 5, 8, 28]), head=st.sampled_from(["gap", "flatten"]),
    dropout_at=st.sampled_from(["head", "every", "layers", "between"]),
    widths=st.none() | st.lists(st.integers(1, 6), min_size=1, max_size=4),
    padding=st.sampled_from(["same", "valid"]),
    stem_padding=st.sampled_from([None, "same", "valid"]), reuse=st.integers(1, 3),
    slope=st.none() | st.floats(0, 1),
)  # fmt: skip
def test_any_lever_setting_maps_images_to_logits(
    side, head, dropout_at, widths, padding, stem_padding, reuse, slope
) -> None:
    grid = {"width": 4} if widths is None else {"widths": widths}  # widths replaces width
    model = build_model("sepnet", (1, side, side), 10, stem=3, head=head, dropout=0.1,
                        dropout_at=dropout_at, padding=padding, stem_padding=stem_padding,
                        reuse=reuse, negative_slope=slope, **grid)  # fmt: skip
    out = model(torch.randn(3, 1, side, side))
    assert out.shape == (3, 10) and torch.isfinite(out).all()


def test_a_search_space_samples_every_lever_and_each_point_builds() -> None:
    config = load_config({
        "dataset": "digits",
        "space": {
            "family": {"choices": ["sepnet", "convnet"]},
            "sepnet.activation": {"choices": ["relu", "leaky_relu"]},
            "sepnet.negative_slope": {"low": 0.01, "high": 0.3, "log": True,
                                      "when": {"sepnet.activation": ["leaky_relu"]}},
            "sepnet.dropout": {"choices": [0.05, 0.1]},
            "sepnet.dropout_at": {"choices": ["head", "every", "layers", "between"]},
            "sepnet.head": {"choices": ["gap", "flatten"]},
            "convnet.negative_slope": {"choices": [0.01, 0.2]},
            "convnet.head": {"choices": ["gap", "flatten"]},
        },
        "fixed": {"convnet.activation": "leaky_relu"},
    })  # fmt: skip
    rng = np.random.default_rng(0)
    seen: dict[str, set[object]] = {}
    for _ in range(60):
        cfg = config.trial_config(config.space.sample(rng))
        net = build_model(cfg.family, DIGITS, 10, **cfg.hyper)
        assert net(torch.randn(2, *DIGITS)).shape == (2, 10)
        for key in ("negative_slope", "dropout_at", "head"):
            if key in cfg.hyper:
                seen.setdefault(f"{cfg.family}.{key}", set()).add(cfg.hyper[key])
    assert seen["sepnet.dropout_at"] == {"head", "every", "layers", "between"}
    assert seen["sepnet.head"] == seen["convnet.head"] == {"gap", "flatten"}
    assert seen["convnet.negative_slope"] == {0.01, 0.2}
    assert all(0.01 <= s <= 0.3 for s in seen["sepnet.negative_slope"])
    with pytest.raises(ConfigError, match="negative_slope"):
        load_config({"dataset": "digits", "space": {"family": ["sepnet"],
                     "sepnet.negative_slope": {"low": 0.1, "high": 2.0}}})  # fmt: skip


def test_a_search_config_trains_the_records_by_name() -> None:
    config = load_config({
        "dataset": "digits",
        "space": {"family": {"choices": ["record-697", "record-997", "record-1936"]}},
    })  # fmt: skip
    counts = {}
    for family in ("record-697", "record-997", "record-1936"):
        cfg = config.trial_config({"family": family})
        counts[family] = n_params(build_model(cfg.family, MNIST, 10, **cfg.hyper))
    assert counts == {"record-697": 697, "record-997": 997, "record-1936": 1936}
