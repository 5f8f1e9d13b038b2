"""The search config: YAML, dict or preset → validated, typed objects.

Every check names the key path (``train.epochs``, ``space.convnet.width``), the bad value and
what is allowed, and raises :class:`spaces.ConfigError` (the CLI's exit code 2). Two layers:
:class:`TrialConfig`, one trial (what :func:`search.trial.run_trial` takes; hand-writable,
every key but ``dataset`` and ``family`` has a default), and :class:`SearchConfig`, a whole
search, whose :meth:`SearchConfig.trial_config` turns a sampled point into a trial config.
"""

from search.config._load import list_presets, load_config, load_preset
from search.config._metrics import (
    REPORTED_ONLY,
    TRIAL_METRICS,
    Constraint,
    Objective,
    metric_direction,
    metric_names,
    parse_constraints,
    parse_objectives,
)
from search.config._search import (
    OptimiserConfig,
    ResourceConfig,
    SearchConfig,
    default_storage_url,
    masked_url,
)
from search.config._trial import (
    SSN_OPTIONS,
    TRAIN_OPTIONS,
    TRIAL_OPTIONS,
    TrialConfig,
    check_trial_config,
)

__all__ = [
    "REPORTED_ONLY",
    "SSN_OPTIONS",
    "TRAIN_OPTIONS",
    "TRIAL_METRICS",
    "TRIAL_OPTIONS",
    "Constraint",
    "Objective",
    "OptimiserConfig",
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
]
