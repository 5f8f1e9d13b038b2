"""Optional dependencies: imported where they are used, through :func:`require`, so that a
missing one is one error naming the npas extra that installs it (as Optuna's ``try_import``).

The core install (``pip install npas``) searches, prints fronts and exports bundles; the
extras add what only some commands need. :data:`EXTRAS` mirrors pyproject.toml's
``[project.optional-dependencies]`` (a test holds them together).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from search.errors import MissingExtraError

__all__ = ["EXTRAS", "install_command", "require"]

#: Each optional module (its top-level import name) → the extra that installs it.
EXTRAS: dict[str, str] = {
    "matplotlib": "report",  # the report's PNG plots
    "plotly": "report",  # report.html's interactive plots
    "onnx": "onnx",  # a bundle's model.onnx: torch.onnx.export(dynamo=True) needs both
    "onnxscript": "onnx",
    "onnxruntime": "onnx",  # runs a bundle's model.onnx (its README's code); npas never imports it
    "optuna_dashboard": "dashboard",
    "psycopg": "postgres",  # the driver SQLAlchemy reads postgresql://user@host/db with
    "tensorboardX": "loggers",  # loggers: [tensorboard] (Ray Tune's TBXLoggerCallback)
    "mlflow": "loggers",  # loggers: [mlflow] (Ray Tune's MLflowLoggerCallback)
}


def install_command(module: str) -> str:
    """The command that installs the optional ``module`` (a key of :data:`EXTRAS`)."""
    return f"pip install 'npas[{EXTRAS[module.partition('.')[0]]}]'"


def require(module: str, *, purpose: str) -> ModuleType:
    """Imports the optional ``module`` (or one of its submodules) for ``purpose``.

    Args:
        module: A module whose top-level package is a key of :data:`EXTRAS`.
        purpose: What needs it, as the error's subject (``"search report"``).

    Raises:
        MissingExtraError: it is not installed; the message names the extra to install.
    """
    top = module.partition(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError as err:
        if err.name == top:  # not installed: the cause says nothing more
            raise MissingExtraError(
                f"{purpose} needs {top}, which is not installed: {install_command(module)}"
            ) from None
        raise MissingExtraError(  # installed but broken (a dependency of it missing, ...)
            f"{purpose} needs {top}, which cannot be imported ({type(err).__name__}: {err}): "
            f"{install_command(module)}"
        ) from err
