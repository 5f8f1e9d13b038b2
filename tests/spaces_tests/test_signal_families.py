"""The 1-D families (``conv1d``, ``sepconv1d``, ``resnet1d``): sequences of 20 to thousands of
steps and several channels, lengths that never shrink below one step, their levers counted
module by module, the layouts table they are listed by, and ONNX/torch.export at a long length.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
from torch import nn

from objectives._layout import LAYOUTS as DATASET_LAYOUTS
from search.bundle._portable import write_onnx
from spaces import ConfigError, build_model, families_for, family_layouts, register_family
from spaces._builtin import BUILTIN_LAYOUTS, LAYOUTS

SIGNAL_FAMILIES = ("conv1d", "resnet1d", "sepconv1d")


def count(model: nn.Module, kind: type[nn.Module]) -> int:
    return sum(isinstance(m, kind) for m in model.modules())


@pytest.mark.parametrize("family", SIGNAL_FAMILIES)
@pytest.mark.parametrize("shape", [(1, 20), (5, 20), (3, 3000)])
@pytest.mark.parametrize("head", ["gap", "flatten"])
def test_short_and_long_sequences_of_several_channels_train(family, shape, head):
    torch.manual_seed(0)
    pooling = "stride" if family == "resnet1d" else "max"
    model = build_model(family, shape, 4, depth=4, width=4, head=head, pooling=pooling)
    out = model(torch.randn(3, *shape))
    out.square().mean().backward()
    assert out.shape == (3, 4) and torch.isfinite(out).all()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_pooling_stops_at_one_step_however_deep():
    conv = build_model("conv1d", (2, 20), 3, depth=8, width=4, growth=1.0, head="flatten")
    assert count(conv, nn.MaxPool1d) == 4  # 20 → 10 → 5 → 2 → 1, then no more
    assert conv.head.fc.in_features == 4 * 1
    res = build_model("resnet1d", (2, 20), 3, depth=8, width=4, growth=1.0, head="flatten")
    strided = [m for m in res.modules() if isinstance(m, nn.Conv1d) and m.stride == (2,)]
    assert len(strided) == 2 * 5  # 20 → 10 → 5 → 3 → 2 → 1: a conv and its shortcut each
    assert res.head.fc.in_features == 4 * 1
    avg = build_model("resnet1d", (2, 20), 3, depth=8, width=4, pooling="avg")
    assert count(avg, nn.AvgPool1d) == 4  # 20 → 10 → 5 → 2 → 1
    for model in (conv, res, avg):
        assert model(torch.randn(2, 2, 20)).shape == (2, 3)


def test_the_stem_stride_divides_a_long_sequence():
    model = build_model("conv1d", (3, 3000), 5, depth=4, width=8, head="flatten", stem_stride=8)
    # ceil(3000 / 8) = 375 steps, then pooled after each block: 187, 93, 46, 23; 64 channels
    assert model.features[0].stride == (8,)
    assert model.head.fc.in_features == 64 * 23
    res = build_model("resnet1d", (3, 3000), 5, depth=2, width=8, head="flatten", stem_stride=8)
    assert res.head.fc.in_features == 16 * 188  # 375, then a stride of 2: 188
    for net in (model, res):
        assert net(torch.randn(2, 3, 3000)).shape == (2, 5)


def test_sepconv1d_is_conv1d_with_separable_blocks_after_the_first():
    net = build_model("sepconv1d", (3, 50), 4, depth=3, width=8, growth=1.5, kernel=5)
    # block 1: 3→8 full k=5; then 8→12 and 12→18 as k=5 depthwise + 1×1 pointwise; BN (2 per
    # channel) and no conv bias; head 18→4 with bias
    expect = 5 * 3 * 8 + (5 * 8 + 8 * 12) + (5 * 12 + 12 * 18) + 2 * (8 + 12 + 18) + 18 * 4 + 4
    assert sum(p.numel() for p in net.parameters()) == expect
    assert [c.groups for c in net.modules() if isinstance(c, nn.Conv1d)] == [1, 8, 1, 12, 1]
    dense = build_model("conv1d", (3, 50), 4, depth=3, width=8, growth=1.5, kernel=5)
    assert [c.groups for c in dense.modules() if isinstance(c, nn.Conv1d)] == [1, 1, 1]


def test_resnet1d_projects_the_shortcut_only_where_channels_or_length_change():
    net = build_model("resnet1d", (2, 40), 3, depth=3, blocks=2, width=4, kernel=3)
    blocks = [m for m in net.modules() if type(m).__name__ == "_Block"]
    projected = [not isinstance(b.shortcut, nn.Identity) for b in blocks]
    assert projected == [False, False, True, False, True, False]  # 4, 4 | 4→8, 8 | 8→16, 16
    same = build_model("resnet1d", (2, 40), 3, depth=3, width=4, growth=1.0, pooling="none")
    assert not any(isinstance(m, nn.Conv1d) and m.kernel_size == (1,) for m in same.modules())
    # stem 2→4 k=3 + BN; per block two k=3 convs + 2 BNs; projections 1×1 + BN; head 16→3
    stem = 3 * 2 * 4 + 8
    body = sum(3 * ci * co + 3 * co * co + 4 * co for ci, co in
               [(4, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16)])  # fmt: skip
    shortcuts = (4 * 8 + 2 * 8) + (8 * 16 + 2 * 16)
    assert sum(p.numel() for p in net.parameters()) == stem + body + shortcuts + 16 * 3 + 3


@pytest.mark.parametrize(
    ("family", "place", "dropouts"),
    [
        ("conv1d", "head", 1), ("conv1d", "every", 4), ("conv1d", "layers", 3),
        ("conv1d", "between", 2),
        # resnet1d, 2 blocks: every = the stem's, one inside and one after each block, the head's
        ("resnet1d", "head", 1), ("resnet1d", "every", 6), ("resnet1d", "layers", 3),
        ("resnet1d", "between", 1),
    ],
)  # fmt: skip
def test_dropout_runs_where_dropout_at_says(family, place, dropouts):
    depth = 3 if family == "conv1d" else 2
    net = build_model(family, (2, 32), 3, depth=depth, dropout=0.2, dropout_at=place)
    assert count(net, nn.Dropout) == dropouts
    assert count(build_model(family, (2, 32), 3, dropout_at=place), nn.Dropout) == 0


@pytest.mark.parametrize(
    ("family", "hyper", "needle"),
    [
        ("conv1d", {"kernel": 4}, "kernel must be an odd int"),
        ("conv1d", {"pooling": "stride"}, "pooling must be one of"),
        ("resnet1d", {"pooling": "median"}, "pooling must be one of"),
        ("sepconv1d", {"head": "attention"}, "head must be one of"),
        ("resnet1d", {"dropout_at": "blocks"}, "dropout_at must be one of"),
        ("conv1d", {"activation": "relu", "negative_slope": 0.2}, "negative_slope is LeakyReLU"),
        ("resnet1d", {"stem_stride": 0}, r"resnet1d.stem_stride: got 0; allowed: an int in"),
        ("sepconv1d", {"separable": False}, "has no hyper-parameter 'separable'"),
    ],
)
def test_bad_levers_are_refused_naming_the_family(family, hyper, needle):
    with pytest.raises(ConfigError, match=f"family '{family}'.*{needle}"):
        build_model(family, (2, 32), 3, **hyper)


def test_each_side_refuses_the_other_layout_naming_what_takes_it():
    with pytest.raises(ConfigError, match=r"\(channels, length\).*got \(1, 8, 8\)"):
        build_model("conv1d", (1, 8, 8), 10)
    with pytest.raises(ConfigError, match=r"table row \(F,\): mlp"):
        build_model("resnet1d", (12,), 10)
    with pytest.raises(ConfigError, match=r"signal \(C, L\): conv1d, mlp, resnet1d, sepconv1d"):
        build_model("convnet", (2, 24), 10)


def test_families_for_reads_the_one_layouts_table():
    assert tuple(DATASET_LAYOUTS) == LAYOUTS  # the dataset layouts, in their order
    assert families_for("signal") == ["conv1d", "mlp", "resnet1d", "sepconv1d"]
    assert families_for("table") == ["mlp"]
    image = families_for("image")
    assert "mlp" in image and "record-697" in image and "conv1d" not in image
    assert set(BUILTIN_LAYOUTS) == set(image) | set(families_for("signal"))
    with pytest.raises(ConfigError, match=r"layout: got 'signals' \(did you mean 'signal'\?\)"):
        families_for("signals")


def test_families_for_loads_no_torch():
    probe = ("import sys, spaces; print(spaces.families_for('signal'), "
             "spaces.family_layouts('resnet1d'), 'torch' in sys.modules)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=60)  # fmt: skip
    assert done.stdout.split("\n")[0] == (
        "['conv1d', 'mlp', 'resnet1d', 'sepconv1d'] ('signal',) False"
    )


def test_a_users_family_declares_its_layouts_or_none(monkeypatch):
    import spaces._build
    import spaces._family_registry

    monkeypatch.setattr(spaces._build.FAMILIES, "_entries", dict(spaces._build.FAMILIES._entries))
    registry = spaces._family_registry
    monkeypatch.setattr(registry, "_LAYOUTS", dict(registry._LAYOUTS))
    register_family("test-wave", layouts="signal")(lambda in_shape, num_classes: None)
    register_family("test-any")(lambda in_shape, num_classes: None)
    assert family_layouts("test-wave") == ("signal",)
    assert family_layouts("test-any") is None
    assert "test-wave" not in families_for("signal")  # the built-ins only
    with pytest.raises(ConfigError, match=r"family 'test-x': layouts: got 'audio'; allowed"):
        register_family("test-x", layouts=["signal", "audio"])
    with pytest.raises(ConfigError, match=r"layouts: got none"):
        register_family("test-x", layouts=[])


@pytest.mark.slow  # three ONNX exports (torch.export)
@pytest.mark.parametrize("family", SIGNAL_FAMILIES)
def test_a_long_sequence_exports_to_onnx_and_torch_export_with_the_same_logits(
    family, tmp_path: Path
):
    torch.manual_seed(0)
    shape = (4, 2000)
    model = build_model(family, shape, 6, depth=3, width=6, stem_stride=4, dropout=0.1).eval()
    example = torch.randn(2, *shape)
    record = write_onnx(model, example, tmp_path)
    assert record["error"] is None and record["input"]["shape"] == ["batch", *shape]
    session = ort.InferenceSession(str(tmp_path / "model.onnx"))
    program = torch.export.load(tmp_path / "model.pt2").module()
    x = torch.randn(5, *shape, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model(x)
        traced = program(x)
    (got,) = session.run(None, {"input": x.numpy()})
    np.testing.assert_allclose(got, expected.numpy(), rtol=0, atol=1e-4)
    torch.testing.assert_close(traced, expected, rtol=0, atol=1e-4)
