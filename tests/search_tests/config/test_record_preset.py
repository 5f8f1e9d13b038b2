"""The mnist-record preset: the record design and its recipe in one space, accepted by the
sepnet family, and one trial of it trains."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

from search.config import SearchConfig, load_preset
from search.trial import run_trial
from spaces import build_model
from spaces._families.sepnet import SepNet


@pytest.fixture(scope="module")
def record() -> SearchConfig:
    return load_preset("mnist-record")


def test_it_searches_the_design_the_recipe_and_sharing_with_promotion(
    record: SearchConfig,
) -> None:
    names = set(record.space.names)
    design = {"stem", "stem_kernel", "stem_pool", "stages", "blocks", "width", "growth",
              "separable", "expansion", "reuse", "norm", "activation", "dropout"}  # fmt: skip
    assert {f"sepnet.{n}" for n in design} <= names
    recipe = {"optimizer", "lr", "weight_decay", "schedule", "label_smoothing", "augment"}
    assert {f"train.{n}" for n in recipe} <= names
    assert set(record.space["train.optimizer"].choices) == {"sgd", "adamw"}
    assert set(record.space["train.schedule"].choices) == {"onecycle", "cosine"}
    lr = record.space["train.lr"]
    assert (lr.low, lr.high, lr.log) == (1e-3, 5e-2, True)
    assert set(record.space["sepnet.norm"].choices) == {"none", "batch", "layer"}
    assert set(record.space["sepnet.activation"].choices) == {"relu", "leaky_relu", "prelu"}
    assert set(record.space["ssn.mapping"].choices) == {"none", "single"}
    assert record.fixed["family"] == "sepnet"
    assert record.objective_names == ["accuracy", "params", "flops_infer"]
    assert record.constraint_texts == ["params <= 1000", "flops_infer <= 2000000"]
    assert (record.scheduler.name, record.scheduler.type) == ("moasha", "promotion")
    # every trial runs the schedule the leaderboard retrains at, and the last rung is its end
    assert record.train["epochs"] == record.max_epochs == 81


def test_every_dimension_is_a_sepnet_hyper_parameter_and_each_value_builds(
    record: SearchConfig,
) -> None:
    accepted = set(inspect.signature(SepNet).parameters) - {"in_shape", "num_classes"}
    dims = [n for n in record.space.names if n.startswith("sepnet.")]
    assert {n.partition(".")[2] for n in dims} <= accepted
    for name in dims:
        dim = record.space[name]
        values = dim.choices if hasattr(dim, "choices") else (dim.low, dim.high)
        for value in values:  # each value alone, the others at the family's defaults
            build_model("sepnet", (1, 28, 28), 10, **{name.partition(".")[2]: value})
    rng = np.random.default_rng(0)
    for _ in range(40):  # and together, as the search samples them
        cfg = record.trial_config(record.space.sample(rng))
        build_model(cfg.family, (1, 28, 28), 10, **cfg.hyper)


def test_one_trial_of_each_kind_trains_on_digits(record: SearchConfig) -> None:
    rng = np.random.default_rng(3)
    done = {}
    while len(done) < 2:
        cfg = record.trial_config(record.space.sample(rng))
        kind = "plain" if cfg.budget is None else "shared"
        if kind in done:
            continue
        tiny = cfg.replace(dataset="digits", train={"epochs": 1}, indicators=["params"])
        result = run_trial(tiny)
        if result["feasible"]:  # an infeasible point is gated before training: draw again
            assert 0.0 <= result["accuracy"] <= 1.0 and result["epochs"] == 1
            assert result["params"] <= 1000
            done[kind] = result


def test_the_seeded_preset_starts_from_record_designs_within_its_limits() -> None:
    """Each start point is the records' design (separable blocks, a block reused, LeakyReLU,
    no norm) within 1,000 parameters and 2 MFLOPs; the Shapeshifted ones generate more weights
    than they have parameters."""
    import torch

    from objectives import measure
    from search.config._start import complete

    seeded = load_preset("mnist-record-seeded")
    assert seeded.train_size == 20000 and seeded.max_epochs == seeded.train["epochs"] == 81
    kinds = []
    for point in seeded.start:
        cfg = seeded.trial_config(complete(seeded.space, point, {}))
        net = build_model(cfg.family, (1, 28, 28), 10, **cfg.hyper)
        weights = sum(p.numel() for p in net.parameters())
        flops = measure(net, torch.zeros(1, 1, 28, 28), ["flops_infer"])
        assert flops["flops_infer"] <= 2_000_000
        assert cfg.hyper["separable"] and cfg.hyper["activation"] == "leaky_relu"
        if cfg.budget is None:
            assert weights <= 1000
            kinds.append("plain")
        else:
            assert cfg.budget <= 1000 < weights
            kinds.append("shared")
    assert kinds.count("plain") == kinds.count("shared") == 2
    assert max(p["sepnet.reuse"] for p in seeded.start) == 3


def test_the_valid_preset_starts_from_both_records_layouts_at_both_anchors() -> None:
    """The fifth design's start points: the 997 record's unpadded layout and the 1,936
    record's reused block, plain and Shapeshifted, within 1,000 and within 500 parameters."""
    from search.config._start import complete

    valid = load_preset("mnist-record-valid")
    assert valid.fixed["sepnet.stages"] == 1 and valid.max_epochs == valid.train["epochs"]
    assert set(valid.space["sepnet.padding"].choices) == {"valid", "same"}
    counts = {}
    for point in valid.start:
        cfg = valid.trial_config(complete(valid.space, point, {}))
        net = build_model(cfg.family, (1, 28, 28), 10, **cfg.hyper)
        weights = sum(p.numel() for p in net.parameters())
        budget = cfg.budget if cfg.budget is not None else weights
        assert budget <= 1000 and (cfg.budget is None or cfg.budget < weights)
        counts[(cfg.hyper["padding"], cfg.budget is not None, budget <= 500)] = weights
    assert counts[("valid", False, False)] == 923  # the 997 record's layout, one width
    assert {k[:2] for k in counts} == {("valid", False), ("valid", True), ("same", False),
                                       ("same", True)}  # fmt: skip
    assert {k[1] for k in counts if k[2]} == {False, True}  # plain and shared within 500


def test_the_accuracy_preset_is_the_valid_space_ranked_on_accuracy_within_the_limits() -> None:
    """mnist-record-acc: round 5's note, params a constraint rather than an objective."""
    valid, acc = load_preset("mnist-record-valid"), load_preset("mnist-record-acc")
    assert acc.objective_names == ["accuracy"]
    assert acc.constraint_texts == ["params <= 1000", "flops_infer <= 2000000"]
    assert acc.screen and acc.scheduler.name == "moasha" and acc.algorithm.name == "tpe"
    assert acc.space.to_dict() == valid.space.to_dict() and acc.start == valid.start
    assert (acc.fixed, acc.train) == (valid.fixed, valid.train)


def test_the_detail_preset_searches_the_records_details_from_their_layouts() -> None:
    """mnist-record-detail: the records' slope fixed, their four dropout placements and both
    paddings searched, the validation split doubled; its start points build to the counts its
    comment gives, within the limits."""
    from search.config._start import complete

    detail = load_preset("mnist-record-detail")
    assert detail.fixed["sepnet.negative_slope"] == 0.2
    assert set(detail.space["sepnet.dropout_at"].choices) == {"layers", "between", "head",
                                                              "every"}  # fmt: skip
    assert "sepnet.dropout_every" not in detail.space.names
    assert set(detail.space["sepnet.stem_padding"].choices) == {"valid", "same"}
    assert detail.val_size == 10000 and detail.train_size == 20000
    assert (detail.scheduler.grace_epochs, detail.max_epochs) == (9, detail.train["epochs"])
    assert detail.objective_names == ["accuracy"] and detail.screen
    counts = []
    for point in detail.start:
        cfg = detail.trial_config(complete(detail.space, point, {}))
        net = build_model(cfg.family, (1, 28, 28), 10, **cfg.hyper)
        slopes = {m.negative_slope for m in net.modules() if isinstance(m, torch.nn.LeakyReLU)}
        assert slopes == {0.2}
        counts.append((sum(p.numel() for p in net.parameters()), cfg.budget))
    assert counts == [(923, None), (894, None), (882, None), (917, None), (1640, 950)]


@pytest.mark.parametrize(
    ("preset", "limit", "counts"),
    [
        ("mnist-record-500", 500, [(434, None), (493, None), (481, None), (1568, 445),
                                   (703, 480)]),
        ("mnist-record-697", 697, [(692, None), (629, None), (694, None), (493, None),
                                   (863, 690)]),
        ("mnist-record-2000", 2000, [(1549, None), (1934, None), (1606, None), (1606, None),
                                     (2563, 1950)]),
    ],
)  # fmt: skip
def test_the_detail_preset_at_the_other_targets_is_its_space_scaled_with_starts_in_the_limit(
    preset: str, limit: int, counts: list[tuple[int, int | None]]
) -> None:
    """The third design at the other targets (500, the 697 record's count, 2,000):
    mnist-record-detail's dimensions (and the head's, below 1,000), its fixed values, recipe
    and schedule; only the limit and the ranges of sizes differ; each start point builds to
    the count its comment gives, a plain one within the limit, a Shapeshifted one generating
    more weights than its budget."""
    from search.config._start import complete

    detail, scaled = load_preset("mnist-record-detail"), load_preset(preset)
    extra = {"sepnet.head"} if limit < 1000 else set()
    assert set(scaled.space.names) == set(detail.space.names) | extra
    if extra:
        assert set(scaled.space["sepnet.head"].choices) == {"gap", "flatten"}
    assert (scaled.fixed, scaled.train, scaled.objective_names) == (
        detail.fixed, detail.train, detail.objective_names)  # fmt: skip
    assert scaled.constraint_texts == [f"params <= {limit}", "flops_infer <= 2000000"]
    assert (scaled.val_size, scaled.train_size, scaled.scheduler) == (
        detail.val_size, detail.train_size, detail.scheduler)  # fmt: skip
    assert scaled.space["budget"].high == limit
    built = []
    for point in scaled.start:
        cfg = scaled.trial_config(complete(scaled.space, point, {}))
        net = build_model(cfg.family, (1, 28, 28), 10, **cfg.hyper)
        weights = sum(p.numel() for p in net.parameters())
        assert (cfg.budget or weights) <= limit and (cfg.budget or 0) < max(weights, limit + 1)
        built.append((weights, cfg.budget))
    assert built == counts
