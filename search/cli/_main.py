"""``main``: runs the ``search`` command line and turns its errors into exit codes (see
:mod:`search.cli`)."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
import time
from collections.abc import Sequence
from typing import NoReturn

from search import _ctrl_c as ctrl_c
from search._stop_signals import later_sigterms_held
from search.cli._parser import build_parser
from search.errors import (
    ConfigError,
    NpasError,
    SearchInterrupted,
    StorageWriteError,
    UnknownNameError,
)

__all__ = ["main"]


def _message(err: BaseException) -> str:
    """The error's text as one paragraph (a KeyError's str() would quote it)."""
    text = str(err.args[0]) if err.args else str(err)
    return " ".join(text.split())


def _supervised_launch(started: float) -> tuple[int | None, float]:
    """The exit code of the launch run as a supervised child; or None, with the command's
    start (its parent's), where this process is that child (or supervision is unavailable)
    and runs the search itself."""
    from search._supervisor import die_with_parent, supervise, supervised

    parent = supervised()
    if parent is None:
        return supervise(sys.argv[1:], started), started
    die_with_parent(parent[0])
    return None, parent[1]


def _leave_storage_alone(code: int) -> NoReturn:
    """Ends the program without the interpreter's cleanup, once its storage failed: that
    cleanup closes the storage's SQLite connections, and SQLite checkpoints its WAL on close,
    writing the files that just failed (a ``-shm`` made immutable: SIGBUS, exit 135, a fatal
    dump after the one-line error). Ray was stopped already."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _end_program(code: int) -> NoReturn:
    """Ends the program once its command is done, whatever threads are still running: a
    user's module (``imports:``) that started a thread that is not a daemon kept the
    interpreter waiting on it for ever after the command printed its result. The ``atexit``
    hooks run first (what they close, the storages among them, is closed); the interpreter's
    teardown is skipped (unloading torch's and Ray's modules kept a finished launch's prompt
    waiting a second)."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the ``search`` command line and returns its exit code.

    Args:
        argv: The arguments after the program name; None: ``sys.argv[1:]``, as the program
            (the ``search`` script, ``python -m search``), whose ``launch`` runs the search in
            a child process group (``search._supervisor``) and which ends the process once
            the command is done, threads still running or not (it never returns).
    """
    code = _command(argv)
    if argv is None:
        _end_program(code)
    return code


def _stops_held(command: str) -> contextlib.AbstractContextManager[None]:
    """For a launch, a SIGTERM after the search's stop is that stop's until the command has
    said how it ended."""
    return later_sigterms_held() if command == "launch" else contextlib.nullcontext()


def _command(argv: Sequence[str] | None) -> int:
    """The command's exit code (see :func:`main`)."""
    started = time.monotonic()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help (0) or a bad argument (2, the message is printed)
        return int(stop.code or 0)
    if args.command in ("launch", "check"):  # answered before torch and Ray load
        from search.config import check_source

        try:
            check_source(args.config, args.preset)
        except ConfigError as err:
            print(f"search {args.command}: error: {_message(err)}", file=sys.stderr)
            return 2
    if args.command == "launch" and argv is None:
        code, started = _supervised_launch(started)
        if code is not None:
            return code
    args.started = started
    with _stops_held(args.command):
        return _run(args, argv)


def _run(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """The command run, its errors turned into exit codes."""
    if argv is None and args.command != "launch":  # the program (a launch handles its own)
        ctrl_c.install()
    try:
        code = int(args.run(args))
        ctrl_c.raise_if_interrupted()  # one dropped where it was raised: still interrupted
        return code
    except (ConfigError, UnknownNameError) as err:
        print(f"search {args.command}: error: {_message(err)}", file=sys.stderr)
        return 2
    except SearchInterrupted as err:
        from search._format import wrap

        print(wrap(f"search {args.command}: interrupted: {_message(err)}"), file=sys.stderr)
        return 128 + err.signum  # 130 for Ctrl-C, 143 for SIGTERM
    except NpasError as err:
        print(f"search {args.command}: {type(err).__name__}: {_message(err)}", file=sys.stderr)
        if argv is None and isinstance(err, StorageWriteError):
            _leave_storage_alone(1)
        return 1
    except KeyboardInterrupt:
        print(f"search {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `search ... | head`: the reader left, which is no error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
