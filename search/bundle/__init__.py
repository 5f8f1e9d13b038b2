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

from spaces import lazy_getattr

# What the lazy map below exports, for type checkers and editors (tests/test_static_exports.py
# keeps the two the same); at run time each name still loads when first used.
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

_MODULES = {
    "_files": ("BUNDLE_FORMAT", "load_bundle", "read_bundle"),
    "_write": ("Exported", "export_bundle"),
    "_retrain": ("FULL_SCHEDULE", "Trained", "train_bundle"),
}
_EXPORTS = {name: f"{__name__}.{module}" for module, names in _MODULES.items() for name in names}

#: Names npas's other packages import from here: not the user API (not in ``__all__``),
#: free to change with them.
_SHARED = {
    "bundle_target": "search.bundle._folder",
    "check_device": "search.bundle._retrain",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS, shared=_SHARED)
