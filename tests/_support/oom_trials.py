"""The trials of the memory-monitor tests (run/test_oom.py), named in the driver process each
search runs from: one whose HOGS trials fill memory past Ray's kill threshold, and a steady one.

The trial functions are shipped to Ray's workers by value: workers never import tests.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

import ray.cloudpickle

from search.config import TrialConfig
from tests._support.memory import GIB
from tests._support.searches import fake_trial

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
#: Where the kill threshold lies above the memory in use when a test starts: room for the search
#: itself (its driver, Ray's processes and two trial workers); what other programs take
#: meanwhile counts too, and may get more trials killed (the checks allow it).
MARGIN = 3 * GIB
#: What a hog trial allocates, well past the threshold.
HOG = MARGIN + 2 * GIB
#: The trial numbers that hog memory.
HOGS = frozenset({1})
#: The marker, in the search's folder, that the memory held outside Ray is freed.
RELEASED = "released"


def started(cfg: TrialConfig) -> Path:
    """Marks the trial's folder: its function ran (its actor had started)."""
    folder = Path(cfg.artifact_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "started").touch()
    return folder


def hog_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """fake_trial (mlp) after a second; the HOGS trials first fill HOG bytes and hold them."""
    if int(started(cfg).name) in HOGS:
        held = bytearray(b"\x01") * HOG  # written, so resident
        time.sleep(120)  # Ray kills it long before
        del held
    time.sleep(1.0)
    return fake_trial(dataclasses.replace(cfg, family="mlp"))


def steady_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """fake_trial (mlp) after two seconds; trials 2 and later first wait (at most two
    minutes) until the test marks the memory held outside Ray as freed, so a trial is surely
    running when the memory monitor starts killing."""
    folder = started(cfg)
    released = folder.parents[2] / RELEASED  # <search folder>/<study>/trials/<number>
    end = time.monotonic() + 120
    while int(folder.name) >= 2 and not released.exists() and time.monotonic() < end:
        time.sleep(0.1)
    time.sleep(2.0)
    return fake_trial(dataclasses.replace(cfg, family="mlp"))
