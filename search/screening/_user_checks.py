"""Checks of the user's code that need torch, run by ``search launch`` before anything exists.

The config's own checks already imported the user's modules (a module that does not import, or
registers a name twice, stops there). What is left needs data or a model: the user's dataset,
read once (labels, shapes, finite values, every image decodable; ``objectives._scan``); for
signals and tables, every family of the space built on their sample shape (an image family
would fail every trial it drew); and every user indicator the search measures, computed once on
one model of the space. Each failure is one line, before a study is created and before Ray
starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from objectives import (
    INDICATORS,
    USER_INDICATORS,
    check_folds,
    check_teachers_folder,
    measure,
)
from objectives.datasets import DATASETS, DatasetInfo
from search.screening._floor import ENDS, corners, every
from spaces import ConfigError, NpasError, build_model

if TYPE_CHECKING:
    from search.config import SearchConfig

__all__ = ["check_user_code"]


def check_user_code(config: SearchConfig) -> dict[str, Any] | None:
    """Checks the user's dataset and indicators of a search.

    Returns:
        The fingerprint of the user's dataset (``CustomDataset.check``); None for a built-in.

    Raises:
        ConfigError: a teachers' cache that cannot be written (a search that distils), a
            dataset that cannot be read, whose splits have bad shapes, labels or values, or
            that cannot be split as ``val_size`` and ``train_size`` ask, a family that builds
            no model of its signals or table rows, or a user indicator that fails or returns
            anything but a real number on a model of the space.
    """
    if _distils(config.to_dict()):
        check_teachers_folder()
    info = DATASETS.get(config.dataset)
    fingerprint = None if isinstance(info, DatasetInfo) else info.check()
    if fingerprint is not None:
        info.check_sizes(config.val_size, config.train_size, config.folds)
    else:
        _check_built_in_folds(config, info)
    if fingerprint is not None and info.sample_layout != "image":
        _check_families(config, info)
    wanted = INDICATORS.names() if config.indicators is None else list(config.indicators)
    wanted += [*config.objective_names, *(c.indicator for c in config.constraints)]
    names = [n for n in dict.fromkeys(wanted) if n in USER_INDICATORS]
    if not names:
        return fingerprint
    cfg = config.trial_config(config.space.sample(config.seed))
    model = build_model(cfg.family, info.in_shape, info.num_classes, **cfg.hyper)
    example = torch.zeros(1, *info.in_shape)
    for name in names:
        try:
            measure(model, example, [name])
        except NpasError as err:  # number_of's message names the indicator and the value
            raise ConfigError(str(err)) from None
        except Exception as err:  # the user's code raises anything
            raise ConfigError(
                f"indicator {name!r} failed on a {cfg.family} model of the space: "
                f"{type(err).__name__}: {err}"
            ) from None
    return fingerprint


def _check_built_in_folds(config: SearchConfig, info: DatasetInfo) -> None:
    """Folds pool the training and validation splits. A built-in dataset's size is known only
    once it is downloaded, which a check never does; but with ``train_size`` and a count of
    validation samples the pool is known without it, and folds above it fail every trial."""
    val = info.val_size if config.val_size is None else config.val_size
    if config.train_size is None or isinstance(val, float):
        return
    try:
        check_folds(config.folds, config.train_size + val,
                    f"train_size {config.train_size} and {val} validation, pooled")  # fmt: skip
    except ConfigError as err:
        raise ConfigError(f"dataset {info.name!r}: {err}") from None


def _distils(value: Any) -> bool:
    """Whether a config gives a teacher anywhere (``train``, ``fixed``, ``space``)."""
    if isinstance(value, dict):
        return any(
            ((str(k) == "teacher" or str(k).endswith(".teacher")) and v is not None)
            or _distils(v)
            for k, v in value.items()
        )
    return isinstance(value, list) and any(_distils(v) for v in value)


def _check_families(config: SearchConfig, info: Any) -> None:
    """Refuses a family of the space that builds no model of the dataset's signals or table
    rows at any corner of the space (each built on the meta device; an image family raises on
    a (C, L) or (F,) sample), rather than every trial that draws it failing."""
    refused: dict[str, str | None] = {}
    for end in ENDS:
        for point in corners(config.space, every(end)):
            try:
                cfg = config.trial_config(point)
            except ConfigError:  # such a trial fails on its own, with its message
                continue
            if refused.get(cfg.family, "") is None:
                continue  # one model of the family built: it takes this shape
            try:
                with torch.random.fork_rng(devices=[]), torch.device("meta"):
                    build_model(cfg.family, info.in_shape, info.num_classes, **cfg.hyper)
                refused[cfg.family] = None
            except ConfigError as err:
                refused.setdefault(cfg.family, str(err))
    for family, why in refused.items():
        if why is not None:
            raise ConfigError(
                f"family {family!r} builds no model of dataset {info.name!r}, "
                f"{info.sample_layout} samples of shape {info.in_shape}: {why}"
            )
