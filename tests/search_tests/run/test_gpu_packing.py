"""Fractional GPUs, checked on a Ray node that declares one logical GPU: Ray packs four
0.25-GPU trials onto it at once and tells each which GPU it has; a multi-fidelity search runs
on it as on CPUs. torch sees no CUDA here, so the trials themselves train on the CPU."""

from __future__ import annotations

import time
from typing import Any

import optuna
import pytest
import ray
import torch
from optuna.trial import TrialState

from search.config import TrialConfig
from search.run import launch
from search.run._records import conditions_of, metrics_of
from search.trial import run_trial
from tests.search_tests.run.test_multifidelity import _config, curve_trial

QUARTER = {"cpu": 0.5, "gpu": 0.25}


@pytest.fixture(scope="module", autouse=True)
def gpu_node():
    ray.init(address="local", num_cpus=2, num_gpus=1, include_dashboard=False,
             log_to_driver=False)  # fmt: skip
    yield
    ray.shutdown()


def timed_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """Sleeps two seconds (long enough to overlap on a loaded machine: one second gave 3 at
    once on a 16-core GPU machine running 8 test workers) and says when it ran and what Ray
    gave it."""
    start = time.time()
    time.sleep(2.0)
    return {"accuracy": 0.5, "params": float(cfg.budget), "feasible": 1.0, "start": start,
            "end": time.time(), "visible": ",".join(map(str, ray.get_gpu_ids()))}  # fmt: skip


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    running = best = 0
    for _, step in events:
        running += step
        best = max(best, running)
    return best


def test_four_quarter_gpu_trials_share_one_gpu_at_once(tmp_path):
    study = launch(
        _config(tmp_path, 8, resources=QUARTER, scheduler={"name": "fifo"}),
        trial_fn=timed_trial,
        progress=False,
    )
    done = study.get_trials(states=(TrialState.COMPLETE,))
    assert len(done) == 8
    metrics = [metrics_of(t, conditions_of(study)) for t in done]
    assert {m["cond_ray_gpu_ids"] for m in metrics} == {"0"}, "each trial was given GPU 0"
    assert {m["visible"] for m in metrics} == {"0"}
    assert _most_at_once([(m["start"], m["end"]) for m in metrics]) == 4


def test_a_moasha_search_on_quarter_gpus_stops_and_promotes(tmp_path):
    study = launch(_config(tmp_path, 9, resources=QUARTER), trial_fn=curve_trial,
                   progress=False)  # fmt: skip
    stored = optuna.load_study(study_name=study.study_name, storage=f"sqlite:///{tmp_path}/npas.db")
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
