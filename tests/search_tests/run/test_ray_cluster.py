"""A search joining a real two-node Ray cluster (two ``ray start`` nodes on this machine).

Each node offers one CPU and trials ask for one, so running two at once puts trials on both;
each trial reports the id of the node it ran on. The search runs in a driver process of its
own. The nodes are started with ``--block`` in their own process groups, and torn down by
signalling exactly those groups (``ray stop`` would stop every Ray on the machine).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import optuna
import pytest
import ray.cloudpickle
from optuna.trial import TrialState

from search.config import TrialConfig, load_config, load_preset
from search.record._records import metrics_of
from search.record._schema import TrialAttr

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers need not import it
RAY = str(Path(sys.executable).with_name("ray"))
ROOT = Path(__file__).resolve().parents[3]


def node_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """A cheap trial that says where it ran (and takes long enough to overlap another)."""
    import os
    import time

    import ray

    time.sleep(1.5)
    return {
        "accuracy": cfg.train["lr"],
        "params": float(cfg.budget),
        "feasible": 1.0,
        "node_id": ray.get_runtime_context().get_node_id(),
        "pid": os.getpid(),
    }


PROMOTION_EPOCHS = 4


def paused_trial(cfg: TrialConfig, on_epoch: Any = None, on_state: Any = None,
                 resume: Any = None) -> dict[str, Any]:  # fmt: skip
    """A checkpointing trial whose curve is set by lr: each epoch it runs is logged with the
    node it ran on, and its checkpoint holds the epoch it reached."""
    import json
    import time
    from pathlib import Path

    import ray

    node = ray.get_runtime_context().get_node_id()
    first = 1 if resume is None else json.loads((Path(resume) / "e.json").read_text())["e"] + 1
    log = Path(cfg.artifact_dir).parents[1] / "epochs.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    level = cfg.train["lr"] / 0.2
    number = int(Path(cfg.artifact_dir).name)
    for epoch in range(first, PROMOTION_EPOCHS + 1):
        time.sleep(0.5)  # far shorter than a worker's start-up
        with log.open("a") as f:
            f.write(json.dumps({"trial": number, "epoch": epoch, "node": node}) + "\n")

        def write(folder: Any, epoch: int = epoch) -> None:
            (Path(folder) / "e.json").write_text(json.dumps({"e": epoch}))

        on_state(write)
        on_epoch({"epoch": epoch, "accuracy": level * epoch / PROMOTION_EPOCHS,
                  "params": float(cfg.budget), "elapsed_s": 0.5 * epoch})  # fmt: skip
    return {"accuracy": level, "params": float(cfg.budget), "feasible": 1.0}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)  # the node's own process group, started below
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


def _forget(address: str) -> None:
    """Removes the default-cluster note our head wrote, as ``ray stop`` would (only ours)."""
    note = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
    port = address.rsplit(":", 1)[1]
    if note.is_file() and note.read_text().strip().endswith(f":{port}"):
        note.unlink()


DRIVER = """
import json, sys, time
sys.path.insert(0, {root!r})
import ray
from search.config import load_config
from search.run._launch import launch
from tests.search_tests.run.test_ray_cluster import {trial}

ray.init(address={address!r}, log_to_driver=False)
deadline = time.monotonic() + 60
while len(nodes := [n["NodeID"] for n in ray.nodes() if n["Alive"]]) < 2:
    assert time.monotonic() < deadline, f"the second node did not join: {{nodes}}"
    time.sleep(0.5)
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
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=240)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.split("NODES", 1)[1])


@pytest.fixture(scope="module")
def cluster():
    """Two Ray nodes of one CPU each; yields the head's address and the nodes' environment."""
    # Ray 2.60's token authentication would need the head's token in every driver: a local
    # test cluster goes without.
    # The tests' trial functions live in this repository's tests package: the nodes' workers
    # import it from PYTHONPATH, as a user's cluster imports the user's installed package (the
    # job's own working folder no longer puts the driver's folder on their sys.path).
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": path}
    address = f"127.0.0.1:{_free_port()}"
    common = ["--num-cpus=1", "--block", "--disable-usage-stats", "--node-ip-address=127.0.0.1"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    started = []
    try:
        head = [RAY, "start", "--head", f"--port={address.split(':')[1]}",
                "--include-dashboard=false", *common]  # fmt: skip
        started.append(subprocess.Popen(head, start_new_session=True, env=env, **quiet))
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                socket.create_connection(address.split(":"), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        node = [RAY, "start", f"--address={address}", *common]
        started.append(subprocess.Popen(node, start_new_session=True, env=env, **quiet))
        yield address, env
    finally:
        for proc in reversed(started):
            _stop(proc)
        _forget(address)


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
