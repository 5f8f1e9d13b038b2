"""A SIGTERM once a launch has taken its stop is that stop's, up to the command's end, and Ray
does not take SIGTERM's handler away: each checked with real signals in a process of its own
(a signal's default action ends the process it reaches)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HELD = """
import os, signal, time
from search._stop_signals import hold_later_sigterms, later_sigterms_held, stop_taken

def term():
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.05)  # the handler runs at the next bytecode; the default action at once

calls = []
with later_sigterms_held():
    signal.signal(signal.SIGTERM, lambda *_: calls.append("ray's"))  # as ray.init does
    hold_later_sigterms()
    term()  # before a stop: what the handler put over it does
    stop_taken(signal.SIGTERM)
    term()  # after: the stop's, ignored
    print(calls, flush=True)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
with later_sigterms_held():  # a new command: no stop taken yet
    term()
print("never", flush=True)
"""

RAY = """
import os, signal, time
from search.run import start_ray, stop_ray

calls = []
start_ray(None)
signal.signal(signal.SIGTERM, lambda *_: calls.append("handled"))
stop_ray()
with open("/proc/self/status") as status:  # SigCgt: the signals with a handler, in hex
    caught = next(int(line.split()[1], 16) for line in status if line.startswith("SigCgt"))
print("caught" if caught & 1 << (signal.SIGTERM - 1) else "default", flush=True)
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(0.05)
print(calls, flush=True)
"""


def _run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_a_sigterm_after_the_stop_is_ignored_and_before_it_does_what_it_did():
    done = _run(HELD)
    assert done.stdout.splitlines() == ["[\"ray's\"]"], done.stderr
    assert done.returncode == -15  # the second command's SIGTERM, with no stop: the default


def test_stopping_ray_leaves_the_sigterm_handler_in_place():
    """ray.shutdown() set SIGTERM's default action in C under Python's handler (Ray's
    failure-signal handler given back): a SIGTERM then ended the process."""
    done = _run(RAY)
    assert done.stdout.splitlines()[-2:] == ["caught", "['handled']"], done.stderr[-3000:]
    assert done.returncode == 0
