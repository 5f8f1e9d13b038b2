"""EnergyMeter: the source matches what this machine can read; RAPL arithmetic; CO2."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from objectives import _energy
from objectives._energy import EnergyMeter, co2_grams
from spaces._errors import ConfigError


def _rapl_readable() -> bool:
    try:
        zones = list(Path("/sys/class/powercap").glob("intel-rapl:*/energy_uj"))
        return bool(zones) and all(int(z.read_text()) >= 0 for z in zones)
    except (OSError, ValueError):
        return False


def _busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    x = torch.randn(64, 64)
    while time.perf_counter() < end:
        x = torch.tanh(x @ x)


def test_cpu_meter_positive_with_this_machines_source() -> None:
    with EnergyMeter("cpu") as meter:
        _busy(0.05)
    assert meter.seconds >= 0.05
    assert meter.joules > 0
    assert meter.source == ("rapl" if _rapl_readable() else "estimate")


def test_estimate_uses_given_watts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_energy, "RAPL_ROOT", Path("/nonexistent-powercap"))
    with EnergyMeter(torch.device("cpu"), watts=50.0) as meter:
        _busy(0.02)
    assert meter.source == "estimate"
    assert meter.watts == 50.0
    assert meter.joules == pytest.approx(50.0 * meter.seconds)


def test_estimate_default_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_energy, "RAPL_ROOT", Path("/nonexistent-powercap"))
    monkeypatch.delenv("NPAS_CPU_WATTS", raising=False)
    with EnergyMeter() as meter:
        pass
    assert meter.watts == _energy.CPU_WATTS_PER_CORE * torch.get_num_threads()
    monkeypatch.setenv("NPAS_CPU_WATTS", "7.5")
    with EnergyMeter() as meter:
        pass
    assert meter.watts == 7.5
    monkeypatch.setenv("NPAS_CPU_WATTS", "lots")
    with pytest.raises(ConfigError, match="NPAS_CPU_WATTS"), EnergyMeter():
        pass


def _zone(root: Path, name: str, energy: int, span: int) -> Path:
    zone = root / name
    zone.mkdir()
    (zone / "energy_uj").write_text(f"{energy}\n")
    (zone / "max_energy_range_uj").write_text(f"{span}\n")
    return zone


def test_rapl_sums_packages_and_handles_wraparound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Package 0 wraps (990 -> 10 in a range of 1000: +20 uJ), package 1 advances by 5e6 uJ;
    # the core sub-zone intel-rapl:0:0 must not be counted twice.
    pkg0 = _zone(tmp_path, "intel-rapl:0", 990, 1000)
    pkg1 = _zone(tmp_path, "intel-rapl:1", 1_000_000, 10**12)
    sub = _zone(tmp_path, "intel-rapl:0:0", 0, 1000)
    monkeypatch.setattr(_energy, "RAPL_ROOT", tmp_path)
    with EnergyMeter("cpu") as meter:
        (pkg0 / "energy_uj").write_text("10\n")
        (pkg1 / "energy_uj").write_text("6000000\n")
        (sub / "energy_uj").write_text("999\n")
    assert meter.source == "rapl"
    assert meter.watts is None
    assert meter.joules == pytest.approx((20 + 5_000_000) / 1e6)


def test_unreadable_rapl_falls_back_to_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zone = tmp_path / "intel-rapl:0"
    zone.mkdir()
    (zone / "energy_uj").write_text("not a number")
    (zone / "max_energy_range_uj").write_text("1000")
    monkeypatch.setattr(_energy, "RAPL_ROOT", tmp_path)
    with EnergyMeter("cpu", watts=10.0) as meter:
        pass
    assert meter.source == "estimate"


def test_bad_watts_rejected() -> None:
    with pytest.raises(ConfigError, match="watts"):
        EnergyMeter("cpu", watts=0.0)


def test_co2_one_kwh() -> None:
    assert co2_grams(3.6e6) == pytest.approx(475.0)
    assert co2_grams(3.6e6, intensity_g_per_kwh=100.0, pue=1.5) == pytest.approx(150.0)
    with pytest.raises(ConfigError, match="pue"):
        co2_grams(1.0, pue=0.5)
    with pytest.raises(ConfigError, match="joules"):
        co2_grams(math.nan)


@settings(max_examples=50, deadline=None)
@given(
    joules=st.floats(0, 1e9),
    intensity=st.floats(0, 2000),
    pue=st.floats(1.0, 3.0),
)
def test_co2_linear_and_monotone(joules: float, intensity: float, pue: float) -> None:
    g = co2_grams(joules, intensity_g_per_kwh=intensity, pue=pue)
    assert g >= 0
    assert co2_grams(2 * joules, intensity_g_per_kwh=intensity, pue=pue) == pytest.approx(2 * g)
