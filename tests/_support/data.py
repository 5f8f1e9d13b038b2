"""The shared MNIST files the tests read (``../shared/data/mnist`` beside the checkout, or
``NPAS_TEST_MNIST``), and the mark of a test that needs them."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

# ../shared sits beside the checkout on our machines and in CI; NPAS_TEST_MNIST points elsewhere.
_SHARED_MNIST = Path(__file__).resolve().parents[3] / "shared" / "data" / "mnist"
MNIST = Path(os.environ.get("NPAS_TEST_MNIST", str(_SHARED_MNIST)))
MNIST_FILES = sorted(p.name for p in MNIST.glob("*.gz"))


def needs_mnist(test: Callable) -> Callable:
    """Fails the test loudly (never skips) when the MNIST files it needs are missing: when it
    runs, not when its module is collected (a module importing this would fail whole)."""

    @functools.wraps(test)
    def checked(*args: object, **kwargs: object) -> object:
        assert len(MNIST_FILES) == 4, f"MNIST IDX files not found in {MNIST}; set NPAS_TEST_MNIST"
        return test(*args, **kwargs)

    return checked
