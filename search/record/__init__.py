"""The study record: every search is one Optuna study in its storage, and its run folder the
trials' checkpoints. Opening the storage (to write or to read), the one live launch's lease,
the in-memory study and its one-transaction writes, the study's own attributes, each trial
read back as one typed :class:`TrialRecord`, and the names all of it is stored under
(``search.record._schema``).

Read by ``search.run`` (which writes it), ``search.schedulers``, ``search.pareto``,
``search.report``, ``search.bundle`` and the command line; imports neither Ray nor torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces import lazy_exports

# What this package exports, each name once: type checkers and editors read these imports,
# and at run time `lazy_exports` reads the same block and loads each name when first used.
# `__all__` is the user API; the other names are for npas's other packages.
if TYPE_CHECKING:
    from search.record._checkpoint_files import checkpoint_folders as checkpoint_folders
    from search.record._checkpoint_files import checkpoint_problem as checkpoint_problem
    from search.record._checkpoint_files import folder_size as folder_size
    from search.record._checkpoint_files import latest_checkpoint as latest_checkpoint
    from search.record._checkpoint_files import resumable as resumable
    from search.record._checkpoint_files import resume_checkpoint as resume_checkpoint
    from search.record._counting import DISK_FULL as DISK_FULL
    from search.record._counting import INTERRUPTED as INTERRUPTED
    from search.record._counting import counts as counts
    from search.record._counting import disk_full as disk_full
    from search.record._counting import screened as screened
    from search.record._counting import trials_counted as trials_counted
    from search.record._curves import EpochPoint as EpochPoint
    from search.record._curves import epoch_values as epoch_values
    from search.record._curves import final_violation as final_violation
    from search.record._curves import rung_history as rung_history
    from search.record._data_record import DataCheck as DataCheck
    from search.record._data_record import refusal as refusal
    from search.record._identity import StorageIdentity as StorageIdentity
    from search.record._identity import lost_report as lost_report
    from search.record._lease import Lease as Lease
    from search.record._lease import LeaseOwner as LeaseOwner
    from search.record._lease import lease_busy as lease_busy
    from search.record._lease import lease_holder as lease_holder
    from search.record._lease import lease_owner as lease_owner
    from search.record._process import start_token as start_token
    from search.record._recommendation import chance_warning as chance_warning
    from search.record._recommendation import origin_of as origin_of
    from search.record._recommendation import recommendation_of as recommendation_of
    from search.record._recommendation import recommended_line as recommended_line
    from search.record._records import StudyRecords as StudyRecords
    from search.record._records import TrialRecord as TrialRecord
    from search.record._records import conditions_of as conditions_of
    from search.record._records import constraints_of as constraints_of
    from search.record._records import curve_of as curve_of
    from search.record._records import metrics_of as metrics_of
    from search.record._records import plain as plain
    from search.record._records import read_study as read_study
    from search.record._records import read_trial as read_trial
    from search.record._records import record_metrics as record_metrics
    from search.record._records import value_names as value_names
    from search.record._schema import OUTCOMES as OUTCOMES
    from search.record._schema import TRIAL_STATES as TRIAL_STATES
    from search.record._schema import Column as Column
    from search.record._schema import Metric as Metric
    from search.record._schema import RayKey as RayKey
    from search.record._schema import StudyAttr as StudyAttr
    from search.record._schema import TrialAttr as TrialAttr
    from search.record._schema import TrialSystemAttr as TrialSystemAttr
    from search.record._storage import open_storage as open_storage
    from search.record._storage import read_storage as read_storage
    from search.record._stored import finalist_runs as finalist_runs
    from search.record._stored import search_cost as search_cost
    from search.record._stored import stored_config as stored_config
    from search.record._stored import stored_objectives as stored_objectives
    from search.record._study import check_same_search as check_same_search
    from search.record._study import enqueue_start as enqueue_start
    from search.record._study import fail_interrupted as fail_interrupted
    from search.record._study import open_study as open_study
    from search.record._study import record_cost as record_cost
    from search.record._study import set_metric_names as set_metric_names
    from search.record._study import set_study_attrs as set_study_attrs
    from search.record._writer import StudyWriter as StudyWriter
    from search.record._writer import in_memory_copy as in_memory_copy


__all__ = [
    "TrialRecord",
    "read_storage",
    "read_study",
    "read_trial",
    "recommendation_of",
    "trials_counted",
]


__getattr__ = lazy_exports(__name__)
