"""The README.md of a bundle: what it is, how to load it with npas or without (onnxruntime,
torch alone), and how to train it again."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import optuna
import yaml

from search.bundle._portable import ONNX_FILE, PROGRAM_FILE
from search.pareto import Selection, format_value

__all__ = ["readme"]


def readme(
    study: optuna.Study,
    number: int,
    chosen: Selection,
    saved: Mapping[str, Any],
    record: Mapping[str, Any],
) -> str:
    metrics = record["metrics"]
    shown = [n for n, _ in record["objectives"]] + ["accuracy"]
    lines = "\n".join(
        f"| {n} | {format_value(metrics.get(n))} |" for n in dict.fromkeys(shown) if n in metrics
    )
    budget = saved["budget"]
    ssn = (
        f"It was searched as a Shapeshifter network with a budget of {budget} parameters; the "
        "weights here are materialised (generated once), so the module is a plain "
        f"`{saved['family']}` with {record['exported']['materialised_params']} parameters."
        if budget is not None
        else "It was searched as a plain model (no parameter budget)."
    )
    return f"""# npas bundle: trial {number} of `{study.study_name}`

Chosen by `{chosen.selector}`: {chosen.reason}.

Family `{saved["family"]}`, hyper-parameters `{json.dumps(saved["hyper"])}`, input shape
{tuple(saved["in_shape"])}, {saved["num_classes"]} classes{_classes(record)}. {ssn}

| metric (as the search recorded it; accuracy: validation) | value |
|---|---|
{lines}

The exported model scores {record["exported"]["test_accuracy"]:.4f} on the test split
({record["exported"]["test_correct"]:,} of {record["data"]["test"]["size"]:,}), read once by
`search export`, for this model only, after the search chose it on validation.
`metrics.json` holds every indicator with the conditions it was measured under.
{_checkpoint_readme(record["checkpoint"])}
## Load it in your own code

{_load_readme(saved)}
{_inputs_readme(saved, record)}

{_portable_readme(record)}
## Train it again

`search train <this folder> [--epochs N]` retrains the configuration from scratch at a full
schedule (same family, budget and parameter-store mapping) and writes `train.json` with the
accuracy and cost panel next to the search's values. `config.yaml` is the trial config:
`search.trial.run_trial(config)` runs it as the search did.
"""


def _load_readme(saved: Mapping[str, Any]) -> str:
    """The README's load snippet: torch and ``build_model`` for a built-in family; for one of
    the user's, ``load_bundle``, which imports the modules the search imported first (plain
    ``build_model`` raised ``unknown family``)."""
    imports = saved["trial_config"].get("imports") or []
    if not imports:
        return """```python
import torch
from spaces import build_model

blob = torch.load("model.pt", map_location="cpu", weights_only=True)
model = build_model(blob["family"], blob["in_shape"], blob["num_classes"], **blob["hyper"])
model.load_state_dict(blob["state_dict"])
model.eval()
```"""
    named = ", ".join(f"`{entry}`" for entry in imports)
    return f"""Family `{saved["family"]}` is registered by your own code, which the search
imported: {named}. `load_bundle` imports it first (run it where those files or modules
can be found), then builds the model and loads its weights, in eval mode:

```python
from search.bundle import load_bundle

model = load_bundle(".")  # the folder of this README
```"""


def _inputs_readme(saved: Mapping[str, Any], record: Mapping[str, Any]) -> str:
    """The README's line on the inputs the model expects: the dataset by its name, or the
    user's declaration as YAML, and the normalisation its data had."""
    dataset = saved["trial_config"]["dataset"]
    scaled = _scaling(record["data"]["preprocessing"]["pixel_scale"])
    norm = saved["normalisation"]
    per = "feature" if len(saved["in_shape"]) == 1 else "channel"
    stats = (
        f"then per {per} `(x - mean) / std` with mean {[round(m, 6) for m in norm['mean']]} "
        f"and std {[round(s, 6) for s in norm['std']]}"
    )
    if isinstance(dataset, Mapping):
        declared = yaml.safe_dump({"dataset": dict(dataset)}, sort_keys=False).strip()
        return (
            f"Inputs are normalised as the search normalised its dataset `{dataset['name']}`, "
            f"which its config declared as\n\n```yaml\n{declared}\n```\n\n"
            f"Its inputs are {scaled}, {stats}."
        )
    return (
        f"Inputs are normalised as `objectives.datasets.load({dataset!r})` does it: {scaled}, "
        f"{stats}."
    )


def _scaling(pixel_scale: float) -> str:
    """What the data's ``pixel_scale`` did to the raw values (1: nothing; a float dataset's
    values are not pixels, and were once said to be scaled to [0, 1])."""
    if pixel_scale == 1:
        return "the raw values as given (`pixel_scale` 1)"
    return f"the raw values divided by `pixel_scale` {pixel_scale:g} (pixels to [0, 1])"


def _checkpoint_readme(source: Mapping[str, Any] | None) -> str:
    """The README's line on where the weights came from, when from a checkpoint."""
    if source is None:
        return ""
    return (
        f"\nThe weights are the trial's checkpoint after epoch {source['epoch']} "
        f"(`{source['folder']}`), kept here as `{source['file']}`: `search train <this "
        "folder> --from-checkpoint` starts from it.\n"
    )


#: Rank of one sample → how the snippet broadcasts the per-channel constants, and what ``raw``
#: holds (an image's channel is axis 1 of N×C×H×W, a signal's of N×C×L, a table's features
#: are the columns of N×F).
_RAW = {
    3: ("[:, None, None]", "N×C×H×W pixel values as published"),
    2: ("[:, None]", "N×C×L signals, values as given"),
    1: ("", "N×F rows of features, values as given (one constant per feature)"),
}


def _portable_readme(record: Mapping[str, Any]) -> str:
    """The README's section on running the bundle with onnxruntime or torch alone."""
    onnx, data = record["onnx"], record["data"]
    test, source = data["test"], data["source"]
    where = test["split"] + (
        " (`data.test.indices`: positions in the source)" if test["indices"] is not None else ""
    )
    origin = source if isinstance(source, str) else "the files in `data.source`"
    common = (
        f"The test split is {test['size']} samples of `{data['dataset']}` from {origin}: "
        f"{where}. Raw values are as published, channels first; the model's inputs are "
        f"{_scaling(data['preprocessing']['pixel_scale'])}, normalised as above; the exported "
        f"model gets {record['exported']['test_correct']} of them right.\n"
    )
    if onnx["file"] is None:
        return f"""## Run it without npas

This bundle has no `{ONNX_FILE}` or `{PROGRAM_FILE}`: {onnx["error"]}. `model.pt` loads
as above. {common}"""
    inp, out = onnx["input"], onnx["output"]
    axes, raw = _RAW[len(inp["shape"]) - 1]
    # one-channel signals: an N×L array (what an npz with `layout: signal` may hold) needs
    # its channel axis, as npas added it
    lone = len(inp["shape"]) == 3 and inp["shape"][1] == 1
    channel = ("raw = raw[:, None] if raw.ndim == 2 else raw  # N×L (an npz with `layout: "
               "signal`): add C = 1\n") if lone else ""  # fmt: skip
    shape_in, shape_out = (", ".join(map(str, v["shape"])) for v in (inp, out))
    return f"""## Run it without npas

`{ONNX_FILE}` (ONNX opset {onnx["opset"]}) takes `{inp["name"]}`, {inp["dtype"]} of shape
({shape_in}) (the `batch` dimension is dynamic), and returns `{out["name"]}` ({shape_out}).
Preprocess with the float32 constants in `metrics.json` → `data.preprocessing`: this gives
exactly what npas fed the model, while `(raw / pixel_scale - mean) / std` can round differently
in the last bit:

```python
import json, numpy as np, onnxruntime as ort
pre = json.load(open("metrics.json"))["data"]["preprocessing"]
scale, shift = (np.asarray(pre[k], np.float32){axes} for k in ("multiply", "subtract"))
{channel}x = raw.astype(np.float32) * scale - shift  # raw: {raw}
logits = ort.InferenceSession("{ONNX_FILE}").run(None, {{"{inp["name"]}": x}})[0]
```

{common}
`{PROGRAM_FILE}` is the same model as a `torch.export` program, for torch alone:
`torch.export.load("{PROGRAM_FILE}").module()(torch.from_numpy(x))`.
"""


def _classes(record: Mapping[str, Any]) -> str:
    """Which label each output stands for, where the data's labels were not its indices
    (mapped in sorted order) or named them (an image folder's folders)."""
    names = record["data"].get("classes")
    if not names:
        return ""
    return (f" (output i is the class `classes[i]` of `metrics.json`'s `data`: "
            f"{', '.join(map(repr, names[:10]))}{', ...' if len(names) > 10 else ''})")
