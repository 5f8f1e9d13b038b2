"""SepNet, the tiny-MNIST record design: parameter counts against hand counts, block reuse
as weight tying, and its hyper-parameters refused where the signature says."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from objectives._flops import count_flops
from spaces import ConfigError, build_model

MNIST = (1, 28, 28)


def n_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_the_default_net_counts_by_hand() -> None:
    stem = 1 * 8 * 9 + 8  # 3×3 conv 1→8 with bias (no norm)
    block1 = 8 * 9 + (8 * 12 + 12)  # depthwise 3×3 on 8, pointwise 8→12 with bias
    block2 = 12 * 9 + (12 * 18 + 18)  # stage 2: round(12 · 1.5) = 18 channels
    head = 18 * 10 + 10
    assert n_params(build_model("sepnet", MNIST, 10)) == stem + block1 + block2 + head == 792


def test_full_convs_norms_prelu_and_expansion_count_by_hand() -> None:
    full = build_model("sepnet", MNIST, 10, stem=4, stages=1, width=6, separable=False,
                       norm="batch", activation="prelu")  # fmt: skip
    # convs lose their bias under a norm; BN adds a scale and shift per channel; PReLU one slope
    assert n_params(full) == (9 * 4 + 8 + 1) + (4 * 6 * 9 + 12 + 1) + (6 * 10 + 10)
    wide = build_model("sepnet", MNIST, 10, stem=4, stages=1, width=6, expansion=2.0,
                       norm="layer")  # fmt: skip
    # widen 4→8 (1×1) + norm, depthwise 3×3 on 8, project 8→6 + norm
    block = (4 * 8 + 16) + 8 * 9 + (8 * 6 + 12)
    assert n_params(wide) == (9 * 4 + 8) + block + (6 * 10 + 10)


def test_the_997_record_design_unpadded_with_dropout_everywhere_counts_by_hand() -> None:
    record = build_model("sepnet", MNIST, 10, stem=7, stages=1, blocks=4, width=10,
                         padding="valid", dropout=0.1, dropout_every=True)  # fmt: skip
    stem = 9 * 7 + 7
    first = 7 * 9 + (7 * 10 + 10)  # depthwise on 7, pointwise 7→10
    others = 3 * (10 * 9 + (10 * 10 + 10))
    assert n_params(record) == stem + first + others + (10 * 10 + 10) == 923
    # 28 -3x3-> 26 -pool-> 13 -four 3x3 blocks-> 5: the record's maps
    assert record.features(torch.randn(1, *MNIST)).shape == (1, 10, 5, 5)
    assert sum(isinstance(m, torch.nn.Dropout) for m in record.modules()) == 1 + 4 + 1
    reused = build_model("sepnet", MNIST, 10, stem=6, stages=1, width=6, reuse=3,
                         residual=True, padding="valid")  # fmt: skip
    # 26 -pool-> 13; the 6→6 block applied three times with skips (centre-cropped): 11, 9, 7
    assert reused.features(torch.randn(1, *MNIST)).shape == (1, 6, 7, 7)
    record.eval()
    assert torch.isfinite(record(torch.randn(2, *MNIST))).all()


def test_reuse_adds_depth_and_flops_but_no_parameters() -> None:
    hyper = {"stem": 6, "width": 6, "stages": 1}
    once = build_model("sepnet", MNIST, 10, **hyper)
    thrice = build_model("sepnet", MNIST, 10, **hyper, reuse=3)
    assert n_params(thrice) == n_params(once)
    x = torch.randn(2, *MNIST)
    depthwise = 6 * 9 * 14 * 14 * 2 * 2  # one application's depthwise MACs ×2, batch 2
    grown = count_flops(lambda: thrice(x)) - count_flops(lambda: once(x))
    assert grown >= 2 * depthwise  # two more applications of the block
    thrice.load_state_dict(once.state_dict())  # the same weights, one copy of them
    assert not torch.allclose(thrice(x), once(x))


@settings(max_examples=25, deadline=None)
@given(
    stem=st.integers(1, 8), width=st.integers(1, 12), stages=st.integers(1, 3),
    blocks=st.integers(1, 3), reuse=st.integers(1, 3), separable=st.booleans(),
    residual=st.booleans(), side=st.sampled_from([1, 3, 5, 8, 28]),
    padding=st.sampled_from(["same", "valid"]), dropout_every=st.booleans(),
)  # fmt: skip
def test_any_shape_of_the_net_maps_images_to_logits(
    stem, width, stages, blocks, reuse, separable, residual, side, padding, dropout_every
) -> None:
    model = build_model("sepnet", (1, side, side), 10, stem=stem, width=width, stages=stages,
                        blocks=blocks, reuse=reuse, separable=separable, residual=residual,
                        padding=padding, dropout=0.1, dropout_every=dropout_every)  # fmt: skip
    out = model(torch.randn(3, 1, side, side))
    assert out.shape == (3, 10) and torch.isfinite(out).all()


@pytest.mark.parametrize(
    ("hyper", "needle"),
    [
        ({"kernel": 4}, "kernel must be an odd int"),
        ({"stem_kernel": 2}, "stem_kernel must be an odd int"),
        ({"norm": "group"}, "norm must be one of"),
        ({"padding": "full"}, "padding must be one of"),
        ({"activation": "swish"}, "activation must be one of"),
        ({"reuse": 0}, "sepnet.reuse: got 0"),
        ({"dropout": 1.0}, "sepnet.dropout: got 1.0"),
        ({"expansion": 0.5}, "sepnet.expansion: got 0.5"),
    ],
)
def test_bad_values_are_refused_naming_the_key(hyper, needle) -> None:
    with pytest.raises(ConfigError, match=needle):
        build_model("sepnet", MNIST, 10, **hyper)
