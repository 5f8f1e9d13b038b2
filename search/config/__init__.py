"""The search config: YAML, dict or preset → validated, typed objects.

Every check names the key path (``train.epochs``, ``space.convnet.width``), the bad value and
what is allowed, and raises :class:`spaces.ConfigError` (the CLI's exit code 2). Two layers:
:class:`TrialConfig`, one trial (what :func:`search.trial.run_trial` takes; hand-writable,
every key but ``dataset`` and ``family`` has a default), and :class:`SearchConfig`, a whole
search, whose :meth:`SearchConfig.trial_config` turns a sampled point into a trial config.
Names load lazily: ``search presets`` and the CLI's parser need no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces import lazy_exports

# What this package exports, each name once: type checkers and editors read these imports,
# and at run time `lazy_exports` reads the same block and loads each name when first used.
# `__all__` is the user API; the other names are for npas's other packages.
if TYPE_CHECKING:
    from search._urls import RUN_FOLDER as RUN_FOLDER
    from search._urls import default_storage_url as default_storage_url
    from search._urls import masked_url as masked_url
    from search.config._checks import unknown as unknown
    from search.config._finalists import FinalistsConfig as FinalistsConfig
    from search.config._keys import RENAMED_KEYS as RENAMED_KEYS
    from search.config._keys import ConfigKey as ConfigKey
    from search.config._load import ConfigData as ConfigData
    from search.config._load import config_data as config_data
    from search.config._load import load_config as load_config
    from search.config._load import load_preset as load_preset
    from search.config._metrics import REPORTED_ONLY as REPORTED_ONLY
    from search.config._metrics import TRIAL_METRICS as TRIAL_METRICS
    from search.config._metrics import Constraint as Constraint
    from search.config._metrics import Objective as Objective
    from search.config._metrics import metric_direction as metric_direction
    from search.config._metrics import metric_names as metric_names
    from search.config._metrics import parse_constraints as parse_constraints
    from search.config._metrics import parse_objectives as parse_objectives
    from search.config._presets import list_presets as list_presets
    from search.config._presets import preset_text as preset_text
    from search.config._presets import unknown_preset as unknown_preset
    from search.config._reference import reference as reference
    from search.config._registries import LOGGERS as LOGGERS
    from search.config._registries import OPTIMISERS as OPTIMISERS
    from search.config._registries import SCHEDULERS as SCHEDULERS
    from search.config._search import SearchConfig as SearchConfig
    from search.config._sections import AUDIT_EVERY as AUDIT_EVERY
    from search.config._sections import FASTEST_TRIAL_S as FASTEST_TRIAL_S
    from search.config._sections import GRACE_EPOCHS as GRACE_EPOCHS
    from search.config._sections import REDUCTION_FACTOR as REDUCTION_FACTOR
    from search.config._sections import SCHEDULER_TYPES as SCHEDULER_TYPES
    from search.config._sections import TRUST_EVIDENCE as TRUST_EVIDENCE
    from search.config._sections import WITHIN_FRONT as WITHIN_FRONT
    from search.config._sections import AlgorithmConfig as AlgorithmConfig
    from search.config._sections import LimitsConfig as LimitsConfig
    from search.config._sections import ResourceConfig as ResourceConfig
    from search.config._sections import SchedulerConfig as SchedulerConfig
    from search.config._source import check_source as check_source
    from search.config._start import complete as complete
    from search.config._trial import FIT_TRIES as FIT_TRIES
    from search.config._trial import SSN_OPTIONS as SSN_OPTIONS
    from search.config._trial import TRAIN_OPTIONS as TRAIN_OPTIONS
    from search.config._trial import TrialConfig as TrialConfig
    from search.config._trial import check_trial_config as check_trial_config


__all__ = [
    "FIT_TRIES",
    "REPORTED_ONLY",
    "SSN_OPTIONS",
    "TRAIN_OPTIONS",
    "TRIAL_METRICS",
    "AlgorithmConfig",
    "ConfigKey",
    "Constraint",
    "FinalistsConfig",
    "LimitsConfig",
    "Objective",
    "ResourceConfig",
    "SearchConfig",
    "TrialConfig",
    "check_trial_config",
    "default_storage_url",
    "list_presets",
    "load_config",
    "load_preset",
    "masked_url",
    "metric_direction",
    "metric_names",
    "parse_constraints",
    "parse_objectives",
    "reference",
]

__getattr__ = lazy_exports(__name__)
