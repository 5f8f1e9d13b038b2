"""Fractional GPUs, checked on a Ray node that declares one logical GPU: Ray packs four
0.25-GPU trials onto it at once and tells each which GPU it has; a multi-fidelity search runs
on it as on CPUs. torch sees no CUDA here, so the trials themselves train on the CPU."""

from __future__ import annotations

import asyncio
from typing import Any

import optuna
import pytest
import ray
import torch
from optuna.trial import TrialState

from search.config import TrialConfig
from search.record._records import conditions_of, metrics_of
from search.run import launch
from search.trial import run_trial
from tests._support.curves import curve_config, curve_trial

pytestmark = pytest.mark.slow  # a Ray node and real searches


QUARTER = {"cpu": 0.5, "gpu": 0.25}


@pytest.fixture(scope="module", autouse=True)
def gpu_node():
    ray.init(address="local", num_cpus=2, num_gpus=1, include_dashboard=False,
             log_to_driver=False)  # fmt: skip
    yield
    ray.shutdown()


PACKED = 4  # 0.25-GPU trials that fit on the one GPU at once
GAUGE = "npas-test-gauge"


@ray.remote(num_cpus=0)
class Gauge:
    """The trials running at once. Each waits in :meth:`enter` until ``PACKED`` run together
    (or every trial has entered): Ray packing them is then seen as an event, not as the
    overlap of sleeps long enough to overlap on a loaded machine."""

    def __init__(self, total: int) -> None:
        self.total, self.entered, self.running, self.most, self.late = total, 0, 0, 0, 0
        self.changed = asyncio.Condition()

    async def enter(self) -> None:
        async with self.changed:
            self.entered += 1
            self.running += 1
            self.most = max(self.most, self.running)
            self.changed.notify_all()

            def full() -> bool:
                return self.running >= PACKED or self.entered == self.total

            try:  # a deadline only for a failure: fewer packed
                await asyncio.wait_for(self.changed.wait_for(full), timeout=60)
            except TimeoutError:
                self.late += 1

    async def leave(self) -> None:
        async with self.changed:
            self.running -= 1

    def seen(self) -> tuple[int, int]:
        """The most trials that ran at once, and how many waited in vain for ``PACKED``."""
        return self.most, self.late


def packed_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """Runs while ``PACKED`` trials run together and says what Ray gave it."""
    gauge = ray.get_actor(GAUGE, namespace=GAUGE)
    ray.get(gauge.enter.remote())
    ray.get(gauge.leave.remote())
    return {"accuracy": 0.5, "params": float(cfg.budget), "feasible": 1.0,
            "visible": ",".join(map(str, ray.get_gpu_ids()))}  # fmt: skip


def test_four_quarter_gpu_trials_share_one_gpu_at_once(tmp_path):
    gauge = Gauge.options(name=GAUGE, namespace=GAUGE).remote(8)
    study = launch(
        curve_config(tmp_path, 8, resources=QUARTER, scheduler={"name": "fifo"}),
        trial_fn=packed_trial,
        progress=False,
    )
    done = study.get_trials(states=(TrialState.COMPLETE,))
    assert len(done) == 8
    metrics = [metrics_of(t, conditions_of(study)) for t in done]
    assert {m["cond_ray_gpu_ids"] for m in metrics} == {"0"}, "each trial was given GPU 0"
    assert {m["visible"] for m in metrics} == {"0"}
    assert ray.get(gauge.seen.remote()) == (PACKED, 0)


def device_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """Says which device its config names (None: torch's choice)."""
    return {"accuracy": 0.5, "params": float(cfg.budget), "feasible": 1.0,
            "device": str(cfg.device)}  # fmt: skip


@pytest.mark.parametrize(("resources", "device"), [({"cpu": 1, "gpu": 0}, "cpu"),
                                                   (QUARTER, "None")])  # fmt: skip
def test_a_trial_given_no_gpu_trains_on_the_cpu_and_one_given_a_share_chooses(
    tmp_path, resources, device
):
    """Ray 2.x hides the GPUs from a trial given none; later versions will not
    (ray-project/ray#62492): the trial's config names the CPU so that it cannot take one."""
    study = launch(curve_config(tmp_path, 2, resources=resources, scheduler={"name": "fifo"}),
                   trial_fn=device_trial, progress=False)  # fmt: skip
    done = study.get_trials(states=(TrialState.COMPLETE,))
    assert {metrics_of(t, conditions_of(study))["device"] for t in done} == {device}


def test_a_moasha_search_on_quarter_gpus_stops_and_promotes(tmp_path):
    study = launch(curve_config(tmp_path, 9, resources=QUARTER), trial_fn=curve_trial,
                   progress=False)  # fmt: skip
    stored = optuna.load_study(
        study_name=study.study_name, storage=f"sqlite:///{tmp_path}/npas.db"
    )
    assert stored.get_trials(states=(TrialState.PRUNED,))
    assert stored.get_trials(states=(TrialState.COMPLETE,))


def test_a_real_trial_resolves_its_device_from_what_torch_sees():
    @ray.remote(num_gpus=0.25, num_cpus=0.5)
    def trial() -> tuple[list, str]:
        result = run_trial({"dataset": "digits", "family": "mlp", "hyper": {"hidden": [16]},
                            "train": {"epochs": 1}, "indicators": ["params"]})  # fmt: skip
        return ray.get_gpu_ids(), result["cond_device"]

    gpu_ids, device = ray.get(trial.remote())
    assert [str(i) for i in gpu_ids] == ["0"]
    # The index is resolved ("cuda:0"); without CUDA, as in CI, the trial runs on the CPU.
    assert device.split(":")[0] == ("cuda" if torch.cuda.is_available() else "cpu")
