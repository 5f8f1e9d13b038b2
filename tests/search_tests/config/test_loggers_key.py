"""The ``loggers`` key: names checked against the loggers there are (a near miss suggested),
left out of a config that sets none, free to change between launches, and a logger whose
package is missing named with the extra that installs it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from search.config import load_config, reference
from search.errors import MissingExtraError
from search.record._study import _comparable
from search.run._loggers import logger_callbacks
from search.screening._describe import describe
from spaces import ConfigError
from tests._support.configs import MINIMAL
from tests._support.modules import block


@pytest.mark.parametrize(
    ("value", "loaded"),
    [
        (["tensorboard", "mlflow"], ("tensorboard", "mlflow")),
        (["MLflow", "mlflow"], ("mlflow",)),  # names are case-insensitive, each logged once
        ("tensorboard", ("tensorboard",)),  # one name alone
        (None, ()),
        ([], ()),
    ],
)
def test_loggers_load_in_the_order_given(value: Any, loaded: tuple[str, ...]) -> None:
    config = load_config({**MINIMAL, "loggers": value})
    assert config.loggers == loaded
    again = load_config(config.to_dict())
    assert again == config and ("loggers" in config.to_dict()) == bool(loaded)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            ["tensorbord"],
            r"^loggers\[0\]: got 'tensorbord' \(did you mean 'tensorboard'\?\); "
            r"allowed: one of \['mlflow', 'tensorboard'\]$",
        ),
        (["mlflow", "wandb"], r"^loggers\[1\]: got 'wandb'.*allowed: one of \['mlflow', "),
        ({"mlflow": True}, r"^loggers: got \{'mlflow': True\}; allowed: a list of \['mlflow', "),
    ],
)
def test_an_unknown_logger_is_refused_naming_the_known_ones(value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config({**MINIMAL, "loggers": value})


def test_the_reference_lists_the_loggers_key_and_its_names() -> None:
    (row,) = [r for r in reference() if r.key == "loggers"]
    assert row.default == [] and row.allowed == "one of mlflow, tensorboard"
    assert "mlflow.db" in row.help and "tensorboard" in row.help


def test_search_check_says_where_a_search_logs() -> None:
    assert "Logged to: tensorboard, mlflow" in describe(
        load_config({**MINIMAL, "loggers": ["tensorboard", "mlflow"]}), cost=False
    )
    assert not any(
        line.startswith("Logged to") for line in describe(load_config(MINIMAL), cost=False)
    )


def test_a_relaunch_may_change_the_loggers() -> None:
    before = load_config(MINIMAL).to_dict()
    after = load_config({**MINIMAL, "loggers": ["mlflow"]}).to_dict()
    assert _comparable(before) == _comparable(after)


@pytest.mark.parametrize(
    ("logger", "module"), [("tensorboard", "tensorboardX"), ("mlflow", "mlflow")]
)
def test_a_logger_whose_package_is_missing_names_the_loggers_extra(
    logger: str, module: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = load_config({**MINIMAL, "loggers": [logger]})
    block(monkeypatch, module)
    with pytest.raises(
        MissingExtraError,
        match=rf"^loggers: {logger} needs {module}, which is not installed: "
        r"pip install 'npas\[loggers\]'$",
    ):
        logger_callbacks(config, tmp_path)
