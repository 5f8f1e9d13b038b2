"""The ``search`` command: launch a search, then look at it, export a trial and train it again.

Exit codes: 0 done; 2 a bad argument or config (the message names the key, the value and what
is allowed; nothing recorded is touched); 1 any other npas error (the message, no traceback);
130 interrupted (143 for SIGTERM).

One module per group of commands, each loading torch, Ray, pandas and Optuna only when a
command runs (``search --help`` and ``search presets`` stay quick): ``_main`` (:func:`main`:
the exit codes, the supervised launch), ``_parser`` (:func:`build_parser`: every subcommand
and its options), ``_options`` (the options several share), ``_common`` (the storage and
study a command reads, the user's modules), ``_launch`` (launch, check), ``_status`` (status,
trials), ``_results`` (pareto, report, export, train, replay), ``_manage`` (delete, stop,
dashboard), ``_lists`` (families, indicators, presets, selectors).
"""

from __future__ import annotations

from search.cli._main import main
from search.cli._parser import build_parser

__all__ = ["build_parser", "main"]
