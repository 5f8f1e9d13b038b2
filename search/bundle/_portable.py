"""What a bundle needs to run without npas: the model as ONNX (and as a torch.export program),
and the test split and preprocessing that reproduce its recorded test accuracy.

Exporter: ``torch.onnx.export(dynamo=True)``, which traces with ``torch.export`` and needs
onnxscript. With torch 2.13 on the CPU it and the TorchScript exporter both export every
family (SCS included) to within 2e-7 of PyTorch, but the TorchScript one is deprecated (torch
2.9 warns that it will be removed) and yields no ``torch.export`` program; the dynamo one
yields the traced program it translated, which is saved as ``model.pt2`` at no extra cost.

Opset :data:`OPSET` (18) is the one torch's translation library writes, so no version
converter runs; onnxruntime runs it from 1.14 on, as do runtimes that lag behind the newest
opsets. The batch dimension is dynamic (named ``batch``); the rest of the shape is fixed.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.model_selection import train_test_split
from torch import nn

from objectives.datasets import DATASETS, Data, DatasetInfo
from search._imports import install_command, require

__all__ = ["ONNX_FILE", "OPSET", "PROGRAM_FILE", "data_record", "write_onnx"]

#: ONNX operator set of every bundle's model.onnx.
OPSET = 18
ONNX_FILE = "model.onnx"
PROGRAM_FILE = "model.pt2"
_INPUT = "input"
_OUTPUT = "logits"
_INSTALL = install_command("onnx")
#: What objectives.datasets does for a dataset without a test split (digits): its definition.
_HELD_OUT = {"fraction": 0.2, "random_state": 0}


@contextmanager
def _quiet() -> Iterator[None]:
    """Hides the exporter's own chatter (torch-internal deprecations, "torchvision is not
    installed"), which the user cannot act on; errors still propagate."""
    log = logging.getLogger("torch.onnx")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        log.setLevel(level)


def _reason(err: BaseException) -> str:
    """One line: the error and, for torch's wrapped errors, the root cause."""
    root = err
    while root.__cause__ is not None:
        root = root.__cause__

    def line(e: BaseException) -> str:
        text = next((t.strip() for t in str(e).splitlines() if t.strip()), "")
        return f"{type(e).__name__}: {text}"[:300]

    why = line(err) + (f" (caused by {line(root)})" if root is not err else "")
    return f"{why}; {_INSTALL}" if isinstance(root, ImportError) else why


def _spec(value: Any) -> dict[str, Any]:
    """An ONNX graph input or output as recorded: name, shape (``batch`` for the dynamic
    dimension) and element type."""
    shape = [d if isinstance(d, int) else str(d.value) for d in value.shape]
    return {"name": value.name, "shape": shape, "dtype": str(value.dtype.numpy())}


def write_onnx(model: nn.Module, example: torch.Tensor, folder: Path) -> dict[str, Any]:
    """Writes ``model.onnx`` and ``model.pt2`` of ``model`` (eval mode, CPU) into ``folder``.

    A failure is not raised: the bundle's other files are still worth having (they retrain and
    load the model), so the record says why, and neither file is left behind, not even one of
    an earlier export into the same folder.

    Args:
        model: The plain (materialised) module.
        example: A batch of at least two inputs to trace with (a batch of one would fix the
            batch dimension).
        folder: The bundle folder.

    Returns:
        The metrics.json ``onnx`` record: ``file`` and ``program`` (None when missing),
        ``opset``, ``exporter``, ``input`` and ``output`` (name, shape, dtype), ``error``.
    """
    onnx_path, program_path = folder / ONNX_FILE, folder / PROGRAM_FILE
    record: dict[str, Any] = {
        "file": None,
        "program": None,
        "opset": OPSET,
        "exporter": f"torch.onnx.export(dynamo=True), torch {torch.__version__}",
        "input": None,
        "output": None,
        "error": None,
    }
    try:
        for module in ("onnx", "onnxscript"):  # what torch.onnx.export(dynamo=True) imports
            require(module, purpose="the bundle's model.onnx")
        with _quiet():
            program = torch.onnx.export(
                model,
                # A copy: model.pt2 keeps its sample input, with the whole storage of a view
                # (a slice of the test set made it 30 MB for a 1,000-parameter model). In the
                # standard layout: one channel's tensor can carry channels-last strides too
                # (both layouts at once), and traced with those the graph gained an unfolded
                # as_strided subgraph (10 more nodes, Shape to Gather) in some bundles.
                (example.clone(memory_format=torch.contiguous_format),),
                dynamo=True,
                opset_version=OPSET,
                input_names=[_INPUT],
                output_names=[_OUTPUT],
                dynamic_shapes=({0: torch.export.Dim("batch", min=1)},),
                verbose=False,
            )
            assert program is not None  # no file given: the program is returned
            program.save(onnx_path, external_data=False)
            exported = program.exported_program
            assert exported is not None  # the dynamo exporter keeps the program it traced
            torch.export.save(exported, program_path)
        graph = program.model.graph
        record.update(
            file=ONNX_FILE,
            program=PROGRAM_FILE,
            exporter=f"{record['exporter']}, onnxscript {metadata.version('onnxscript')}",
            input=_spec(graph.inputs[0]),
            output=_spec(graph.outputs[0]),
        )
    except Exception as err:  # torch.export and the ONNX translation raise many kinds
        onnx_path.unlink(missing_ok=True)
        program_path.unlink(missing_ok=True)
        record["error"] = _reason(err)
    return record


def data_record(data: Data) -> dict[str, Any]:
    """How to rebuild ``data.test`` without npas: the source, the test split and the
    preprocessing, checked to give the very tensors npas evaluated on.

    The raw arrays are read once more (digits: scikit-learn's copy; the others: the files
    ``load`` used) for the pixel scale and the check. ``multiply`` and ``subtract`` are the
    float32 constants npas applies, so ``raw * multiply - subtract`` in float32 is exact;
    ``(raw / pixel_scale - mean) / std`` rounds differently in the last bit.
    """
    info = DATASETS.get(data.name)
    if not isinstance(info, DatasetInfo):
        return _user_data_record(data)
    files = [Path(f["path"]) for f in data.provenance.get("files", [])]
    raw = info.read(files)
    mean = torch.tensor(data.mean, dtype=torch.float32)
    std = torch.tensor(data.std, dtype=torch.float32)
    multiply = 1.0 / (raw.scale * std)
    subtract = mean / std
    if raw.x_test is None or raw.y_test is None:
        held = train_test_split(
            np.arange(len(raw.y_train)),
            test_size=_HELD_OUT["fraction"],
            stratify=raw.y_train,
            random_state=_HELD_OUT["random_state"],
        )[1]
        indices: list[int] | None = sorted(int(i) for i in held)
        x_test, y_test = raw.x_train[indices], raw.y_train[indices]
        split = (
            f"a stratified {_HELD_OUT['fraction']:.0%} of the samples (sklearn "
            f"train_test_split, random_state={_HELD_OUT['random_state']}), sorted"
        )
    else:
        indices, x_test, y_test = None, raw.x_test, raw.y_test
        split = "the official test files, every sample in file order"
    x = torch.from_numpy(x_test).float().mul_(multiply[:, None, None])
    x.sub_(subtract[:, None, None])
    fed = torch.cat([xb.cpu() for xb, _ in data.test.batches(1024, shuffle=False)])
    exact = torch.equal(x, fed) and torch.equal(torch.from_numpy(y_test).long(), data.test.y.cpu())
    prov = data.provenance
    return {
        "dataset": data.name,
        "source": prov.get("source")
        or [{"file": Path(f["path"]).name, "md5": f["md5"]} for f in prov.get("files", [])],
        "test": {"size": len(data.test), "split": split, "indices": indices},
        "preprocessing": {
            "input": f"float32, shape (N, {', '.join(map(str, data.in_shape))}), channels first",
            "formula": "x = raw * multiply - subtract, per channel, in float32 "
            "(= (raw / pixel_scale - mean) / std)",
            "pixel_scale": float(raw.scale),
            "mean": list(data.mean),
            "std": list(data.std),
            "multiply": multiply.tolist(),
            "subtract": subtract.tolist(),
            "reproduces_npas": exact,
        },
        "classes": prov.get("classes"),
        "seed": prov.get("seed"),
        "val_size": prov.get("val_size"),
        "train_size": prov.get("train_size"),
        "splits": prov.get("splits"),
        "note": "the seed draws the validation split (and the train_size subset), which fixes "
        "mean and std; the test split never depends on it",
    }


def _user_data_record(data: Data) -> dict[str, Any]:
    """A user's dataset: its name and the source the user gave (never a built-in's), the
    split sizes and the normalisation npas applied to the raw samples it read."""
    prov = data.provenance
    mean = torch.tensor(data.mean, dtype=torch.float32)
    std = torch.tensor(data.std, dtype=torch.float32)
    scale = float(prov["pixel_scale"])
    return {
        "dataset": data.name,
        "source": prov["source"],
        "declared": prov.get("declared"),
        "test": {
            "size": len(data.test),
            "split": "the dataset's test split as npas read it",
            "indices": None,
        },
        "preprocessing": {
            "input": f"float32, shape (N, {', '.join(map(str, data.in_shape))}), channels first",
            "formula": "x = raw * multiply - subtract, per channel, in float32 "
            "(= (raw / pixel_scale - mean) / std)",
            "pixel_scale": scale,
            "mean": list(data.mean),
            "std": list(data.std),
            "multiply": (1.0 / (scale * std)).tolist(),
            "subtract": (mean / std).tolist(),
            "stats": prov.get("stats"),
        },
        "classes": prov.get("classes"),
        "seed": prov.get("seed"),
        "val_size": prov.get("val_size"),
        "train_size": prov.get("train_size"),
        "splits": prov.get("splits"),
        "streamed": prov.get("streamed"),
    }
