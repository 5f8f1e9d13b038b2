"""objectives.measure: hand-counted FLOPs and activations, shared weights, the deployed form,
timing and memory with their conditions, and JSON-ready results."""

from __future__ import annotations

import copy
import json
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from objectives._flops import (
    attention_backward_flops,
    attention_flops,
    count_flops,
    count_weights,
    count_weights_and_flops,
)
from objectives._measure import measure
from spaces._errors import ConfigError, UnknownNameError

FAST = {
    "warmup": 1,
    "latency_budget_s": 0.02,
    "throughput_budget_s": 0.1,
    "max_throughput_batch": 8,
    "energy_budget_s": 0.02,
    "train_batch": 4,
}
ANALYTIC = ["params", "weights", "flops_infer", "macs", "flops_train", "activations"]


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))


def conv_out(
    size: int, *, kernel: int, stride: int = 1, padding: int = 0, dilation: int = 1
) -> int:
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def conv_flops(c_in: int, c_out: int, kernel: int, out_hw: int, groups: int = 1) -> int:
    """2 × (multiply-adds): every output element takes (c_in / groups) × k × k of them."""
    return 2 * c_out * out_hw * out_hw * (c_in // groups) * kernel * kernel


def test_mlp_flops_and_activations_match_hand_count() -> None:
    # Convention: 2 FLOPs per multiply-add, bias adds not counted.
    r = measure(mlp(), torch.randn(5, 4), ANALYTIC)
    assert r["flops_infer"] == 2 * (4 * 3 + 3 * 2)
    assert r["macs"] == r["flops_infer"] / 2
    # Backward: layer 2 grad-input (3×2) and grad-weight (3×2), layer 1 grad-weight only (4×3);
    # the input needs no gradient.
    assert r["flops_train"] == 36 + 2 * (3 * 2 + 3 * 2 + 4 * 3)
    assert r["activations"] == 3 + 2
    assert r["params"] == r["weights"] == 4 * 3 + 3 + 3 * 2 + 2


def test_conv_flops_follow_the_formula_with_stride_padding_groups_dilation() -> None:
    h1 = conv_out(9, kernel=3, stride=2, padding=1)  # 5
    h2 = conv_out(h1, kernel=3, padding=2, dilation=2)  # 5
    net = nn.Sequential(
        nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2),
        nn.ReLU(),
        nn.Conv2d(8, 6, 3, padding=2, dilation=2),
        nn.Flatten(),
        nn.Linear(6 * h2 * h2, 3),
    )
    r = measure(net, torch.randn(2, 4, 9, 9), ["flops_infer", "activations"])
    expected = conv_flops(4, 8, 3, h1, groups=2) + conv_flops(8, 6, 3, h2) + 2 * 6 * h2 * h2 * 3
    assert r["flops_infer"] == expected
    assert r["activations"] == 8 * h1 * h1 + 6 * h2 * h2 + 3


def test_training_flops_of_a_depthwise_conv_are_three_forwards() -> None:
    # Each gradient costs the forward's multiply-adds; the first layer needs no input gradient.
    # (torch's own conv-backward formula charges grouped weight gradients `groups` times over.)
    net = nn.Sequential(
        nn.Conv2d(1, 8, 1),
        nn.Conv2d(8, 8, 3, padding=1, groups=8),
        nn.Flatten(),
        nn.Linear(8 * 6 * 6, 2),
    )
    r = measure(net, torch.randn(2, 1, 6, 6), ["flops_infer", "flops_train"])
    first, depthwise, head = conv_flops(1, 8, 1, 6), conv_flops(8, 8, 3, 6, groups=8), 2 * 288 * 2
    assert r["flops_infer"] == first + depthwise + head
    assert r["flops_train"] == 2 * first + 3 * (depthwise + head)


class Twice(nn.Module):
    """One Linear applied twice: weights counts both uses, params one."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(torch.relu(self.lin(x)))


def test_reused_module_counts_twice_in_weights_not_params() -> None:
    r = measure(Twice(), torch.randn(3, 4), ["params", "weights", "flops_infer"])
    assert r["params"] == 20
    assert r["weights"] == 40 > r["params"]
    assert r["flops_infer"] == 2 * 2 * 16


def test_one_pass_counts_the_weights_and_flops_the_two_counts_give() -> None:
    """The screen's single meta-device pass: 40 weights (the Linear used twice) and 2 × 2 × 16
    FLOPs for one sample, as count_weights and count_flops give apart."""
    model, x = Twice(), torch.zeros(1, 4, device="meta")
    model.to("meta")
    assert count_weights_and_flops(model, x) == (40, 2 * 2 * 16)
    assert count_weights_and_flops(model, x) == (count_weights(model, x),
                                                 count_flops(lambda: model.eval()(x)))


class Attention(nn.Module):
    def __init__(self, embed: int, heads: int, *, need_weights: bool) -> None:
        super().__init__()
        self.mha = nn.MultiheadAttention(embed, heads, batch_first=True)
        self.need_weights = need_weights

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mha(x, x, x, need_weights=self.need_weights)[0]


@pytest.mark.parametrize("need_weights", [True, False], ids=["bmm-path", "sdpa-path"])
def test_attention_flops_match_the_formula(need_weights: bool) -> None:
    length, embed = 10, 16
    r = measure(
        Attention(embed, 2, need_weights=need_weights),
        torch.randn(2, length, embed),
        ["flops_infer", "activations", "weights", "params"],
    )
    projections = 2 * length * embed * 3 * embed + 2 * length * embed * embed
    scores_and_mix = attention_flops(1, length, length, embed, embed)  # heads share E
    assert scores_and_mix > 0
    assert r["flops_infer"] == projections + scores_and_mix
    assert r["activations"] == 4 * length * embed  # q, k, v and output projections
    assert r["weights"] == r["params"]  # out_proj is used by its parent, never called itself


def test_fused_cpu_attention_gets_forward_and_backward_formula() -> None:
    b, h, lq, lk, d = 2, 3, 5, 7, 4
    q = torch.randn(b, h, lq, d, requires_grad=True)
    k = torch.randn(b, h, lk, d, requires_grad=True)
    v = torch.randn(b, h, lk, d, requires_grad=True)
    forward = count_flops(lambda: F.scaled_dot_product_attention(q, k, v))
    both = count_flops(lambda: F.scaled_dot_product_attention(q, k, v).sum().backward())
    assert forward == attention_flops(b * h, lq, lk, d, d) == 2 * b * h * lq * lk * 2 * d
    assert both - forward == attention_backward_flops(b * h, lq, lk, d, d)


class Generated(nn.Module):
    """Stand-in for a Shapeshifter network: a weight generated from templates on each forward."""

    def __init__(self) -> None:
        super().__init__()
        self.templates = nn.Parameter(torch.randn(2, 16))
        self.coefficients = nn.Parameter(torch.randn(1, 2))
        self.bias = nn.Parameter(torch.zeros(4))
        self.materialized = 0

    def weight(self) -> torch.Tensor:
        return (self.coefficients @ self.templates).view(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight(), self.bias)

    def materialize(self) -> nn.Module:
        self.materialized += 1
        plain = nn.Linear(4, 4)
        with torch.no_grad():
            plain.weight.copy_(self.weight())
            plain.bias.copy_(self.bias)
        return plain


def test_infer_indicators_use_the_materialized_form_and_params_the_model() -> None:
    model = Generated()
    r = measure(model, torch.randn(3, 4), [*ANALYTIC, "latency_ms"], **FAST)
    assert model.materialized == 1
    assert r["cond_infer_form"] == "materialized"
    assert r["params"] == 2 * 16 + 2 + 4  # stores, coefficients and bias of the model itself
    assert r["weights"] == 16 + 4  # the deployed Linear
    assert r["flops_infer"] == 2 * 16  # no weight generation at test time
    assert r["flops_train"] > 3 * r["flops_infer"]  # generation + backward on the train form


def test_train_only_request_does_not_materialize() -> None:
    model = Generated()
    r = measure(model, torch.randn(3, 4), ["params", "flops_train"])
    assert model.materialized == 0 and r["cond_infer_form"] == "as-is"


def test_real_shapeshifter_network_is_measured_in_both_forms() -> None:
    from spaces.ssn import shapeshift

    torch.manual_seed(0)
    plain = nn.Sequential(
        nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2)
    )
    net = shapeshift(plain, 300)
    x = torch.randn(4, 8)
    wanted = ["params", "weights", "flops_infer", "activations", "flops_train"]
    shifted, reference = measure(net, x, wanted), measure(plain, x, wanted)
    assert shifted["cond_infer_form"] == "materialized"
    assert shifted["params"] == net.num_params <= 300 < reference["params"]
    for key in ("weights", "flops_infer", "activations"):  # the deployed model is the plain one
        assert shifted[key] == reference[key]
    assert shifted["flops_train"] >= reference["flops_train"]  # plus weight generation


def test_latency_and_throughput_are_positive_with_conditions() -> None:
    r = measure(mlp(), torch.randn(1, 4), ["latency_ms", "throughput"], threads=1, **FAST)
    assert math.isfinite(r["latency_ms"]) and r["latency_ms"] > 0
    assert r["latency_p90_ms"] >= r["latency_ms"] > 0
    assert r["latency_iqr_ms"] >= 0
    assert r["cond_latency_repeats"] >= 3 and r["cond_latency_batch"] == 1
    assert math.isfinite(r["throughput"]) and r["throughput"] > 0
    assert r["throughput_batch"] in (1, 2, 4, 8)
    assert r["cond_throughput_stop"] in ("no gain", "cap", "budget", "oom")
    assert r["cond_threads"] == 1
    assert r["cond_device"] == "cpu" and r["cond_torch"] == torch.__version__


def test_threads_are_restored_after_measuring() -> None:
    before = torch.get_num_threads()
    measure(mlp(), torch.randn(1, 4), ["latency_ms"], threads=1, **FAST)
    assert torch.get_num_threads() == before


def activation_heavy() -> nn.Module:
    """About 200 parameters but 1.2 MB of saved activations per 3×48×48 sample."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()
    )


def test_peak_training_memory_grows_with_batch_size() -> None:
    x = torch.randn(1, 3, 48, 48)
    small = measure(activation_heavy(), x, ["peak_mem_train_mb"], train_batch=2)
    large = measure(activation_heavy(), x, ["peak_mem_train_mb"], train_batch=32)
    # 30 extra samples × (conv output + ReLU output) ≈ 35 MiB more; noise is well below 10 MiB.
    assert large["peak_mem_train_mb"] - small["peak_mem_train_mb"] > 20
    assert large["cond_train_batch"] == 32 and "VmHWM" in large["cond_mem_method"]
    assert large["cond_optimizer"] == "SGD"


def test_peak_inference_memory_is_below_training_memory_at_same_batch() -> None:
    x = torch.randn(16, 3, 48, 48)
    r = measure(activation_heavy(), x, ["peak_mem_infer_mb", "peak_mem_train_mb"], train_batch=16)
    assert 0 < r["peak_mem_infer_mb"] < r["peak_mem_train_mb"]


def test_measuring_never_changes_the_callers_weights() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    before = copy.deepcopy(model.state_dict())
    measure(
        model, torch.randn(6, 4), ["flops_train", "peak_mem_train_mb", "energy_train_j"], **FAST
    )
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert model.training and all(p.grad is None for p in model.parameters())


def test_energy_and_co2_follow_intensity_and_pue() -> None:
    r = measure(
        mlp(),
        torch.randn(2, 4),
        ["energy_infer_j", "co2_train_g"],
        intensity_g_per_kwh=100.0,
        pue=1.5,
        energy_watts=10.0,
        **FAST,
    )
    assert r["energy_source"] in ("rapl", "estimate")
    for phase in ("infer", "train"):
        joules = r[f"energy_{phase}_j"]
        assert joules > 0
        assert r[f"co2_{phase}_g"] == pytest.approx(joules / 3.6e6 * 100.0 * 1.5)
    assert r["cond_grid_intensity_g_per_kwh"] == 100.0 and r["cond_pue"] == 1.5
    assert r["cond_infer_batch"] == 2 and r["cond_train_batch"] == FAST["train_batch"]
    if r["energy_source"] == "estimate":
        assert r["cond_energy_watts"] == 10.0


def test_full_panel_is_json_serialisable_and_complete() -> None:
    from objectives._indicators import INDICATORS

    net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
    r = measure(net, torch.randn(2, 1, 8, 8), **FAST)
    assert set(INDICATORS.names()) <= set(r)
    assert json.loads(json.dumps(r, allow_nan=False)) == r
    for key in (
        "cond_device_name",
        "cond_driver",
        "cond_dtype",
        "cond_threads",
        "cond_mem_method",
    ):
        assert r[key] not in (None, "")
    assert r["cond_sample_shape"] == [1, 8, 8]


def test_unknown_indicator_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match="latency_ms") as info:
        measure(mlp(), torch.randn(1, 4), ["params", "speed"])
    assert "speed" in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"train_batch": 0}, "train_batch"),
        ({"latency_budget_s": -1.0}, "latency_budget_s"),
        ({"pue": 0.5}, "pue"),
        ({"device": "nowhere"}, "device"),
        ({"indicators": []}, "at least one"),
    ],
)
def test_bad_options_name_the_argument(kwargs: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        measure(mlp(), torch.randn(1, 4), **kwargs)


def test_bad_input_is_rejected() -> None:
    with pytest.raises(ConfigError, match="example_input"):
        measure(mlp(), [[0.0] * 4], ["params"])
    with pytest.raises(ConfigError, match="model"):
        measure(lambda x: x, torch.randn(1, 4), ["params"])


def test_an_unknown_measure_option_names_the_known_ones():
    with pytest.raises(ConfigError, match=r"unknown measure option 'treads'.*'threads'"):
        measure(nn.Linear(4, 2), torch.zeros(1, 4), ["params"], treads=1)
