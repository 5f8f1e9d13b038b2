"""Fixtures of the search tests: a local Ray for a module's searches, a throwaway PostgreSQL
server, a fixture that runs a test on SQLite and on PostgreSQL, and a local time zone that is
not UTC.

The README promises any SQLAlchemy URL; PostgreSQL is the one besides SQLite that is tested.
The server is a cluster made here (``initdb`` + ``pg_ctl`` on 127.0.0.1, in a temp folder, as
the ``postgres`` user when run as root), started on first use and stopped when the test session
(one per xdist worker) ends; each test gets a database of its own. PostgreSQL missing is a
failure, not a skip: ``.ci/run`` installs it.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """A local Ray of two CPUs that the module's searches join (``launch`` uses a Ray already
    started), started once per module; its tests are ``slow`` (tests/conftest.py)."""
    import ray  # here: the tests without Ray do not pay its import

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


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


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A PostgreSQL cluster on 127.0.0.1 for this session; yields its base URL (superuser
    ``npas``, trust authentication)."""
    with throwaway_postgres() as url:
        yield url


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str]:
    """A PostgreSQL cluster on 127.0.0.1 in a temp folder, removed on exit; yields its base
    URL (superuser ``npas``, trust authentication). ``benchmarks/`` use it too."""
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
        yield f"postgresql://npas@127.0.0.1:{port}"  # the form users type (psycopg 3)
    finally:
        _call([*run, "-m", "fast", "stop"])
        shutil.rmtree(folder)


@pytest.fixture
def postgres_url(postgres_server: str, request: pytest.FixtureRequest) -> str:
    """A fresh database for one test, named after it."""
    name = f"{re.sub(r'[^a-z0-9]+', '_', request.node.name.lower())[:50]}_{uuid.uuid4().hex[:8]}"
    admin = sqlalchemy.create_engine(f"{postgres_server}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as db:
        db.execute(sqlalchemy.text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return f"{postgres_server}/{name}"


@pytest.fixture(params=["sqlite", "postgresql"])
def storage_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The test's storage: a SQLite file in its tmp_path, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/npas.db"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def not_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A local time zone 3 hours behind UTC (with daylight saving in its history)."""
    monkeypatch.setenv("TZ", "America/Sao_Paulo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
