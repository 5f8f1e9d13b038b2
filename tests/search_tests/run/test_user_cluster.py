"""A search of the user's own family, image folder and indicator on a real two-node Ray cluster.

The images stream through a DataLoader in each trial. The plugin lives outside the project, in
a folder on no worker's ``sys.path``; the search names it once (``imports:``) and the job
carries it (Ray ``runtime_env`` ``py_modules``). Each import of the plugin notes its process,
file and Ray node, so the test sees that the workers of both nodes ran the shipped copy. The
stored records are read back through Optuna's own API, and a fresh process rebuilds the
exported model with ``load_bundle``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from tests.search_tests.userplugin import write_images, write_plugin

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def marks(tmp_path_factory):
    """The file each import of the plugin notes itself in, and the nodes a trial waits for
    (``userplugin``: else Ray Tune may run every trial on the first node's reused worker while
    the other node's starts, as it did on a loaded machine); set before the nodes start, so
    that their workers inherit them."""
    path = tmp_path_factory.mktemp("marks") / "marks.txt"
    os.environ.update(NPAS_TEST_MARKS=str(path), NPAS_TEST_NODES="2")
    yield path
    del os.environ["NPAS_TEST_MARKS"], os.environ["NPAS_TEST_NODES"]


WAIT = """
import sys, ray
from tests._support.waiting import wait_until
ray.init(address=sys.argv[1], log_to_driver=False)
wait_until(lambda: len([n for n in ray.nodes() if n["Alive"]]) >= 2, 60, interval_s=0.5,
           what="the second node to join")
"""


def test_a_users_plugin_searched_on_two_nodes_then_exported_and_rebuilt(
    marks, cluster, tmp_path
):
    address, env = cluster
    env = {**env, "NPAS_TEST_MARKS": str(marks)}
    plugin = write_plugin(tmp_path / "elsewhere", "cluster_plugin", family="t-ctiny",
                          indicator="t_cbytes")  # fmt: skip
    images = write_images(tmp_path / "images")
    config = {
        "name": "plugin",
        "imports": [str(plugin)],
        "dataset": {"name": "t-cimages", "image_folder": str(images)},
        "val_size": 8,
        "space": {"family": ["t-ctiny"], "t-ctiny.width": {"low": 2, "high": 6}},
        "train": {"epochs": 2, "batch_size": 8},
        "loading": {"stream": True, "workers": 1},  # a DataLoader worker in each Ray worker
        "objectives": [["accuracy", "maximize"], ["t_cbytes", "minimize"]],
        "indicators": ["params", "t_cbytes_streamed"],
        "algorithm": {"name": "random"},
        "trials": 4,
        "resources": {"cpu": 1},
    }
    (tmp_path / "search.yaml").write_text(json.dumps(config))
    subprocess.run([sys.executable, "-c", WAIT, address], env=env, check=True, timeout=90)
    out = tmp_path / "run"

    def search(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "search", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip

    launch = search("launch", str(tmp_path / "search.yaml"), "--address", address,
                    "--out", str(out), "--quiet")  # fmt: skip
    assert launch.returncode == 0, launch.stderr[-3000:]

    study = optuna.load_study(study_name="plugin", storage=f"sqlite:///{out}/npas.db")
    errors = [t.user_attrs.get("error") for t in study.trials]
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 4, errors
    for trial in study.trials:  # the user's indicator, stored as npas stores params
        assert trial.user_attrs["metric_t_cbytes"] == trial.user_attrs["metric_params"] > 0
        # an indicator given the trial's data: 48 images less 8 for validation, streamed
        assert trial.user_attrs["metric_t_cbytes_streamed"] == 40
    assert "user_attrs_metric_t_cbytes" in study.trials_dataframe().columns
    assert study.metric_names == ["accuracy", "t_cbytes"]

    imports = [line.split(" ") for line in marks.read_text().splitlines()]
    workers = [(file, node) for _, file, node in imports if node != "driver"]
    assert workers and all(file != str(plugin) for file, _ in workers), workers  # shipped
    assert len({node for _, node in workers}) == 2, imports  # both nodes ran trials

    bundle = tmp_path / "bundle"
    export = search("export", "--run", str(out), "--name", "plugin", "--out", str(bundle))
    assert export.returncode == 0, export.stderr[-3000:]
    assert f"importing the search's modules: {plugin}" in export.stderr
    recorded = json.loads((bundle / "metrics.json").read_text())["data"]
    assert recorded["dataset"] == "t-cimages" and recorded["source"] == f"image_folder {images}"

    rebuild = (
        "import json, sys, torch, search\n"
        "model = search.load_bundle(sys.argv[1])\n"
        "x = torch.zeros(2, 1, 8, 8)\n"
        "print(json.dumps([type(model).__name__, list(model(x).shape)]))\n"
    )
    fresh = subprocess.run([sys.executable, "-c", rebuild, str(bundle)], cwd=tmp_path,
                           env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True,
                           text=True, timeout=120)  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    assert json.loads(fresh.stdout.strip().splitlines()[-1]) == ["Tiny", [2, 2]]
