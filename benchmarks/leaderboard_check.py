"""Re-evaluates every leaderboard bundle on the official 10,000 MNIST test images, as a user
would: the raw test files, the preprocessing the bundle's metrics.json records, its model.pt
through ``search.load_bundle`` and its model.onnx through onnxruntime.

    NPAS_DATA=../shared/data python benchmarks/leaderboard_check.py [FOLDER]

FOLDER defaults to benchmarks/results/leaderboard. Writes ``<FOLDER>_check.md``: per bundle
the recorded test accuracy and the two re-evaluated ones; exits 1 when any differs. The
preprocessing matters: each retraining seed carves its own validation split, so its
normalisation (mean, std of its training images) differs from another seed's by a little,
which moved a plain net's accuracy by one image in 5 of 20 bundles when the test set was
normalised with the default split's.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _idx(path: Path, offset: int) -> np.ndarray:
    with gzip.open(path) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def normalise(raw: np.ndarray, pre: dict) -> np.ndarray:
    """The raw images as the bundle's recorded preprocessing has them, in float32: raw ×
    multiply − subtract (one channel: MNIST)."""
    return raw * np.float32(pre["multiply"][0]) - np.float32(pre["subtract"][0])


def compare(outputs: list[np.ndarray], labels: np.ndarray, want: float
            ) -> tuple[list[float], bool]:  # fmt: skip
    """Each output's accuracy on ``labels``, and whether every one is the recorded ``want``
    to within half an image (the recorded figure is a float of a count of images)."""
    got = [float((out.argmax(1) == labels).mean()) for out in outputs]
    return got, all(abs(g - want) < 0.5 / len(labels) for g in got)


def main() -> None:
    import onnxruntime as ort
    import torch

    from search import load_bundle

    board = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "benchmarks/results/leaderboard"
    if not os.environ.get("NPAS_DATA"):
        sys.exit("leaderboard_check: set NPAS_DATA to the folder holding mnist/ (../shared/data)")
    mnist = Path(os.environ["NPAS_DATA"]) / "mnist"
    raw = _idx(mnist / "t10k-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28).astype(np.float32)
    labels = _idx(mnist / "t10k-labels-idx1-ubyte.gz", 8)
    rows, differ = [], 0
    for path in sorted(board.glob("le*/**/seed*/metrics.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        x = normalise(raw, record["data"]["preprocessing"])
        with torch.no_grad():
            logits = load_bundle(path.parent)(torch.from_numpy(x)).numpy()
        session = ort.InferenceSession(str(path.parent / "model.onnx"))
        name = session.get_inputs()[0].name
        onnx = np.concatenate([session.run(None, {name: x[i:i + 1000]})[0]
                               for i in range(0, len(x), 1000)])  # fmt: skip
        want = record["metrics"]["test_accuracy"]
        got, same = compare([logits, onnx], labels, want)
        differ += not same
        rows.append(f"| {path.parent.relative_to(board)} | {100 * want:.2f} % | "
                    f"{100 * got[0]:.2f} % | {100 * got[1]:.2f} % | {'yes' if same else 'NO'} |")
    lines = [
        f"# Re-evaluating `{board.relative_to(ROOT) if board.is_relative_to(ROOT) else board}`",
        "",
        "- Run: `NPAS_DATA=../shared/data python "
        + " ".join(["benchmarks/leaderboard_check.py", *sys.argv[1:]]) + "`",
        "- The official 10,000 MNIST test images from the raw IDX files, normalised as each "
        "bundle's metrics.json records (raw × multiply − subtract, float32); model.pt through "
        "`search.load_bundle`, model.onnx through onnxruntime, whole batches in float32.",
        f"- {len(rows)} bundles, {differ} differing from the accuracy recorded.",
        "",
        "| bundle | recorded | model.pt | model.onnx | same |",
        "|---|---:|---:|---:|---|",
        *rows,
    ]
    out = board.parent / f"{board.name}_check.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
