"""A search recorded in a real PostgreSQL server (``postgres_url``: a throwaway server on
loopback, see conftest.py).

The trials written by ``search.record._writer`` read back field by field through a fresh
``RDBStorage``, as on SQLite, and a whole ``launch`` on Ray, resumed once; ``search pareto``
then reads it. The chaos and lease tests run on PostgreSQL too (``storage_url``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import ray
import ray.cloudpickle
from optuna.trial import TrialState

from search.cli import main
from search.record._counting import trials_counted
from search.run._launch import launch
from tests._support.searches import fake_trial, make_config
from tests._support.writer import fields, open_writer, stored_trials, write_trials

pytestmark = pytest.mark.usefixtures("not_utc")  # a local time zone that is not UTC


def test_written_trials_read_back_as_they_were(postgres_url: str) -> None:
    sampler = optuna.samplers.NSGAIISampler(population_size=4)
    memory, writer = open_writer(postgres_url, sampler)
    write_trials(memory, writer, 7)
    stored = stored_trials(postgres_url)
    assert [fields(t) for t in stored] == [
        fields(t) for t in memory.trials
    ]
    assert {t.state for t in stored} == {TrialState.COMPLETE, TrialState.FAIL}


@pytest.mark.slow  # a search on Ray
def test_launch_resume_and_pareto_on_postgres(postgres_url: str, tmp_path: Path, capsys) -> None:
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        config = make_config(tmp_path, trials=4, storage=postgres_url)
        study = launch(config, trial_fn=fake_trial, progress=False)
        assert len(study.trials) == 4
        study = launch(config, trials=6, trial_fn=fake_trial, progress=False)
    finally:
        ray.shutdown()
    assert trials_counted(study) == 6 and [t.number for t in study.trials] == list(range(6))
    assert all(t.user_attrs["trial_config"]["family"] == t.params["family"] for t in study.trials)
    assert main(["pareto", "--name", "t-nsga2", "--storage", postgres_url, "--format", "csv"]) == 0
    assert "accuracy" in capsys.readouterr().out


@pytest.mark.slow  # a search on Ray
@pytest.mark.parametrize(
    "typed",
    [lambda url: url.replace("npas@", "npas:S3CRET@"),
     lambda url: url.replace("npas@", "npas:S3@CRET@"),  # an @ in it, as typed
     lambda url: f"{url}?password=S3CRET"],
    ids=["in the URL", "with an @", "?password="],
)  # fmt: skip
def test_a_password_in_the_storage_url_is_never_printed_or_stored(
    postgres_url: str, tmp_path: Path, capsys, typed
) -> None:
    # trust authentication: the password is not checked
    secret = typed(postgres_url)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        config = make_config(tmp_path, trials=2, storage=secret)
        study = launch(config, trial_fn=fake_trial, progress=False)
    finally:
        ray.shutdown()
    assert "CRET" not in json.dumps(study.user_attrs), "the stored config is masked"
    leaked = [str(f) for f in tmp_path.rglob("*") if f.is_file() and b"CRET" in f.read_bytes()]
    assert leaked == [], "no file of the run folder holds the password"
    assert "***" in study.user_attrs["config"]["storage"]
    assert main(["status", "--storage", secret]) == 0
    assert main(["pareto", "--name", "nope", "--storage", secret]) == 2
    port = postgres_url.rsplit(":", 1)[1].split("/")[0]
    refused = secret.replace(port, "1")  # nothing listens on 1
    assert main(["status", "--storage", refused]) == 2
    out, err = capsys.readouterr()
    assert "CRET" not in out + err and "***" in out and "***" in err


@pytest.mark.slow  # a fresh interpreter importing the storage code
def test_a_missing_database_driver_names_the_extra_that_installs_it(postgres_url: str) -> None:
    """postgresql://user@host/db as the README writes it: without psycopg 3 one line says
    which extra to install (SQLAlchemy maps that URL form to psycopg 3)."""
    assert postgres_url.startswith("postgresql://")
    probe = (
        "import sys\n"
        "sys.modules['psycopg'] = None  # as on an install without the postgres extra\n"
        "from search.record._storage import open_storage\n"
        "from search.errors import MissingExtraError\n"
        "try:\n"
        f"    open_storage({postgres_url!r})\n"
        "except MissingExtraError as err:\n"
        "    print(err)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[3], check=True)  # fmt: skip
    assert "pip install 'npas[postgres]'" in done.stdout, done.stdout + done.stderr
    assert done.stdout.count("\n") == 1
