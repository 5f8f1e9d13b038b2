"""The commands that act on a search or its storage: ``search delete``, ``stop`` and
``dashboard``."""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from search._format import wrap
from search._urls import masked_url
from search.cli._common import _open, _quiet_optuna, _storage_url
from search.errors import ConfigError


def _delete(args: argparse.Namespace) -> int:
    """``search delete``: one search out of its storage, after a yes (``--yes``: no question;
    without a terminal to ask on, ``--yes`` is required)."""
    from search._deletion import delete_search

    _quiet_optuna()

    def confirm(question: str) -> bool:
        if args.yes:
            return True
        if not sys.stdin.isatty():
            raise ConfigError("--yes: missing; there is no terminal to ask on, and a search is "
                              "deleted only when you say so")  # fmt: skip
        return input(question).strip().lower() in ("y", "yes")

    folder = None if args.storage else Path(args.run_folder)
    said = delete_search(_storage_url(args), args.name, confirm=confirm, run_folder=folder)
    print(wrap(said) if said else "nothing deleted")
    return 0 if said else 1


def _stop(args: argparse.Namespace) -> int:
    """``search stop``: the launch running a search stops as on Ctrl-C (see
    :mod:`search._remote_stop`)."""
    from search._remote_stop import stop_search

    _quiet_optuna()
    print(wrap(stop_search(_storage_url(args), args.name)))
    return 0


def _dashboard(args: argparse.Namespace) -> int:
    from search._dashboard import loopback, start_dashboard, stop_dashboard

    url = _storage_url(args)
    _open(url)  # a missing SQLite file is an error, not a new empty storage
    log = Path(tempfile.mkdtemp(prefix="npas-dashboard-")) / "dashboard.log"
    # A service manager's SIGTERM stops it as Ctrl-C does; so does a SIGINT sent to a server
    # started with SIGINT ignored (a background job), which Python would leave ignored.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _interrupt)
    process, address = start_dashboard(url, host=args.host, port=args.port, log=log,
                                       expose=args.expose, writable=args.writable)  # fmt: skip
    try:  # from here on, a stop at any moment also stops the server
        mode = "writable" if args.writable else "read-only"
        print(f"optuna-dashboard ({mode}) on {masked_url(url)}: {address}\n"
              + wrap(f"(Ctrl-C or SIGTERM stops it; its log: {log})", first="  "),
              flush=True)  # fmt: skip
        if not loopback(args.host):
            port = address.rsplit(":", 1)[1]
            print(wrap(f"search dashboard: warning: listening on {args.host}:{port}, beyond "
                       "this machine, with no authentication: anyone who reaches it reads every "
                       "study in the storage"
                       f"{' and can change or delete them' if args.writable else ''}"),
                  file=sys.stderr, flush=True)  # fmt: skip
        return process.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        stop_dashboard(process)


def _interrupt(*_: Any) -> None:
    raise KeyboardInterrupt
