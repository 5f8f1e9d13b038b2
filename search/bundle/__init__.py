"""Training-ready bundles: one chosen trial of a search, its config, materialised weights and
metrics, loadable with nothing but ``spaces.build_model`` — and retrained at a full schedule.

Words: to *export* is what ``search export`` does, write a trial as a bundle
(:mod:`._write`); the bundle's *portable* files are the model in formats that run without npas,
ONNX and a torch.export program (:mod:`._portable`); :mod:`._files` reads a bundle back,
:mod:`._readme` writes its README and :mod:`._retrain` trains it again (``search train``).

A bundle is a folder::

    config.yaml    the trial config (``search.trial.run_trial`` takes it as it is)
    model.pt       {"state_dict" (the plain, materialised model), "family", "in_shape",
                    "num_classes", "hyper", "mapping", "trial_config", "format", ...}
    metrics.json   the recorded metrics and their conditions, the trial and why it was chosen;
                   ``exported`` (the test accuracy, read once at export for this model only),
                   ``onnx`` (opset, input and output names and shapes, or why ONNX is missing)
                   and ``data`` (the test split and preprocessing that reproduce it)
    model.onnx     the plain model for onnxruntime & co. (opset 18, dynamic batch)
    model.pt2      the same traced program for ``torch.export.load`` (no npas code needed)
    README.md      how to load it in your own code, with npas or without
    train.json     written by ``search train``: the retrained metrics next to the search's

Shapeshifter networks are materialised (:meth:`ShapeshiftNet.materialize`): the weights are the
generated ones, in the original architecture, so deployment needs no npas code. The SSN mapping
is kept so that :func:`train_bundle` retrains with the same parameter sharing. A portable export
that fails leaves the other files written and says why.

Names load lazily (PEP 562): torch and the datasets load only when a bundle is made or read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces import lazy_exports

# What this package exports, each name once: type checkers and editors read these imports,
# and at run time `lazy_exports` reads the same block and loads each name when first used.
# `__all__` is the user API; the other names are for npas's other packages.
if TYPE_CHECKING:
    from search.bundle._files import BUNDLE_FORMAT as BUNDLE_FORMAT
    from search.bundle._files import load_bundle as load_bundle
    from search.bundle._files import read_bundle as read_bundle
    from search.bundle._folder import bundle_target as bundle_target
    from search.bundle._retrain import FULL_SCHEDULE as FULL_SCHEDULE
    from search.bundle._retrain import Trained as Trained
    from search.bundle._retrain import check_device as check_device
    from search.bundle._retrain import train_bundle as train_bundle
    from search.bundle._write import Exported as Exported
    from search.bundle._write import export_bundle as export_bundle


__all__ = [
    "BUNDLE_FORMAT",
    "FULL_SCHEDULE",
    "Exported",
    "Trained",
    "export_bundle",
    "load_bundle",
    "read_bundle",
    "train_bundle",
]


__getattr__ = lazy_exports(__name__)
