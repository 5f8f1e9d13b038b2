"""A search recorded in a real PostgreSQL server (started here on loopback, in a temp folder).

The README promises any SQLAlchemy URL; SQLite is what the other tests use. Here a throwaway
PostgreSQL cluster (``initdb`` + ``pg_ctl``, as the ``postgres`` user when run as root) holds
the trials written by ``search.run._writer`` (read back field by field through a fresh
``RDBStorage``, as on SQLite) and a whole ``launch`` on Ray, resumed once; ``search pareto``
then reads it. PostgreSQL missing is a failure, not a skip: ``.ci/run`` installs it.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import optuna
import pytest
import ray
import ray.cloudpickle
import sqlalchemy
from optuna.trial import TrialState

from search._cli import main
from search.run._launch import launch, trials_counted
from tests.search_tests import test_execution, test_writer
from tests.search_tests.test_writer import not_utc  # noqa: F401 - autouse: a non-UTC zone

ray.cloudpickle.register_pickle_by_value(test_execution)  # workers must not import torch


def _binaries() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    assert found, "PostgreSQL is not installed (apt-get install postgresql; .ci/run does it)"
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _call(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]} {done.stderr[-2000:]}"


@pytest.fixture(scope="module")
def server():
    """A PostgreSQL cluster on 127.0.0.1 for this module; yields its base URL."""
    # Not under pytest's tmp folder: that one is private to root, and the server runs as postgres.
    folder = Path(tempfile.mkdtemp(prefix="npas-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root
        shutil.chown(folder, "postgres")
        # runuser is in /usr/sbin, which a bare PATH (CI's environment) may leave out
        runuser = shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")
        as_user = [runuser or "runuser", "-u", "postgres", "--"]
    bin_dir, data, port = _binaries(), folder / "data", _free_port()
    run = [*as_user, str(bin_dir / "pg_ctl"), "-D", str(data)]
    _call([*as_user, str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "npas"])
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1"
    _call([*run, "-o", options, "-l", str(folder / "log"), "-w", "start"])
    try:
        yield f"postgresql+psycopg2://npas@127.0.0.1:{port}"
    finally:
        _call([*run, "-m", "fast", "stop"])
        shutil.rmtree(folder)


@pytest.fixture
def url(server: str, request: pytest.FixtureRequest) -> str:
    """A fresh database for one test."""
    name = request.node.name.split("[")[0].lower()[:60]
    admin = sqlalchemy.create_engine(f"{server}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as db:
        db.execute(sqlalchemy.text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return f"{server}/{name}"


def test_written_trials_read_back_as_they_were(url: str) -> None:
    memory, writer = test_writer._open(url, optuna.samplers.NSGAIISampler(population_size=4))
    test_writer._run(memory, writer, 7)
    stored = test_writer._stored(url)
    assert [test_writer._fields(t) for t in stored] == [
        test_writer._fields(t) for t in memory.trials
    ]
    assert {t.state for t in stored} == {TrialState.COMPLETE, TrialState.FAIL}


def test_launch_resume_and_pareto_on_postgres(url: str, tmp_path: Path, capsys) -> None:
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        config = test_execution.make_config(tmp_path, trials=4, storage=url)
        study = launch(config, trial_fn=test_execution.fake_trial, progress=False)
        assert len(study.trials) == 4
        study = launch(config, trials=6, trial_fn=test_execution.fake_trial, progress=False)
    finally:
        ray.shutdown()
    assert trials_counted(study) == 6 and [t.number for t in study.trials] == list(range(6))
    assert all(t.user_attrs["trial_config"]["family"] == t.params["family"] for t in study.trials)
    assert main(["pareto", "--name", "t-nsga2", "--storage", url, "--format", "csv"]) == 0
    assert "accuracy" in capsys.readouterr().out


def test_a_password_in_the_storage_url_is_never_printed_or_stored(
    url: str, tmp_path: Path, capsys
) -> None:
    secret = url.replace("npas@", "npas:S3CRET@")  # trust auth: the password is not checked
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        config = test_execution.make_config(tmp_path, trials=2, storage=secret)
        study = launch(config, trial_fn=test_execution.fake_trial, progress=False)
    finally:
        ray.shutdown()
    assert "S3CRET" not in json.dumps(study.user_attrs), "the stored config is masked"
    assert "***" in study.user_attrs["config"]["storage"]
    assert main(["status", "--storage", secret]) == 0
    assert main(["pareto", "--name", "nope", "--storage", secret]) == 2
    refused = secret.replace(url.rsplit(":", 1)[1].split("/")[0], "1")  # nothing listens on 1
    assert main(["status", "--storage", refused]) == 2
    out, err = capsys.readouterr()
    assert "S3CRET" not in out + err and "***" in out and "***" in err
