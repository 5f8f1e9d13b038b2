"""A search joining a real two-node Ray cluster (two ``ray start`` nodes on this machine: the
``cluster`` fixture, run/conftest.py).

Each node offers one CPU and trials ask for one, so running two at once puts trials on both;
each trial reports the id of the node it ran on. The search runs in a driver process of its
own.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.trial import TrialState

from search.config import load_config, load_preset
from search.record._records import metrics_of
from search.record._schema import TrialAttr
from tests._support.cluster_trials import PROMOTION_EPOCHS

ROOT = Path(__file__).resolve().parents[3]


DRIVER = """
import json, logging, sys
sys.path.insert(0, {root!r})
import ray
logging.getLogger("ray.tune").setLevel(logging.DEBUG)  # what Ray Tune did, should it hang
from search.config import load_config
from search.run._launch import launch
from tests._support.cluster_trials import {trial}
from tests._support.waiting import wait_until

ray.init(address={address!r}, log_to_driver=False)


def alive():
    return [n["NodeID"] for n in ray.nodes() if n["Alive"]]


nodes = wait_until(lambda: len(found := alive()) >= 2 and found, 60, interval_s=0.5,
                   what=lambda: f"the second node to join: {{alive()}}")
ray.shutdown()
study = launch(load_config(json.loads({config!r})), address={address!r}, trial_fn={trial},
               progress=False)
assert not ray.is_initialized()  # launch left the cluster it joined
print("NODES", json.dumps(nodes))
"""


def _drive(address: str, env: dict[str, str], data: dict[str, Any], trial: str) -> list[str]:
    """Runs the search of ``data`` with the trial function named ``trial`` from a driver
    process of its own on the cluster; the ids of the cluster's nodes."""
    load_config(data)  # valid here before it is sent to the driver
    script = DRIVER.format(root=str(ROOT), address=address, config=json.dumps(data), trial=trial)
    try:
        run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=240)  # fmt: skip
    except subprocess.TimeoutExpired as err:  # what the driver said last, and what ran
        said = err.stderr.decode(errors="replace") if isinstance(err.stderr, bytes) else ""
        ran = sorted(Path(data["out"]).glob("*/epochs.jsonl"))
        epochs = ran[0].read_text()[-2000:] if ran else "no epoch ran"
        pytest.fail(f"the search did not end in 240 s; its stderr ends:\n{said[-6000:]}\n"
                    f"epochs run:\n{epochs}")  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.split("NODES", 1)[1])


def _cluster_config(name: str, out: Path, trials: int, **changes: Any) -> dict[str, Any]:
    """digits-quick with two objectives, random search and one CPU a trial."""
    data = load_preset("digits-quick").to_dict()
    data.update(name=name, out=str(out), trials=trials,
                objectives=[["accuracy", "maximize"], ["params", "minimize"]],
                algorithm={"name": "random"}, resources={"cpu": 1, "gpu": 0})  # fmt: skip
    return {**data, **changes}


def test_trials_run_on_both_nodes(cluster, tmp_path):
    address, env = cluster
    data = _cluster_config("cluster", tmp_path, 6)
    # The driver runs in its own process, as a user's would: a process that ran a local Ray
    # before cannot reliably start actors on another cluster after ray.shutdown().
    nodes = _drive(address, env, data, "node_trial")
    study = optuna.load_study(study_name="cluster", storage=f"sqlite:///{tmp_path}/npas.db")
    errors = [t.user_attrs.get("error") for t in study.trials]
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 6, errors
    used = {metrics_of(t)["node_id"] for t in study.trials}
    assert len(nodes) == 2 and used == set(nodes)


@pytest.mark.parametrize("named", ["HOST:PORT", "auto: RAY_ADDRESS", "auto: ray start's note"])
def test_resources_beyond_the_cluster_are_refused_before_anything_is_created(
    cluster, tmp_path, named
):
    """The cluster's resources are known once joined: joined first, refused with one line.

    ``--address auto`` joins the cluster that RAY_ADDRESS names, else the one whose address
    ``ray start`` noted in Ray's temp folder (here one of the test's own, via RAY_TMPDIR).
    """
    address, env = cluster
    env = {k: v for k, v in env.items() if k != "RAY_ADDRESS"}
    if named == "auto: RAY_ADDRESS":
        env["RAY_ADDRESS"] = address
    elif named == "auto: ray start's note":
        env["RAY_TMPDIR"] = str(tmp_path)
        (tmp_path / "ray").mkdir()
        (tmp_path / "ray" / "ray_current_cluster").write_text(address)
    config = tmp_path / "big.yaml"
    data = {"dataset": "digits", "space": {"family": ["mlp"]}, "resources": {"cpu": 8}}
    config.write_text(json.dumps(data))  # JSON is YAML
    out = tmp_path / "run"
    command = [sys.executable, "-m", "search", "launch", str(config), "--out", str(out),
               "--address", address if named == "HOST:PORT" else "auto"]  # fmt: skip
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    lines = [x for x in run.stderr.strip().splitlines() if not x.startswith("[npas] ")]
    assert run.returncode == 2 and len(lines) == 1, run.stderr[-3000:]
    assert "cpu=8" in lines[0] and "Ray cluster has cpu=" in lines[0]
    assert not (out / "npas.db").exists(), "no storage, no study"


def test_promotion_moasha_pauses_and_resumes_trials_across_the_cluster(cluster, tmp_path):
    """Promotion-type MOASHA on two nodes: trials pause at their rungs, free their node and
    are resumed from their Ray Tune checkpoints (every epoch runs once), and the decisions
    are stored in the study."""
    address, env = cluster
    train = {**load_preset("digits-quick").train, "epochs": PROMOTION_EPOCHS}
    data = _cluster_config("cluster-promotion", tmp_path, 8, train=train,
                           scheduler={"name": "moasha", "type": "promotion",
                                      "reduction_factor": 2})  # fmt: skip
    nodes = _drive(address, env, data, "paused_trial")
    study = optuna.load_study(study_name="cluster-promotion",
                              storage=f"sqlite:///{tmp_path}/npas.db")  # fmt: skip
    trials = study.get_trials()
    assert len(trials) == 8, [t.user_attrs.get("error") for t in trials]
    assert {t.state for t in trials} <= {TrialState.COMPLETE, TrialState.PRUNED}
    ran = [json.loads(line) for line in (tmp_path / "cluster-promotion" / "epochs.jsonl").open()]
    by_trial: dict[int, list[int]] = {}
    for row in ran:
        by_trial.setdefault(row["trial"], []).append(row["epoch"])
    for number, epochs in by_trial.items():  # resumed from its checkpoint, never from 1
        assert sorted(epochs) == list(range(1, len(epochs) + 1)), (number, epochs)
    outcomes = {
        t.number: [d["outcome"] for d in t.user_attrs[TrialAttr.DECISIONS]] for t in trials
    }
    assert any(("pause", "promote") in itertools.pairwise(o) for o in outcomes.values())
    for trial in trials:
        if trial.state == TrialState.COMPLETE:
            assert by_trial[trial.number] == list(range(1, PROMOTION_EPOCHS + 1))
    assert len(nodes) == 2 and {row["node"] for row in ran} == set(nodes)
