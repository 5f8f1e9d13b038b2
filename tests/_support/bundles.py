"""The benchmark scripts as modules, for every benchmark's tests; and a retrained bundle's
accuracy read back through the users' tools (``search.load_bundle`` and onnxruntime)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import numpy as np
import onnxruntime as ort
import torch

from objectives.datasets import load
from search import load_bundle

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` imported as ``benchmarks.<name>``: once per process, as any
    module (their process pools pickle their functions by that name)."""
    return importlib.import_module(f"benchmarks.{name}")


def check_reads_back(folder: Path, dataset: str = "digits") -> dict:
    """A retrained bundle's metrics, once ``search.load_bundle`` and onnxruntime both give its
    recorded test accuracy on its seed's test split (the seed's own normalisation), to the
    image; AssertionError naming the three figures otherwise."""
    record = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    metrics = record["metrics"]
    test = load(dataset, seed=metrics["seed"], download=False).test
    with torch.no_grad():
        torch_acc = (load_bundle(folder)(test.x).argmax(1) == test.y).float().mean().item()
    session = ort.InferenceSession(str(folder / "model.onnx"))
    logits = session.run(None, {session.get_inputs()[0].name: test.x.numpy()})[0]
    onnx_acc = float((np.argmax(logits, 1) == test.y.numpy()).mean())
    want = metrics["test_accuracy"]
    assert max(abs(torch_acc - want), abs(onnx_acc - want)) < 0.5 / len(test), (
        f"{folder}: recorded {want}, load_bundle {torch_acc}, onnxruntime {onnx_acc}"
    )
    return metrics
