"""The indicator registry: every entry is well formed and measure() produces its key."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from objectives._indicators import INDICATORS, Indicator, list_indicators
from objectives._measure import measure
from spaces._errors import ConfigError, NpasError, UnknownNameError

EXPECTED = {
    "params", "weights", "flops_infer", "flops_train", "macs", "activations", "latency_ms",
    "latency_p90_ms", "throughput", "peak_mem_infer_mb", "peak_mem_train_mb", "energy_infer_j",
    "energy_train_j", "co2_infer_g", "co2_train_g",
}  # fmt: skip


def test_registry_holds_the_design_panel() -> None:
    assert set(list_indicators()) == EXPECTED
    assert list_indicators("flops_*") == ["flops_infer", "flops_train"]


@pytest.mark.parametrize("name", list_indicators())
def test_indicator_is_well_formed(name: str) -> None:
    ind = INDICATORS.get(name)
    assert ind.name == name and ind.unit and ind.description
    assert ind.direction == ("maximize" if name == "throughput" else "minimize")
    assert ind.phase in ("train", "infer")
    assert callable(ind.probe)


@pytest.mark.parametrize("name", [n for n in list_indicators() if INDICATORS.get(n).analytic])
def test_analytic_indicators_are_deterministic(name: str) -> None:
    net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(2 * 4 * 4, 2))
    x = torch.randn(2, 1, 6, 6)
    assert measure(net, x, [name])[name] == measure(net, x, [name])[name] > 0


def test_phases_split_as_designed() -> None:
    train = {n for n in EXPECTED if INDICATORS.get(n).phase == "train"}
    assert train == {"params", "flops_train", "peak_mem_train_mb", "energy_train_j", "co2_train_g"}


def test_duplicate_and_unknown_names_raise() -> None:
    with pytest.raises(NpasError, match="already registered"):
        INDICATORS.add("params", INDICATORS.get("params"))
    with pytest.raises(UnknownNameError, match="flops_infer"):
        INDICATORS.get("flops")


def test_indicator_rejects_bad_direction_and_phase() -> None:
    probe = INDICATORS.get("params").probe
    with pytest.raises(ConfigError, match="direction"):
        Indicator("x", "count", "lower", "train", "d", probe)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="phase"):
        Indicator("x", "count", "minimize", "deploy", "d", probe)  # type: ignore[arg-type]
