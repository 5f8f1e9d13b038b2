"""Bundles that deploy without npas (search.bundle._portable through search.export_bundle): every
family's model.onnx computes what its model.pt computes, at any batch size; a fresh interpreter
that cannot import npas (nor, for the ONNX part, torch) reproduces the exported test accuracy
from the bundle's files alone; an ONNX export that fails keeps the rest of the bundle and says
why.

Bundles are exported from one-trial studies (tests.search_tests.studies.npas_study) of trials
that search.trial.run_trial trains and saves, each a Shapeshifter network, so what is exported
is the materialised model, as for a real search.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import optuna
import pytest
import torch

from objectives import Splits, register_dataset
from objectives.datasets import DATASETS, load
from search.bundle import Exported, export_bundle, load_bundle
from search.bundle._folder import MANIFEST
from search.bundle._portable import OPSET, data_record, write_onnx
from search.trial import run_trial
from spaces import build_model, family_layouts, list_families
from tests.search_tests.studies import npas_study

#: Small hyper-parameters of every family (variants only fix arguments of these).
SMALL: dict[str, dict[str, Any]] = {
    "mlp": {"depth": 1, "width": 16},
    "convnet": {"depth": 2, "width": 4},
    "scs": {"widths": [4, 4], "kernel": 3},  # sharpened cosine similarity, max-abs pooling
    "resnet": {"depth": 8, "width": 4},
    "wrn": {"depth": 10, "widen": 1},
    "convmixer": {"dim": 8, "depth": 1, "kernel": 3, "patch": 2},
    # a separable conv applied twice with a norm of its own each time, a hidden head layer
    "minimal": {"stem": 4, "width": 6, "reuse": 2, "hidden": 8, "dropout": 0.1},
    # one block reused 3 times with skips, PReLU, whole-tensor norm, a widened separable block
    "sepnet": {"stem": 4, "width": 4, "blocks": 2, "reuse": 3, "residual": True,
               "activation": "prelu", "norm": "layer", "expansion": 2.0, "dropout": 0.1},
    # 1-D families on signals (SIGNALS): a flatten head, a strided stem, projection shortcuts
    "conv1d": {"depth": 2, "width": 4, "head": "flatten", "pooling": "avg", "dropout": 0.1},
    "sepconv1d": {"depth": 3, "width": 4, "stem_stride": 2, "activation": "prelu"},
    "resnet1d": {"depth": 2, "width": 4, "dropout": 0.1, "dropout_at": "every"},
}  # fmt: skip
#: The registered dataset of the 1-D families' bundles: 3 channels × 40 steps, 3 classes.
SIGNALS = "onnx-test-signals"
SIGNAL_SHAPE = (3, 40)
#: Run in the bundle folder by a fresh interpreter; prints one JSON line.
WITHOUT_NPAS = r"""
import importlib.abc, json, re, sys

class Blocked(importlib.abc.MetaPathFinder):
    names = {"spaces", "objectives", "search", "tests", "torch"}

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.names:
            raise ImportError(f"{name} is blocked: the bundle must run without it")
        return None

sys.meta_path.insert(0, Blocked())
blocked = None
try:
    import spaces
except ImportError as err:
    blocked = type(err).__name__
import numpy as np
from sklearn.datasets import load_digits

test = json.load(open("metrics.json"))["data"]["test"]
digits = load_digits()
raw = digits.images[test["indices"]][:, None]  # (N, 1, 8, 8), values 0..16
labels = digits.target[test["indices"]]
readme = open("README.md", encoding="utf-8").read()
snippet = re.search(r"## Run it without npas.*?```python\n(.*?)```", readme, re.S).group(1)
exec(snippet)  # the bundle README's onnxruntime code: defines x and logits
onnx_correct = int((logits.argmax(1) == labels).sum())
session = ort.InferenceSession("model.onnx")
parts = [session.run(None, {"input": x[i : i + 7]})[0] for i in range(0, len(x), 7)]
in_batches = int((np.concatenate(parts).argmax(1) == labels).sum())
torch_during_onnx = "torch" in sys.modules

Blocked.names.discard("torch")
import torch

program = torch.export.load("model.pt2").module()
with torch.no_grad():
    pt2 = program(torch.from_numpy(x)).argmax(1).numpy()
print(json.dumps({
    "blocked": blocked,
    "torch_during_onnx": torch_during_onnx,
    "onnx_correct": onnx_correct,
    "onnx_correct_in_batches_of_7": in_batches,
    "pt2_correct": int((pt2 == labels).sum()),
}))
"""


@pytest.fixture(scope="module", autouse=True)
def signals() -> Iterator[None]:
    """:data:`SIGNALS`: noisy sines whose frequency is the class, registered for this module."""

    @register_dataset(SIGNALS, source="tests/search_tests/bundle/test_onnx.py", layout="signal")
    def make() -> Splits:
        rng = np.random.default_rng(0)
        y = np.arange(240) % 3
        steps = np.linspace(0, 2 * np.pi, SIGNAL_SHAPE[1], dtype=np.float32)
        phase = rng.uniform(0, 2 * np.pi, size=(240, SIGNAL_SHAPE[0], 1))
        x = np.sin((y[:, None, None] + 1) * steps + phase) + 0.3 * rng.normal(size=phase.shape)
        return Splits(train=(x[:180].astype(np.float32), y[:180]),
                      test=(x[180:].astype(np.float32), y[180:]))  # fmt: skip

    yield
    DATASETS._entries.pop(SIGNALS, None)


def _sample(family: str) -> tuple[str, tuple[int, ...], int]:
    """The dataset a family's bundle is trained on, its sample shape and classes."""
    if "signal" in family_layouts(family):
        return SIGNALS, SIGNAL_SHAPE, 3
    return "digits", (1, 8, 8), 10


def _bundle(
    folder: Path, family: str, hyper: dict[str, Any], *, train: dict[str, Any]
) -> tuple[optuna.Study, Exported]:
    """A Shapeshifter trial at 3/4 of the plain model's parameters, trained, saved and
    exported as ``search export`` would."""
    torch.set_num_threads(1)
    dataset, shape, classes = _sample(family)
    plain = sum(p.numel() for p in build_model(family, shape, classes, **hyper).parameters())
    result = run_trial(
        {
            "dataset": dataset,
            "family": family,
            "hyper": hyper,
            "budget": plain * 3 // 4,
            "ssn": {"stores": 2, "mapping": "random"},
            "train": train,
            "indicators": ["params"],
            "artifact_dir": str(folder / "trial"),
        }
    )
    row = {k: result[k] for k in ("accuracy", "params")}
    study = npas_study([row], attrs={"artifact": result["artifact"]})
    return study, export_bundle(study, folder / "bundle", select="trial:0")


def _session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def test_every_family_is_covered() -> None:
    assert set(SMALL) == {f for f in list_families() if "-" not in f}
    assert {f for f in SMALL if "signal" in family_layouts(f)} == {
        "conv1d", "mlp", "resnet1d", "sepconv1d"}  # fmt: skip


@pytest.mark.slow  # an ONNX export (torch.export) per family
@pytest.mark.parametrize("family", sorted(SMALL))
def test_onnx_computes_what_pytorch_computes(family: str, tmp_path: Path) -> None:
    _, done = _bundle(tmp_path, family, SMALL[family], train={"epochs": 1, "max_steps": 3})
    assert done.onnx_error is None
    _, shape, classes = _sample(family)
    meta = json.loads((done.folder / "metrics.json").read_text(encoding="utf-8"))["onnx"]
    assert meta["opset"] == OPSET and meta["error"] is None
    assert meta["input"] == {"name": "input", "shape": ["batch", *shape], "dtype": "float32"}
    assert meta["output"] == {"name": "logits", "shape": ["batch", classes], "dtype": "float32"}
    proto = onnx.load(done.paths["model.onnx"])
    onnx.checker.check_model(proto, full_check=True)
    assert {o.domain: o.version for o in proto.opset_import}[""] == OPSET
    session = _session(done.paths["model.onnx"])
    assert session.get_inputs()[0].shape == ["batch", *shape]
    model = load_bundle(done.folder)
    program = torch.export.load(done.paths["model.pt2"]).module()
    generator = torch.Generator().manual_seed(0)
    for batch in (1, 5):  # neither is the batch of two the export traced with
        x = torch.randn(batch, *shape, generator=generator)
        with torch.no_grad():
            expected = model(x)
            traced = program(x)
        (got,) = session.run(["logits"], {"input": x.numpy()})
        np.testing.assert_allclose(got, expected.numpy(), rtol=0, atol=1e-4)
        torch.testing.assert_close(traced, expected, rtol=0, atol=1e-4)


@pytest.mark.slow  # two ONNX exports
def test_the_graph_does_not_depend_on_the_example_s_layout(tmp_path: Path) -> None:
    # A one-channel batch has channels-last strides as well as the standard ones; which it
    # carries depends on how the split was made. Traced with the former, a pooled net's graph
    # once gained an as_strided subgraph (Shape, Range, Gather...) that no pass folded.
    model = build_model("sepnet", (1, 8, 8), 10, **SMALL["sepnet"]).eval()
    x = torch.randn(2, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    channels_last = x.to(memory_format=torch.channels_last)
    assert channels_last.stride() != x.stride() and torch.equal(channels_last, x)
    graphs = []
    for name, example in (("standard", x), ("channels_last", channels_last)):
        folder = tmp_path / name
        folder.mkdir()
        assert write_onnx(model, example, folder)["error"] is None
        graphs.append([n.op_type for n in onnx.load(folder / "model.onnx").graph.node])
    assert graphs[0] == graphs[1] and "Range" not in graphs[1]


def test_the_data_record_rebuilds_the_test_inputs_bit_for_bit() -> None:
    from sklearn.datasets import load_digits

    loaded = {seed: load("digits", seed=seed, progress=False) for seed in (0, 1)}
    records = {seed: data_record(data) for seed, data in loaded.items()}
    # The seed draws the validation split, so the normalisation, never the test split.
    assert records[0]["test"] == records[1]["test"]
    assert records[0]["preprocessing"]["mean"] != records[1]["preprocessing"]["mean"]
    digits = load_digits()
    for seed, record in records.items():
        pre, indices = record["preprocessing"], record["test"]["indices"]
        assert pre["reproduces_npas"] is True and pre["pixel_scale"] == 16.0
        assert record["seed"] == seed and record["splits"]["test"] == len(indices) == 360
        mul, sub = (np.float32(pre[k])[:, None, None] for k in ("multiply", "subtract"))
        x = digits.images[indices][:, None].astype(np.float32) * mul - sub  # numpy, as a user
        np.testing.assert_array_equal(x, loaded[seed].test.x.numpy())
        np.testing.assert_array_equal(digits.target[indices], loaded[seed].test.y.numpy())


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory) -> tuple[optuna.Study, Exported]:
    """A Shapeshifter ConvNet that learns digits (about 90 % test accuracy in 8 epochs)."""
    folder = tmp_path_factory.mktemp("digits")
    return _bundle(folder, "convnet", {"depth": 2, "width": 8}, train={"epochs": 8})


@pytest.mark.slow  # an ONNX export (torch.export) per family
def test_the_bundle_alone_reproduces_the_exported_test_accuracy(digits) -> None:
    _, done = digits
    recorded = done.test_accuracy  # the one read of the test split, by the export
    meta = json.loads((done.folder / "metrics.json").read_text(encoding="utf-8"))
    assert meta["data"]["preprocessing"]["reproduces_npas"] is True
    assert len(meta["data"]["test"]["indices"]) == meta["data"]["test"]["size"] == 360
    # A fresh interpreter in which spaces, objectives and search (and, until the ONNX part is
    # done, torch) cannot be imported: sklearn's digits, metrics.json and the bundle README's
    # own onnxruntime snippet, then model.pt2 with torch.
    run = subprocess.run(
        [sys.executable, "-c", WITHOUT_NPAS],
        cwd=done.folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["blocked"] == "ImportError"
    assert out["torch_during_onnx"] is False
    expected = round(recorded * 360)
    # Exactly: the inputs are bit-identical to npas's and no logit pair is within float noise.
    assert out["onnx_correct"] == out["onnx_correct_in_batches_of_7"] == expected
    assert out["pt2_correct"] == expected == meta["exported"]["test_correct"]
    # Kilobytes: the traced sample input is two images, not the test set it was sliced from.
    assert (done.folder / "model.pt2").stat().st_size < 50_000  # 21 kB; with the split: 113
    assert recorded > 0.5, "a model that learnt something, so the count is not trivial"


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (RuntimeError("Failed to export the model"), "caused by ValueError: unsupported op"),
        (ModuleNotFoundError("No module named 'onnxscript'"), "pip install"),
    ],
)
def test_a_failed_onnx_export_keeps_the_bundle_and_says_why(
    digits, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception, reason: str
) -> None:
    study, done = digits
    folder = tmp_path / "bundle"
    shutil.copytree(done.folder, folder)  # a model.onnx of an earlier export is in it

    def fail(*args: Any, **kwargs: Any) -> None:
        if isinstance(error, RuntimeError):
            raise error from ValueError("unsupported op")
        raise error

    monkeypatch.setattr(torch.onnx, "export", fail)
    with pytest.warns(UserWarning, match=r"no model\.onnx or model\.pt2 .*rest of the bundle"):
        again = export_bundle(study, folder, select="trial:0", replace=True)
    assert again.onnx_error is not None and reason in again.onnx_error
    assert set(again.paths) == {"config.yaml", "model.pt", "metrics.json", "README.md", MANIFEST}
    assert all(p.is_file() for p in again.paths.values())
    assert not (folder / "model.onnx").exists() and not (folder / "model.pt2").exists()
    meta = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    assert meta["onnx"]["file"] is None and meta["onnx"]["error"] == again.onnx_error
    assert meta["data"]["preprocessing"]["reproduces_npas"] is True
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert "has no `model.onnx`" in readme and again.onnx_error in readme
    assert again.test_accuracy == done.test_accuracy
    load_bundle(folder)  # model.pt is whole
