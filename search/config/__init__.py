"""The search config: YAML, dict or preset → validated, typed objects.

Every check names the key path (``train.epochs``, ``space.convnet.width``), the bad value and
what is allowed, and raises :class:`spaces.ConfigError` (the CLI's exit code 2). Two layers:
:class:`TrialConfig`, one trial (what :func:`search.trial.run_trial` takes; hand-writable,
every key but ``dataset`` and ``family`` has a default), and :class:`SearchConfig`, a whole
search, whose :meth:`SearchConfig.trial_config` turns a sampled point into a trial config.
Names load lazily: ``search presets`` and the CLI's parser need no torch.
"""

from __future__ import annotations

from spaces._lazy import lazy_getattr

_EXPORTS = {
    "list_presets": "search.config._presets",
    "load_config": "search.config._load",
    "load_preset": "search.config._load",
    "REPORTED_ONLY": "search.config._metrics",
    "TRIAL_METRICS": "search.config._metrics",
    "Constraint": "search.config._metrics",
    "Objective": "search.config._metrics",
    "metric_direction": "search.config._metrics",
    "metric_names": "search.config._metrics",
    "parse_constraints": "search.config._metrics",
    "parse_objectives": "search.config._metrics",
    "AlgorithmConfig": "search.config._search",
    "LimitsConfig": "search.config._search",
    "ResourceConfig": "search.config._search",
    "SearchConfig": "search.config._search",
    "default_storage_url": "search._urls",
    "masked_url": "search._urls",
    "SSN_OPTIONS": "search.config._trial",
    "TRAIN_OPTIONS": "search.config._trial",
    "ConfigKey": "search.config._keys",
    "reference": "search.config._keys",
    "TrialConfig": "search.config._trial",
    "check_trial_config": "search.config._trial",
}

__all__ = [
    "REPORTED_ONLY",
    "SSN_OPTIONS",
    "TRAIN_OPTIONS",
    "TRIAL_METRICS",
    "AlgorithmConfig",
    "ConfigKey",
    "Constraint",
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

__getattr__ = lazy_getattr(__name__, _EXPORTS)
