"""What ``search launch`` does before its config is built, so that it starts sooner and says
so: its first line as soon as the long wait starts (torch begins to load), and the local Ray
the search will run on started while torch and the config's modules load in a thread. One
after the other they took 4 s each on two cores; Ray's start is mostly waiting for its own
processes, which run on the other core meanwhile.

Ray is started early only for ``search launch [--preset NAME]`` as it is, with no option
that names a file, a folder, a cluster or a number (``--out``, ``--storage``, ``--address``,
``--import``, ``--trials``, ...): a preset is checked by the tests and asks for a local Ray
without user code, so nothing the user typed can be refused after Ray started (bad input is
refused before anything starts; checked after Ray's start, a typo in a config file of the
user's took 10.3 s to be said, 8.0 s before Ray started early). Every other launch starts or
joins Ray as before, after its checks. A Ray started here is the caller's to stop, on every
way out."""

from __future__ import annotations

import argparse
import importlib.abc
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

__all__ = ["announce", "start_ray_early"]

#: The options that may name something wrong (a folder, a storage, a cluster, a number).
_OVERRIDES = ("address", "imports", "out", "storage", "name", "trials", "time_limit")


class _OnFirstImport(importlib.abc.MetaPathFinder):
    """Calls ``then`` once, when ``name`` starts to be imported, and leaves the import alone."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name, self.then = name, then
        self._lock = threading.Lock()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> None:
        if fullname == self.name:
            with self._lock:
                if self in sys.meta_path:
                    sys.meta_path.remove(self)
                    self.then()
        return None


def announce(args: argparse.Namespace) -> None:
    """The launch's first line, the moment torch starts to load (seconds, on two cores), so
    that an answer that needs no torch (a typo in the config: a quarter of a second) comes
    alone and a launch says what it waits for within a fraction of a second of the command."""
    if args.quiet or "torch" in sys.modules:
        return

    def say() -> None:
        print("[npas] loading torch, Optuna and Ray Tune …", file=sys.stderr, flush=True)

    sys.meta_path.insert(0, _OnFirstImport("torch", say))


def start_ray_early(args: argparse.Namespace, default_preset: str) -> bool:
    """Starts the launch's local Ray now, the heavy modules loading meanwhile; True when it
    did (the caller stops it: ``search.run._ray_session.stop_ray``)."""
    if args.config or any(getattr(args, name, None) not in (None, []) for name in _OVERRIDES):
        return False
    raw = _preset(args.preset or default_preset)
    if raw.get("address", "local") != "local" or raw.get("imports"):
        return False
    from search.run import Stage, start_ray, starting

    loading = threading.Thread(target=_load_modules, name="npas-imports", daemon=True)
    loading.start()
    with Stage(starting(None), enabled=not args.quiet):
        started = start_ray(None)  # False where this process runs a Ray already
    loading.join()
    return started


def _preset(name: str) -> dict[str, Any]:
    """A packaged preset's YAML as read ({} for no such preset: the launch says so)."""
    import yaml

    from search.config import preset_text

    raw = yaml.safe_load(preset_text(name) or "{}")
    return raw if isinstance(raw, dict) else {}


def _load_modules() -> None:
    """Imports what the config's checks need (torch, the families, datasets and Optuna), none of
    which imports Ray: two threads importing one package's modules could wait on each other."""
    try:
        import optuna  # noqa: F401

        from search.screening import budget_warning, describe  # noqa: F401
    except Exception:  # the main thread imports them again, and says why they fail
        pass
