"""Each ablation of ``benchmarks/ablations`` is the record it names with the one change its
file name says, trained with that record's own recipe: a row of the leaderboard's "what each
change added" compares it with the record, so nothing else may differ."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from spaces import FAMILIES, build_model

ABLATIONS = Path(__file__).resolve().parents[2] / "benchmarks" / "ablations"
#: The records' own recipes, as record_designs.py reads them (a second load of that module
#: would replace the one its process pools pickle functions from).
RECIPES = ABLATIONS.parent / "record_recipes.yaml"
#: file name → (the record, the hyper-parameter changed, its value there)
CHANGES = {
    "record-997-slope0.01": ("record-997", "negative_slope", 0.01),
    "record-997-dropout-every": ("record-997", "dropout_at", "every"),
    "record-997-stem-same": ("record-997", "stem_padding", "same"),
    "record-997-width10": ("record-997", "widths", [10, 10, 10, 10]),
}


def test_every_ablation_file_is_listed() -> None:
    assert sorted(p.stem for p in ABLATIONS.glob("*.yaml")) == sorted(CHANGES)


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_an_ablation_is_its_record_with_one_change_and_the_records_recipe(name: str) -> None:
    record, key, value = CHANGES[name]
    config = yaml.safe_load((ABLATIONS / f"{name}.yaml").read_text("utf-8"))
    fixed = FAMILIES.get(record).hyper_fixed
    plain = {k: list(v) if isinstance(v, tuple) else v for k, v in fixed.items()}
    differ = {k for k in plain.keys() | config["hyper"].keys()
              if plain.get(k) != config["hyper"].get(k)}  # fmt: skip
    assert differ == {key} and config["hyper"][key] == value
    recipe = yaml.safe_load(RECIPES.read_text("utf-8"))[record]
    assert {k: recipe[k] for k in config["train"] if k in recipe} == {
        k: v for k, v in config["train"].items() if k in recipe}  # fmt: skip
    build_model(config["family"], (1, 28, 28), 10, **config["hyper"])
