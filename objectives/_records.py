"""The public tiny-MNIST records' own training recipes, by the name of their design in
``spaces`` (``record-697``, ``record-997``, ``record-1936``), so a benchmark trains each
design under npas's protocol twice: with its own recipe and with npas's best searched one.

Each recipe is what the record's file says, translated to :class:`Recipe`; what a
:class:`Recipe` cannot say is replaced as described, so a run with it is the record's recipe
under npas's protocol, not a rerun of the record:

- The JoshWarn records lower the rate on plateaus of the *test* loss and stop early on the
  *test* accuracy, restoring the best epoch; npas never reads the test set for a choice and
  has no plateau schedule. They get ``step`` (÷10 at half and three quarters of the epochs)
  over a length of our choosing, stated below.
- tensorflow-addons' AdamW subtracts ``weight_decay · w`` every step, not ``lr ·
  weight_decay · w`` as torch's does: their 1e-6 at a rate of 1e-2 is torch's 1e-4 (at the
  peak rate; theirs does not fall with the rate).
- Keras's Adam has epsilon 1e-7 (torch's 1e-8) and keras's initialisers are not torch's (the
  designs' docstrings say which). The records scale the pixels by 1/255 inside the model; npas
  normalises the dataset instead. None of them augments.
"""

from __future__ import annotations

from objectives._recipe import Recipe

__all__ = ["RECORD_RECIPES"]

RECORD_RECIPES: dict[str, Recipe] = {
    # JoshWarn/Parameter-Efficient-MNIST nn_training_framework.py (commit bf8cd9e): AdamW
    # lr 1e-2, weight decay 1e-6 (line 183); ReduceLROnPlateau ×0.25 after 50 epochs, down to
    # 2.5e-5, EarlyStopping after 150 (lines 193-194); batch 256, at most 2,000 epochs (205);
    # ImageDataGenerator() shuffles, no augmentation (128). Ours: 300 epochs, the rate ÷10 at
    # 150 and 225 (a run of theirs lasts at least 150 epochs past its best).
    "record-697": Recipe(
        epochs=300,
        batch_size=256,
        optimizer="adamw",
        lr=1e-2,
        momentum=0.9,
        weight_decay=1e-4,
        schedule="step",
        label_smoothing=0.0,
        augment=False,
    ),
    # JoshWarn/Parameter-Efficient-MNIST 997_99.05.py (commit a811202): AdamW lr 1e-2, weight
    # decay 1e-6 (line 30); ReduceLROnPlateau ×0.1 after 8 epochs, EarlyStopping after 25
    # (40-41); batch 128, at most 200 epochs (47); no augmentation (46). Ours: 100 epochs, the
    # rate ÷10 at 50 and 75 (its own ×0.1 drops, at fixed epochs).
    "record-997": Recipe(
        epochs=100,
        batch_size=128,
        optimizer="adamw",
        lr=1e-2,
        momentum=0.9,
        weight_decay=1e-4,
        schedule="step",
        label_smoothing=0.0,
        augment=False,
    ),
    # ruslangrimov/mnist-minimal-model README.md (commit 37935b5): batch 32, 75 epochs
    # (lines 45-46), keras's Adam at its defaults (lr 1e-3, betas 0.9/0.999, no decay, line
    # 51), the last 10 % of the training images held out (63), the epoch-75 weights kept
    # (1936/weights.75-*.hdf5). Exact but for Adam's epsilon.
    "record-1936": Recipe(
        epochs=75,
        batch_size=32,
        optimizer="adamw",
        lr=1e-3,
        momentum=0.9,
        weight_decay=0.0,
        schedule="constant",
        label_smoothing=0.0,
        augment=False,
    ),
}
