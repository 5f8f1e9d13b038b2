"""A launch stopped by SIGTERM (what `search stop` sends) while it is still starting its local
Ray, once or twice 0.2 s apart, or while its trials train (a config's search, and the default
preset's, whose Ray starts early) followed by one every 0.05 s until it has ended: it stops as
documented, exit 143 with its `interrupted:` line, and leaves no process of that Ray. Before,
Ray's own handler (``sys.exit(signum)``, installed by ``ray.init`` outside the window where npas
maps SIGTERM) ended a stop while Ray started with exit 15 and no line; a second SIGTERM during
the run ended it as a Ctrl-C, exit 130, without the summary; and one while Ray was being
stopped ended it by the signal itself (``ray.shutdown`` set SIGTERM's default action under
Python's handler), exit 143 without the line."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from tests._support.configs import CLI_CONFIG
from tests._support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


def _gcs(proc: subprocess.Popen) -> psutil.Process | None:
    """The GCS server of the Ray the launch is starting, once it runs."""
    with contextlib.suppress(psutil.NoSuchProcess):
        for child in psutil.Process(proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                if child.name() == "gcs_server":
                    return child
    return None


@pytest.mark.parametrize("signals", [1, 2], ids=["one SIGTERM", "two 0.2 s apart"])
def test_a_sigterm_while_ray_starts_stops_the_launch_with_143(tmp_path, signals):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({**CLI_CONFIG, "name": "early", "trials": 2}),
                      encoding="utf-8")  # fmt: skip
    command = [sys.executable, "-m", "search", "launch", str(config), "--out",
               str(tmp_path / "run"), "--address", "local"]  # fmt: skip
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)  # fmt: skip
    seen: list[psutil.Process] = []
    try:
        gcs = wait_until(lambda: _gcs(proc), 120, interval_s=0.05, what="Ray's GCS to start")
        launch = psutil.Process(gcs.ppid())  # the process that runs the search (the lease's)
        seen = [*psutil.Process(proc.pid).children(recursive=True)]
        launch.send_signal(signal.SIGTERM)
        if signals == 2:
            time.sleep(0.2)
            with contextlib.suppress(psutil.NoSuchProcess):
                launch.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 143, (proc.returncode, err[-3000:])
        assert "search launch: interrupted: search 'early' stopped by SIGTERM" in err, err
        assert "Traceback" not in err, err
        wait_until(lambda: not [p for p in seen if p.is_running()
                                and p.status() != psutil.STATUS_ZOMBIE], 30,
                   what=lambda: f"the launch's Ray to end: {[p.pid for p in seen]}")  # fmt: skip
    finally:
        for p in [psutil.Process(proc.pid), *seen] if proc.poll() is None else seen:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        proc.wait(timeout=30)


def _trains(run: Path) -> bool:
    """Whether a first epoch of the search is recorded."""
    with contextlib.suppress(sqlite3.Error), contextlib.closing(
        sqlite3.connect(f"file:{run / 'npas.db'}?mode=ro", uri=True)
    ) as db:
        return db.execute("SELECT count(*) FROM trial_intermediate_values").fetchone()[0] > 0
    return False


@pytest.mark.parametrize("early", [False, True], ids=["a config", "the default preset"])
def test_sigterms_while_trials_train_stop_the_launch_with_143(tmp_path, early):
    """The default preset with no option starts its Ray before the search (while torch
    loads): ``ray.init``'s own handler, which ends the process, was back once the search's
    were gone, while that Ray was stopped."""
    if early:  # `search launch` alone, in a folder of its own: runs/, digits-quick
        run, name, command = tmp_path / "runs", "digits-quick", []
    else:
        run, name = tmp_path / "run", "twice"
        config = tmp_path / "c.yaml"
        long = {**CLI_CONFIG, "name": name, "trials": 8, "train": {"epochs": 30, "batch_size": 64}}
        config.write_text(yaml.safe_dump(long), encoding="utf-8")
        command = [str(config), "--out", str(run), "--address", "local"]
    proc = subprocess.Popen([sys.executable, "-m", "search", "launch", *command],
                            cwd=tmp_path if early else ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    seen: list[psutil.Process] = []
    try:
        wait_until(lambda: _trains(run) or proc.poll() is not None, 180, interval_s=0.1,
                   what="a first epoch")  # fmt: skip
        gcs = _gcs(proc)
        assert gcs is not None and proc.poll() is None, "the search ended before the signals"
        launch = psutil.Process(gcs.ppid())
        seen = [*psutil.Process(proc.pid).children(recursive=True)]
        launch.send_signal(signal.SIGTERM)
        # Then one every 0.05 s until the launch has ended: each reaches a later step of the
        # stop (Ray Tune ending its run, the trials recorded, Ray stopped, the line printed).
        with contextlib.suppress(psutil.NoSuchProcess):
            while launch.is_running() and launch.status() != psutil.STATUS_ZOMBIE:
                time.sleep(0.05)
                launch.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 143, (proc.returncode, err[-3000:])
        assert f"search launch: interrupted: search '{name}' stopped by SIGTERM after" in err, err
    finally:
        for p in [psutil.Process(proc.pid), *seen] if proc.poll() is None else seen:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        proc.wait(timeout=30)
