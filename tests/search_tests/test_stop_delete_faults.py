"""Real faults against ``search stop`` and ``search delete``: a lease whose pid now names another
process (a dead launch's pid reused, a row edited by hand, 0, -1, 1, a pid past 2**31), a
launch of another user, a launch started while delete's question waits on a real terminal, and
two deletes at once. Every process here is started by the test and ended by its pid."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
import sqlalchemy

from search.cli import main
from search.errors import SearchLocked
from search.record._lease import Lease, lease_owner
from search.record._process import same_process, start_token
from search.record._storage import open_storage
from tests._support.waiting import wait_until
from tests.search_tests.studies import ROWS, stored_study

ROOT = Path(__file__).resolve().parents[2]
#: Holds the lease of search argv[1] in storage argv[2] until killed; says "held" once it does.
HOLD = """
import sys, time
sys.path.insert(0, {root!r})
from search.record._lease import Lease
from search.record._storage import open_storage
Lease(open_storage(sys.argv[2]).engine, sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(600)
"""

#: ``search stop`` as the user nobody: the interpreter starts as root (its files are root's), runs
#: the command once on a search not there so that every module it needs is loaded, and drops to
#: nobody before running it for real.
AS_NOBODY = """
import os, sys
sys.path.insert(0, {root!r})
from search.cli import main
assert main(["stop", "--storage", sys.argv[1], "--name", "not-there"]) == 2
os.setgid(65534)
os.setuid(65534)
sys.exit(main(["stop", "--storage", sys.argv[1], "--name", "gone"]))
"""


@contextlib.contextmanager
def _process(args: list[str], **kwargs) -> Iterator[subprocess.Popen]:
    """A process of the test's own, killed by its pid at the end whatever happens."""
    proc = subprocess.Popen(args, **kwargs)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def _holder(url: str, name: str, **kwargs) -> contextlib.AbstractContextManager:
    script = HOLD.format(root=str(ROOT))
    return _process([sys.executable, "-c", script, name, url], stdout=subprocess.PIPE,
                    text=True, **kwargs)  # fmt: skip


def _set_pid(url: str, name: str, pid: int) -> None:
    """Edits the lease row's pid by hand, its start time left as the launch wrote it."""
    with open_storage(url).engine.begin() as db:
        db.execute(sqlalchemy.text("UPDATE npas_leases SET pid = :p WHERE study_name = :n"),
                   {"p": pid, "n": name})  # fmt: skip


@pytest.fixture()
def url(tmp_path: Path) -> str:
    address = f"sqlite:///{tmp_path}/npas.db"
    stored_study(address, "gone", ROWS)
    return address


def test_stop_never_signals_the_process_that_took_a_dead_launch_s_pid(url, capsys):
    """The launch is SIGKILLed while its lease is fresh, and its pid is now a `sleep`'s: stop
    signals nothing and says no launch runs the search (before: 'asked the launch … to stop',
    exit 0, and the sleep died)."""
    with _holder(url, "gone") as launch:
        assert launch.stdout.readline().strip() == "held"
        launch.send_signal(signal.SIGKILL)
        launch.wait(timeout=30)
    with _process(["sleep", "60"]) as sleeper:
        _set_pid(url, "gone", sleeper.pid)
        assert lease_owner(open_storage(url).engine, "gone") is None
        assert main(["stop", "--storage", url, "--name", "gone"]) == 2
        assert "no launch runs search 'gone' now" in capsys.readouterr().err
        with pytest.raises(subprocess.TimeoutExpired):
            sleeper.wait(timeout=1)  # alive


@pytest.mark.parametrize("pid", [0, 1])
def test_stop_refuses_pids_that_name_no_launch(url, pid):
    """pid 0 to ``kill`` is the caller's own group and 1 is init: stop, run in a session of its
    own (so a stop that did signal 0 would kill itself, not the tests), refuses both."""
    with _holder(url, "gone") as launch:
        assert launch.stdout.readline().strip() == "held"
        _set_pid(url, "gone", pid)
        done = subprocess.run([sys.executable, "-m", "search", "stop", "--storage", url,
                               "--name", "gone"], capture_output=True, text=True, cwd=ROOT,
                              timeout=120, start_new_session=True)  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "no launch runs search 'gone' now" in done.stderr
        assert launch.poll() is None  # the real holder was not signalled either


@pytest.mark.parametrize("pid", [-1, 0, 1, 2**31, 2**40])
def test_a_pid_that_can_name_no_launch_holds_no_lease(pid):
    """-1 to ``kill`` is every process the user may signal: such a row names no live launch,
    so nothing reads it as one (and a pid past 2**31 is no traceback)."""
    assert start_token(pid) is None and not same_process(pid, None)


def test_a_lease_row_with_a_huge_pid_reads_as_no_launch(url, capsys):
    with _holder(url, "gone") as launch:
        assert launch.stdout.readline().strip() == "held"
        _set_pid(url, "gone", 2**40)
        assert main(["stop", "--storage", url, "--name", "gone"]) == 2
        assert "no launch runs search 'gone' now" in capsys.readouterr().err
        assert main(["status", "--storage", url]) == 0


def test_stop_of_an_older_lease_without_a_start_time_signals_nothing(url, capsys):
    """A lease written before start times were recorded names a pid alone: stop says how to
    check it and signals nothing."""
    with _holder(url, "gone") as launch:
        assert launch.stdout.readline().strip() == "held"
        with open_storage(url).engine.begin() as db:
            db.execute(sqlalchemy.text("UPDATE npas_leases SET started = NULL"))
        assert main(["stop", "--storage", url, "--name", "gone"]) == 2
        assert "cannot be confirmed" in capsys.readouterr().err
        with pytest.raises(subprocess.TimeoutExpired):
            launch.wait(timeout=1)  # alive


def test_stop_of_another_user_s_launch_is_one_line(tmp_path):
    """Run as `nobody` against a launch of root's: one line saying whose it is, exit 2 (before:
    an uncaught PermissionError)."""
    if os.geteuid() != 0:
        pytest.fail("this test changes user: run the suite as root, as CI does")
    shared = Path(tempfile.mkdtemp(prefix="npas-stop-"))
    try:
        shared.chmod(0o777)
        address = f"sqlite:///{shared}/npas.db"
        stored_study(address, "gone", ROWS)
        with _holder(address, "gone") as launch:
            assert launch.stdout.readline().strip() == "held"
            for path in shared.iterdir():
                path.chmod(0o666)
            done = subprocess.run([sys.executable, "-c", AS_NOBODY.format(root=str(ROOT)),
                                   address], capture_output=True, text=True, cwd=ROOT,
                                  timeout=120)  # fmt: skip
            assert done.returncode == 2, done.stderr
            assert "belongs to another user" in done.stderr and "Traceback" not in done.stderr
            assert launch.poll() is None
    finally:
        subprocess.run(["rm", "-rf", str(shared)], check=True)


class _Terminal:
    """``search delete`` on a real pseudo-terminal: what it prints, and what the user types."""

    def __init__(self, url: str, name: str) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([sys.executable, "-m", "search", "delete", "--storage", url,
                                      "--name", name], stdin=slave, stdout=slave, stderr=slave,
                                     cwd=ROOT, start_new_session=True)  # fmt: skip
        os.close(slave)
        self.seen = ""

    def read_until(self, text: str) -> str:
        def arrived() -> bool:
            if select.select([self.master], [], [], 0.2)[0]:
                with contextlib.suppress(OSError):  # EIO: the process closed the terminal
                    self.seen += os.read(self.master, 4096).decode()
            return text in self.seen

        wait_until(arrived, 120, what=lambda: f"{text!r} on the terminal; saw {self.seen!r}")
        return self.seen

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=120)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            os.close(self.master)


def test_a_launch_while_delete_asks_is_refused_and_the_count_asked_is_the_count_deleted(url):
    terminal = _Terminal(url, "gone")
    try:
        question = terminal.read_until("[y/N]")
        assert "(6 trial(s))" in question
        with pytest.raises(SearchLocked, match="is being deleted by"):
            Lease(open_storage(url).engine, "gone").acquire()
        assert main(["stop", "--storage", url, "--name", "gone"]) == 2
        terminal.type("y")
        said = terminal.read_until("deleted search")
    finally:
        code = terminal.close()
    assert code == 0 and "deleted search 'gone' (6 trial(s))" in said
    assert not optuna.get_all_study_summaries(url)
    Lease(open_storage(url).engine, "gone").acquire()  # free again once delete ended


def test_of_two_deletes_at_once_one_deletes_and_the_other_is_refused(url):
    first = _Terminal(url, "gone")
    try:
        first.read_until("[y/N]")
        second = subprocess.run([sys.executable, "-m", "search", "delete", "--storage", url,
                                 "--name", "gone", "--yes"], capture_output=True, text=True,
                                cwd=ROOT, timeout=120)  # fmt: skip
        assert second.returncode == 1, second.stderr
        assert "is being deleted by" in second.stderr and "deleted search" not in second.stdout
        first.type("y")
        first.read_until("deleted search")
    finally:
        assert first.close() == 0
    assert not optuna.get_all_study_summaries(url)
