"""Energy of a block of code: NVML on GPU, Intel RAPL on CPU, otherwise an honest estimate.

The source actually used is recorded (``nvml`` | ``rapl`` | ``estimate``) because an estimate is
not a measurement: a result built on one must say so (DESIGN.md, cost indicators).

The estimate is ``seconds × watts``. Its default power follows the Green Algorithms calculator
(Lannelongue et al., 2021), which charges a CPU job its per-core TDP times the cores in use; their
generic per-core figure is about 12 W. A GPU without NVML is charged a flat board power.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import torch

from objectives._measure_options import DEFAULT_INTENSITY_G_PER_KWH
from spaces import ConfigError

#: Per-core power (W) of the CPU estimate; times ``torch.get_num_threads()``.
CPU_WATTS_PER_CORE = 12.0
#: Board power (W) charged to a CUDA device when NVML cannot be read.
GPU_WATTS = 300.0
#: Where Linux exposes RAPL counters; a module constant so a test can point it elsewhere.
RAPL_ROOT = Path("/sys/class/powercap")

_PACKAGE_ZONE = re.compile(r"^intel-rapl:\d+$")  # top-level packages; sub-zones would double count


def co2_grams(
    joules: float, *, intensity_g_per_kwh: float = DEFAULT_INTENSITY_G_PER_KWH, pue: float = 1.0
) -> float:
    """Grams of CO2 for ``joules`` of IT energy: kWh × grid intensity × PUE.

    PUE (power usage effectiveness, ≥ 1) scales IT energy up to the facility's total.
    """
    for name, value in (("joules", joules), ("intensity_g_per_kwh", intensity_g_per_kwh)):
        if not value >= 0:  # also rejects NaN
            raise ConfigError(f"{name} must be a number >= 0, got {value!r}")
    if not pue >= 1.0:
        raise ConfigError(f"pue must be >= 1.0 (facility energy / IT energy), got {pue!r}")
    return joules / 3.6e6 * intensity_g_per_kwh * pue


def _default_watts(device: torch.device) -> float:
    """Power for the estimate: env override (NPAS_CPU_WATTS / NPAS_GPU_WATTS) or the defaults."""
    env = "NPAS_GPU_WATTS" if device.type == "cuda" else "NPAS_CPU_WATTS"
    raw = os.environ.get(env)
    if raw is not None:
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"{env} must be a number of watts, got {raw!r}") from None
        if not value > 0:
            raise ConfigError(f"{env} must be > 0 watts, got {raw!r}")
        return value
    if device.type == "cuda":
        return GPU_WATTS
    return CPU_WATTS_PER_CORE * torch.get_num_threads()


class _Rapl:
    """Sums the top-level RAPL package counters, correcting each for wrap-around."""

    def __init__(self, zones: list[Path]) -> None:
        self.zones = zones
        self.ranges = [int((z / "max_energy_range_uj").read_text()) for z in zones]
        self._start: list[int] = []

    @classmethod
    def open(cls) -> _Rapl | None:
        """The readable package zones under :data:`RAPL_ROOT`, or None when there are none."""
        try:
            found = RAPL_ROOT.glob("intel-rapl:*")
            zones = sorted(p for p in found if _PACKAGE_ZONE.match(p.name))
            meter = cls(zones)
            meter.read()
        except (OSError, ValueError):  # absent, or root-only since the 2020 side-channel fix
            return None
        return meter if zones else None

    def read(self) -> list[int]:
        return [int((z / "energy_uj").read_text()) for z in self.zones]

    def start(self) -> None:
        self._start = self.read()

    def stop(self) -> float:
        """Joules since :meth:`start`."""
        total = 0
        for a, b, span in zip(self._start, self.read(), self.ranges, strict=True):
            total += b - a if b >= a else b + span - a
        return total / 1e6


class _Nvml:
    """NVML's total-energy counter (mJ since driver load) for one CUDA device."""

    def __init__(self, nvml: Any, handle: Any) -> None:
        self.nvml = nvml
        self.handle = handle
        self._start = 0

    @classmethod
    def open(cls, device: torch.device) -> _Nvml | None:
        """A reader for ``device``, or None when pynvml is missing or the counter unsupported."""
        try:
            import pynvml  # optional: nvidia-ml-py
        except ImportError:
            return None
        try:
            pynvml.nvmlInit()
            handle = cls._handle(pynvml, device)
            meter = cls(pynvml, handle)
            meter.read()
        except Exception:  # NVMLError_NotSupported (pre-Volta), no driver, ...
            return None
        return meter

    @staticmethod
    def _handle(pynvml: Any, device: torch.device) -> Any:
        # NVML ignores CUDA_VISIBLE_DEVICES, so match by UUID rather than by index.
        index = device.index if device.index is not None else torch.cuda.current_device()
        uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
        if uuid is not None:
            try:
                return pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}")
            except Exception:
                pass
        return pynvml.nvmlDeviceGetHandleByIndex(index)

    def read(self) -> int:
        return int(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle))

    def start(self) -> None:
        self._start = self.read()

    def stop(self) -> float:
        """Joules since :meth:`start`."""
        return (self.read() - self._start) / 1e3


class EnergyMeter:
    """Context manager measuring the energy and wall time of its block.

    CUDA is synchronised on entry and exit so queued kernels are charged to the right block.
    After the block, ``joules``, ``seconds``, ``source`` (``nvml`` | ``rapl`` | ``estimate``) and
    ``watts`` (the power used by an estimate, else None) are set.

    Args:
        device: Device whose energy is measured ("cpu", "cuda", "cuda:1", ...).
        watts: Power for the estimate, used only when no counter can be read. Defaults to
            ``NPAS_CPU_WATTS`` / ``NPAS_GPU_WATTS`` when set, else :data:`CPU_WATTS_PER_CORE`
            × threads in use, or :data:`GPU_WATTS`.

    Example:
        >>> with EnergyMeter("cpu") as meter:
        ...     _ = sum(range(1000))
        >>> meter.joules >= 0 and meter.source in ("rapl", "estimate")
        True
    """

    def __init__(self, device: torch.device | str = "cpu", *, watts: float | None = None) -> None:
        self.device = torch.device(device)
        if watts is not None and not watts > 0:
            raise ConfigError(f"watts must be > 0, got {watts!r}")
        self._watts = watts
        self.joules: float = 0.0
        self.seconds: float = 0.0
        self.source: str = "estimate"
        self.watts: float | None = None
        self._counter: _Nvml | _Rapl | None = None
        self._t0 = 0.0

    def __enter__(self) -> EnergyMeter:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self._counter = _Nvml.open(self.device)
        else:
            self._counter = _Rapl.open()
        if self._counter is not None:
            self._counter.start()
        self._t0 = time.perf_counter()
        return self

    def so_far(self) -> tuple[float, float]:
        """Seconds and joules since the block began, read inside it (a checkpoint's)."""
        seconds = time.perf_counter() - self._t0
        if self._counter is not None:
            return seconds, self._counter.stop()  # a read: the counter goes on
        watts = self._watts if self._watts is not None else _default_watts(self.device)
        return seconds, seconds * watts

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.seconds = time.perf_counter() - self._t0
        if self._counter is not None:
            self.joules = self._counter.stop()
            self.source = "nvml" if isinstance(self._counter, _Nvml) else "rapl"
            self.watts = None
        else:
            self.watts = self._watts if self._watts is not None else _default_watts(self.device)
            self.joules = self.seconds * self.watts
            self.source = "estimate"
