"""search._dashboard and ``search dashboard``: a real optuna-dashboard process on a SQLite storage
written with npas's conventions answers over loopback with the study and its trials (its REST
API), and stops when asked (SIGTERM from start/stop_dashboard, Ctrl-C for the command)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import optuna
import pytest

from search._dashboard import start_dashboard, stop_dashboard
from search.cli import main
from search.errors import DashboardError
from spaces import ConfigError
from tests._support.waiting import wait_until
from tests.search_tests.studies import stored_study

pytestmark = pytest.mark.slow  # a real optuna-dashboard process per test (or per module)

optuna.logging.set_verbosity(optuna.logging.WARNING)

OBJECTIVES = [("accuracy", "maximize"), ("params", "minimize")]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A storage holding one npas-style study with three trials (two complete, one failed)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('dash') / 'npas.db'}"
    rows = [
        {"accuracy": 0.8, "params": 500, "flops_infer": 1000.0, "latency_ms": 0.5},
        {"accuracy": 0.9, "params": 2000, "flops_infer": 4000.0, "latency_ms": 1.5},
        {"state": "FAIL"},
    ]
    stored_study(url, "dash-study", rows, OBJECTIVES)
    return url


@pytest.fixture
def dashboard(storage: str):
    process, url = start_dashboard(storage)
    yield process, url
    stop_dashboard(process)
    assert process.poll() is not None, "the dashboard process is gone after teardown"


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as reply:
        assert reply.status == 200
        return json.loads(reply.read())


def test_dashboard_serves_the_study_and_its_trials(dashboard) -> None:
    process, url = dashboard
    assert url.startswith("http://127.0.0.1:") and process.poll() is None
    studies = _get(f"{url}/api/studies")["study_summaries"]
    assert [s["study_name"] for s in studies] == ["dash-study"]
    detail = _get(f"{url}/api/studies/{studies[0]['study_id']}")
    trials = detail["trials"]
    assert [t["state"] for t in trials] == ["Complete", "Complete", "Fail"]
    assert [t["values"] for t in trials[:2]] == [[0.8, 500], [0.9, 2000]]
    assert detail["objective_names"] == ["accuracy", "params"]
    attrs = {a["key"]: a["value"] for a in trials[2]["user_attrs"]}
    assert "NonFiniteLossError" in attrs["error"]
    # One attribute per indicator, a number: the trial table sorts and filters on it.
    attrs = {a["key"]: a["value"] for a in trials[0]["user_attrs"]}
    assert float(attrs["metric_flops_infer"]) == 1000.0 and float(attrs["metric_params"]) == 500
    sortable = {a["key"]: a["sortable"] for a in detail["union_user_attrs"]}
    for name in ("accuracy", "params", "flops_infer", "latency_ms"):
        assert sortable[f"metric_{name}"], name
    assert "metrics" not in sortable
    assert len(detail["best_trials"]) == 2, "both complete trials are non-dominated"


def test_the_storage_url_is_on_no_command_line(dashboard, storage: str) -> None:
    """Any local user reads a process's command line (``ps``); the URL goes through stdin."""
    process, _ = dashboard
    for name in ("cmdline", "environ"):
        seen = Path(f"/proc/{process.pid}/{name}").read_bytes().decode(errors="replace")
        assert storage not in seen and "npas.db" not in seen, name


def test_a_password_reaches_neither_the_process_nor_the_message(monkeypatch) -> None:
    started, real = [], subprocess.Popen

    def popen(args, **kwargs):
        started.append((args, kwargs.get("env") or {}))
        return real(args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    url = f"postgresql://npas:hunter2@127.0.0.1:{closed}/npas"
    with pytest.raises(DashboardError) as info:  # nothing listens there: the server exits
        start_dashboard(url, timeout_s=60)
    [(args, env)] = started
    assert not any("hunter2" in a for a in [*args, *env.values()])
    assert "hunter2" not in str(info.value) and "npas:***@" in str(info.value)


def test_ctrl_c_while_it_starts_leaves_no_server_behind(storage: str, monkeypatch) -> None:
    started, real = [], subprocess.Popen

    def popen(args, **kwargs):
        started.append(real(args, **kwargs))
        return started[-1]

    def interrupted(url: str) -> bool:  # Ctrl-C arrives while the server is polled
        raise KeyboardInterrupt

    monkeypatch.setattr(subprocess, "Popen", popen)
    monkeypatch.setattr("search._dashboard._answers", interrupted)
    with pytest.raises(KeyboardInterrupt):
        start_dashboard(storage)
    [process] = started
    assert process.poll() is not None, "the half-started server was stopped"


def test_busy_port_is_refused(storage: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ConfigError, match=f"port: got {port}, which is in use"):
            start_dashboard(storage, port=port)


def test_missing_storage_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code = main(["dashboard", "--storage", f"sqlite:///{tmp_path / 'none.db'}", "--port", "0"])
    assert code == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists(), "a missing storage is not created"


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("sigint_ignored", [False, True])
def test_search_dashboard_command_runs_until_ctrl_c_or_sigterm(
    storage: str, sig: int, sigint_ignored: bool
) -> None:
    """Also when started with SIGINT ignored, as a non-interactive shell starts a background
    job (Python then installs no Ctrl-C handler of its own): an explicit SIGINT still stops it."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "search", "dashboard", "--storage", storage, "--port", "0"]
    proc = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_ignore_sigint if sigint_ignored else None,
    )  # fmt: skip
    try:
        line = proc.stdout.readline()  # printed once the dashboard answers
        assert "optuna-dashboard (read-only) on" in line, line + proc.stderr.read()
        url = line.split(": ", 1)[1].split()[0]
        said = " ".join(proc.stdout.readline().split())  # its next line: within 100 columns
        assert said.startswith("(Ctrl-C or SIGTERM stops it; its log: ")
        log = Path(said.rsplit("its log: ", 1)[1].rstrip(")"))
        studies = _get(f"{url}/api/studies")["study_summaries"]
        assert studies[0]["study_name"] == "dash-study" and log.is_file()
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == 0
        wait_until(lambda: not _answers(url), 10, interval_s=0.2,
                   what="the dashboard to stop answering: Ctrl-C or SIGTERM stops its process too")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _answers(url: str) -> bool:
    try:
        _get(f"{url}/api/studies")
    except OSError:
        return False
    return True


def _request(url: str, method: str) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as err:
        return err.code


def _study_id(url: str) -> int:
    return _get(f"{url}/api/studies")["study_summaries"][0]["study_id"]


def test_the_dashboard_is_read_only_unless_made_writable(dashboard, tmp_path: Path) -> None:
    """optuna-dashboard's API deletes studies, unauthenticated: by default no request but a
    read reaches it; --writable lets one through."""
    _, url = dashboard
    study = _study_id(url)
    assert _request(f"{url}/api/studies/{study}", "DELETE") == 403
    assert _get(f"{url}/api/studies")["study_summaries"], "the study is still there"
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    stored_study(copy, "dash-copy", [{"accuracy": 0.8, "params": 500}], OBJECTIVES)
    process, writable = start_dashboard(copy, writable=True)
    try:
        assert _request(f"{writable}/api/studies/{_study_id(writable)}", "DELETE") < 300
        assert _get(f"{writable}/api/studies")["study_summaries"] == []
    finally:
        stop_dashboard(process)


def test_a_read_only_dashboard_holds_against_writes_overrides_traversal_and_idle_sockets(
    dashboard,
) -> None:
    """What the fault pass tried and what held, kept: every write method is refused, a GET
    asking to be a DELETE (``X-HTTP-Method-Override``, ``?_method=``) deletes nothing, a path
    climbing out of the static folder serves no file from outside it, and hundreds of idle
    connections do not stop it answering (the fault pass held 2,000 open by hand; with the
    listen backlog of 5 socketserver gives, opening 300 took 42 s, now 1 s)."""
    import resource
    import socket

    _, url = dashboard
    study = _study_id(url)
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        assert _request(f"{url}/api/studies/{study}", method) == 403, method
    override = urllib.request.Request(f"{url}/api/studies/{study}?_method=DELETE",
                                      headers={"X-HTTP-Method-Override": "DELETE"})  # fmt: skip
    with contextlib.suppress(urllib.error.HTTPError):
        urllib.request.urlopen(override, timeout=10).close()
    assert _get(f"{url}/api/studies")["study_summaries"], "the study is still there"
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(b"GET /static/../../../../etc/passwd HTTP/1.0\r\nHost: "
                    + f"{host}:{port}".encode() + b"\r\n\r\n")  # fmt: skip
        answer = b"".join(iter(lambda: raw.recv(65536), b""))
    assert b"root:" not in answer
    idle = min(500, resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 100)
    sockets = [socket.create_connection((host, int(port)), timeout=10) for _ in range(idle)]
    try:
        assert _get(f"{url}/api/studies")["study_summaries"]
    finally:
        for sock in sockets:
            sock.close()


def test_a_host_beyond_loopback_needs_expose(storage: str, capsys) -> None:
    assert main(["dashboard", "--storage", storage, "--host", "0.0.0.0", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "'0.0.0.0', beyond this machine" in err and "--expose" in err
    assert len(err.strip().splitlines()) == 1


def test_an_exposed_dashboard_says_where_it_listens_and_stays_read_only(storage: str) -> None:
    command = [sys.executable, "-m", "search", "dashboard", "--storage", storage, "--port", "0",
               "--host", "0.0.0.0", "--expose"]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        line = proc.stdout.readline()
        url = line.split(": ", 1)[1].split()[0]  # on 127.0.0.1: this test stays on loopback
        port = url.rsplit(":", 1)[1]
        warning = " ".join((proc.stderr.readline() + proc.stderr.readline()).split())  # wrapped
        assert f"warning: listening on 0.0.0.0:{port}, beyond this machine" in warning
        assert "no authentication" in warning and "delete" not in warning
        assert _request(f"{url}/api/studies/{_study_id(url)}", "DELETE") == 403
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


#: A search with a latency constraint, recorded as ``search launch`` records it: two feasible
#: trials, and one trained trial that missed the constraint and dominates both.
CONSTRAINED = ["latency_ms <= 1"]
CONSTRAINED_ROWS = [
    {"accuracy": 0.8, "params": 500, "latency_ms": 0.5, "constraint_0": -0.5},
    {"accuracy": 0.9, "params": 2000, "latency_ms": 0.9, "constraint_0": -0.1},
    {"accuracy": 0.99, "params": 100, "latency_ms": 2.0, "constraint_0": 1.0, "feasible": 0.0},
]


@pytest.fixture(scope="module")
def constrained(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A storage holding :data:`CONSTRAINED_ROWS`, written through npas's own writer."""
    from search.record._storage import open_storage
    from search.record._study import open_study
    from search.run._outcome import outcome_of, record_outcome
    from search.run._trainable import report_of

    url = f"sqlite:///{tmp_path_factory.mktemp('dash') / 'npas.db'}"
    study = open_study(name="constrained", storage=open_storage(url),
                       sampler=optuna.samplers.RandomSampler(seed=0), config={"name": "c"},
                       objectives=OBJECTIVES, constraints=CONSTRAINED,
                       optimiser="random")  # fmt: skip
    for row in CONSTRAINED_ROWS:
        trial = study.ask()
        outcome = outcome_of(report_of({"feasible": 1.0, **row}, ["accuracy", "params"]),
                             objectives=OBJECTIVES, constraints=CONSTRAINED)  # fmt: skip
        record_outcome(trial, outcome)
        study.tell(trial, outcome.values, state=outcome.state)
    return url


def test_optuna_agrees_with_our_front_and_the_dashboard_shows_which_trial_is_infeasible(
    constrained: str,
) -> None:
    """What npas stores (the ``constraints`` system attribute, Optuna's key) makes Optuna's
    ``study.best_trials`` our feasible front, and the dashboard's trials carry it, so its
    plots grey the infeasible trial. Its "Best Trial" list cannot agree: optuna-dashboard 0.21
    computes it from every COMPLETE trial's values and never reads the constraints
    (``optuna_dashboard/_app.py`` get_study_detail → ``_pareto_front.py``). Only a changed
    state or made-up values would hide the trial there, and both would mislead Optuna's
    samplers, which need it COMPLETE with its values and violations."""
    from search.pareto import front_of, trials_frame

    study = optuna.load_study(study_name="constrained", storage=constrained)
    ours = front_of(trials_frame(study), OBJECTIVES).numbers
    assert ours == [0, 1], "the infeasible trial 2 is on no front of ours"
    assert sorted(t.number for t in study.best_trials) == ours  # Optuna's own API agrees
    # Optuna's public view of them (FrozenTrial.constraints reads the stored list)
    assert [list(t.constraints.values()) for t in study.trials] == [
        [-0.5, 0.0], [-0.1, 0.0], [1.0, 1.0]
    ]  # fmt: skip
    process, url = start_dashboard(constrained)
    try:
        studies = _get(f"{url}/api/studies")["study_summaries"]
        detail = _get(f"{url}/api/studies/{studies[0]['study_id']}")
    finally:
        stop_dashboard(process)
    constraints = {t["number"]: t["constraints"] for t in detail["trials"]}
    assert constraints == {0: [-0.5, 0.0], 1: [-0.1, 0.0], 2: [1.0, 1.0]}
    infeasible = {n for n, c in constraints.items() if any(v > 0 for v in c)}
    assert infeasible == {2}, "the dashboard's plots mark trial 2 infeasible"
    best = sorted(t["number"] for t in detail["best_trials"])
    assert best == [2], (
        f"optuna-dashboard's best trials are now {best}: if it reads the constraints at last "
        "(ours are [0, 1]), update docs (the dashboard section) and this test"
    )


def test_a_json_py_in_the_working_folder_does_not_replace_the_servers_json(
    storage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's child runs with -P: a user's json.py beside them is not imported."""
    (tmp_path / "json.py").write_text("raise SystemExit('the user json.py was imported')\n")
    monkeypatch.chdir(tmp_path)
    process, url = start_dashboard(storage)
    try:
        assert _get(f"{url}/api/studies")["study_summaries"][0]["study_name"] == "dash-study"
    finally:
        stop_dashboard(process)


def test_a_request_naming_another_host_is_refused_on_loopback(dashboard) -> None:
    """DNS rebinding: a page of evil.example resolved to 127.0.0.1 sends ``Host:
    evil.example:port``; the dashboard answers 403 and shows no study."""
    _, url = dashboard
    port = url.rsplit(":", 1)[1]
    for host, status in ((f"evil.example:{port}", 403), (f"127.0.0.1:{port}", 200),
                         (f"localhost:{port}", 200), ("127.0.0.1", 403)):  # fmt: skip
        request = urllib.request.Request(f"{url}/api/studies", headers={"Host": host})
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                got, body = reply.status, reply.read()
        except urllib.error.HTTPError as err:
            got, body = err.code, err.read()
        assert got == status, (host, got)
        assert (b"dash-study" in body) == (status == 200)
