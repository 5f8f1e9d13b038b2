"""The unaided benchmark's datasets as ``.npz`` files (benchmarks/protocols/unaided.yaml).

Why: the signal sets are aeon 1.6.0's bundled copies of UCR/UEA archive sets, and aeon itself
pins pandas below what npas installs; its wheel is a zip, so the ``.ts`` files are read from it
without installing it (``pip download --no-deps aeon==1.6.0``), converted once and committed with
their digests. The table (scikit-learn's breast cancer) is split as the protocol says.

    pip download --no-deps aeon==1.6.0 -d /tmp/aeon
    python benchmarks/unaided_data.py /tmp/aeon/aeon-1.6.0-py3-none-any.whl

writes ``benchmarks/data/unaided/<name>.npz`` (``x_train``, ``y_train``, ``x_test``, ``y_test``:
signals N×C×L float32, labels int64 from 0 in the sorted order of the archive's labels) and
``SOURCES.md`` beside them.
"""

from __future__ import annotations

import argparse
import hashlib
import zipfile
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "data" / "unaided"
#: Protocol name → the archive's name of the set.
SIGNALS = {
    "japanese_vowels": "JapaneseVowels",
    "osu_leaf": "OSULeaf",
    "italy_power": "ItalyPowerDemand",
    "acsf1": "ACSF1",
}


def read_ts(text: str) -> tuple[list[np.ndarray], list[str]]:
    """The cases of a ``.ts`` file (sktime/aeon format): each a C×L array (its own length), and
    its label. Missing values (``?``) are refused: none of the protocol's sets has any."""
    lines = iter(text.splitlines())
    for line in lines:
        if line.strip().lower() == "@data":
            break
    cases, labels = [], []
    for line in lines:
        if not line.strip():
            continue
        *channels, label = line.strip().split(":")
        if any("?" in c for c in channels):
            raise ValueError(f"a case with missing values: {line[:60]}…")
        cases.append(np.array([[float(v) for v in c.split(",")] for c in channels]))
        labels.append(label.strip())
    return cases, labels


def padded(cases: list[np.ndarray], length: int) -> np.ndarray:
    """N×C×length float32: each case zero-padded at its end (JapaneseVowels' lengths vary)."""
    out = np.zeros((len(cases), cases[0].shape[0], length), dtype=np.float32)
    for i, case in enumerate(cases):
        out[i, :, : case.shape[1]] = case
    return out


def signal_set(wheel: zipfile.ZipFile, name: str) -> dict[str, np.ndarray]:
    """The archive set ``name``'s official train and test splits as the npz's arrays."""
    split = {}
    for part in ("TRAIN", "TEST"):
        path = next(n for n in wheel.namelist() if n.endswith(f"/{name}/{name}_{part}.ts"))
        split[part] = read_ts(wheel.read(path).decode("utf-8"))
    length = max(c.shape[1] for cases, _ in split.values() for c in cases)
    classes = sorted(set(split["TRAIN"][1]) | set(split["TEST"][1]))
    index = {label: i for i, label in enumerate(classes)}
    arrays = {}
    for part, key in (("TRAIN", "train"), ("TEST", "test")):
        cases, labels = split[part]
        arrays[f"x_{key}"] = padded(cases, length)
        arrays[f"y_{key}"] = np.array([index[label] for label in labels], dtype=np.int64)
    return arrays


def breast_cancer() -> dict[str, np.ndarray]:
    """scikit-learn's breast cancer table, a stratified 25 % test split (random_state 0)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    x, y = load_breast_cancer(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        x.astype(np.float32), y.astype(np.int64), test_size=0.25, stratify=y, random_state=0
    )
    return {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", help="aeon-1.6.0-py3-none-any.whl (pip download --no-deps)")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    rows = ["| file | source | x_train | x_test | classes | sha256 |", "|---|---|---|---|---|---|"]
    with zipfile.ZipFile(args.wheel) as wheel:
        sets = {key: (signal_set(wheel, name), f"aeon 1.6.0 bundled {name}")
                for key, name in SIGNALS.items()}  # fmt: skip
    sets["breast_cancer"] = (breast_cancer(), "scikit-learn load_breast_cancer, 25 % test")
    for key, (arrays, source) in sets.items():
        path = OUT / f"{key}.npz"
        np.savez_compressed(path, **arrays)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        classes = len(np.unique(arrays["y_train"]))
        rows.append(f"| {path.name} | {source} | {arrays['x_train'].shape} | "
                    f"{arrays['x_test'].shape} | {classes} | {digest} |")  # fmt: skip
    (OUT / "SOURCES.md").write_text(
        "# The unaided benchmark's datasets\n\nWritten by `benchmarks/unaided_data.py` (its "
        "docstring says how); the protocol is `benchmarks/protocols/unaided.yaml`.\n\n"
        + "\n".join(rows) + "\n"
    )
    print("\n".join(rows))


if __name__ == "__main__":
    main()
