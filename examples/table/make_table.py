"""Writes the example's table: rows of 12 numeric features in three classes, as an .npz.

``python make_table.py DIR`` makes ``DIR/table.npz`` with ``x_train`` (300, 12), ``y_train``,
``x_test`` (90, 12) and ``y_test``: each class a Gaussian blob, each feature on its own scale
(from thousandths to thousands, as measured quantities are), so that npas's per-feature
standardisation with the training split's mean and std is what makes them comparable. The same
seed writes the same file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

FEATURES = 12
CLASSES = 3


def main(root: str) -> None:
    rng = np.random.default_rng(0)
    centres = rng.normal(0, 1.5, (CLASSES, FEATURES))
    scales = 10.0 ** rng.uniform(-3, 3, FEATURES)  # each feature in its own unit
    y = rng.permutation(np.repeat(np.arange(CLASSES), 130))
    x = ((centres[y] + rng.normal(0, 1, (len(y), FEATURES))) * scales).astype(np.float32)
    Path(root).mkdir(parents=True, exist_ok=True)
    out = Path(root) / "table.npz"
    np.savez(out, x_train=x[:300], y_train=y[:300], x_test=x[300:], y_test=y[300:])
    print(f"wrote {len(y)} rows of {FEATURES} features to {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data")
