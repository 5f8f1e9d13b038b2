"""The unaided search's derivation: a data-only config (name, dataset, objectives, constraints,
limits) on an image, a table and a signal dataset is completed from its data, ``search check``
prints each derived value with its rule, the user's keys win, and bad data is refused before a
study exists. Launches of the completed configs are in ``test_derive_launch.py``."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from objectives.datasets import DATASETS
from search.cli import main
from search.cli._launch import _trials_said
from search.config import FASTEST_TRIAL_S, SearchConfig, load_preset
from search.derive import LAYOUT_FAMILIES, derive, load_config
from search.derive._data import DataFacts
from search.derive._derive import derive_from
from search.derive._learned import learned_points
from search.derive._refusals import refusals
from search.screening import check_user_code
from spaces import ConfigError


@pytest.fixture
def declared():
    """Names of datasets a test declares, unregistered after it."""
    names: list[str] = []
    yield names
    for name in names:
        DATASETS._entries.pop(name, None)


def _write(folder, name: str, config: dict) -> str:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _table(folder, rows: int = 300, features: int = 6, classes: int = 3) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, features)).astype(np.float32)
    y = np.arange(rows) % classes
    np.savez(folder / "table.npz", x_train=x, y_train=y)


def _signal(folder, rows: int = 200, channels: int = 2, length: int = 48) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, channels, length)).astype(np.float32)
    np.savez(folder / "signal.npz", x_train=x, y_train=np.arange(rows) % 2)


def _data_only(dataset, *, limit: int = 2000, **limits) -> dict:
    return {
        "name": "unaided",
        "dataset": dataset,
        "objectives": [["accuracy", "maximize"], ["params", "minimize"]],
        "constraints": [f"params <= {limit}"],
        "limits": limits or {"time": "10m"},
    }


def _checked_warnings(tmp_path, capsys, declared, shape, layout) -> str:
    """``search check``'s stderr, on one line, for random samples of ``shape`` (two classes)
    declared with ``layout`` (None: undeclared)."""
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    np.savez(tmp_path / "d.npz", x_train=x, y_train=np.arange(shape[0]) % 2)
    declared.append("d")
    dataset = {"name": "d", "npz": str(tmp_path / "d.npz")}
    dataset |= {"layout": layout} if layout else {}
    assert main(["check", _write(tmp_path, "d", _data_only(dataset))]) == 0
    return " ".join(capsys.readouterr().err.split())


def _derived(out: str) -> dict[str, str]:
    """``search check``'s derived lines: key → the line's rest."""
    block = out.split("Derived from the data")[1].split("\nSearch ")[0]
    lines = block.replace("\n    ", " ").splitlines()[1:]  # a line wrapped to 100 columns, whole
    return dict(line.strip().split(": ", 1) for line in lines if "because" in line)


def test_check_prints_every_derived_value_of_a_digits_config(tmp_path, capsys):
    path = _write(tmp_path, "digits", {**_data_only("digits"), "out": str(tmp_path / "runs")})
    assert main(["check", path]) == 0
    out = capsys.readouterr().out
    derived = _derived(out)
    # Models up to 4× the limit (8,000) are Shapeshifted into it: resnet's smallest fits.
    assert derived["family"].startswith("[convnet, sepnet, resnet]  because the built-in image")
    small = derive(_data_only("digits", limit=500))
    left = {d.key: d for d in small.values}["family resnet"]
    assert left.value == "left out" and "its shallowest" in left.because
    for key in (
        "convnet.width",
        "budget",
        "train.epochs",
        "train.batch_size",
        "algorithm",
        "scheduler",
        "trials",
        "train.augment",
        "ssn.mapping",
    ):
        assert " because " in derived[key], key
    assert derived["budget"].startswith("[500, 2000]")
    assert derived["train.batch_size"].startswith("64")  # 1,150 samples / 16 → 64
    assert "Space: " in out and "valid (nothing was created" in out
    assert not (tmp_path / "runs").exists()


def test_a_table_npz_gets_an_mlp_and_no_augmentation(tmp_path, capsys, declared):
    _table(tmp_path)
    declared.append("t-derive")
    config = _data_only({"name": "t-derive", "npz": "table.npz"}, limit=800, trials=3)
    assert main(["check", _write(tmp_path, "table", config)]) == 0
    derived = _derived(capsys.readouterr().out)
    assert derived["family"].startswith("[mlp]")
    assert derived["train.augment"].startswith("False  because a table")
    assert "trials" not in derived  # the user's limits.trials


def test_a_signal_npz_derives_the_signal_families_as_data(tmp_path, declared):
    """The signal families are built on another branch: their derivation is checked as data,
    no model built."""
    _signal(tmp_path)
    declared.append("s-derive")
    data = _data_only({"name": "s-derive", "npz": "signal.npz", "layout": "signal"})
    derivation = derive(data, base=str(tmp_path))
    names = [spec.name for spec in LAYOUT_FAMILIES["signal"]]
    assert derivation.config["space"]["family"] == {"choices": names}
    assert derivation.facts.in_shape == (2, 48) and derivation.facts.layout == "signal"
    keys = {d.key: d for d in derivation.values}
    assert keys["train.augment"].value == [False, True]  # the shift, searched on and off
    assert derivation.config["space"]["train.augment"] == {"choices": [False, True]}
    assert derivation.config["dataset"]["augment"] == {"shift": 5}  # 48 / 10, rounded
    for name in names:
        width = derivation.config["space"][f"{name}.width"]
        assert 1 <= width["low"] <= width["high"]
    assert all(" because " in line for line in derivation.lines()[1:])


def test_check_prints_a_signals_shift_with_its_rule(tmp_path, capsys, declared):
    _signal(tmp_path, length=7)
    declared.append("s-shift")
    config = _data_only({"name": "s-shift", "npz": "signal.npz", "layout": "signal"})
    assert main(["check", _write(tmp_path, "signal", config)]) == 0
    derived = _derived(capsys.readouterr().out)
    rule = "a shift in time of 1/10 of the signal's length (7 samples), at least 1"
    assert derived["dataset.augment"] == f"{{shift: 1}}  because {rule}"
    assert derived["train.augment"] == (f"[False, True]  because label-preserving {{shift: 1}} "
                                        f"({rule}), searched on and off")  # fmt: skip


def test_a_signal_declared_without_augmentation_keeps_none(tmp_path, declared):
    """``augment: {}`` is the user's no: nothing added, nothing searched."""
    _signal(tmp_path)
    declared.append("s-none")
    data = _data_only({"name": "s-none", "npz": "signal.npz", "layout": "signal", "augment": {}})
    derivation = derive(data, base=str(tmp_path))
    keys = {d.key: d for d in derivation.values}
    assert "dataset.augment" not in keys and "train.augment" not in derivation.config["space"]
    assert keys["train.augment"].because.startswith("the dataset has none (a declared dataset "
                                                    "may give augment: {shift: N})")  # fmt: skip


def test_a_declared_image_npz_gets_pad_crop_searched(tmp_path, declared):
    x = np.random.default_rng(0).integers(0, 255, (120, 1, 14, 14), dtype=np.uint8)
    np.savez(tmp_path / "img.npz", x_train=x, y_train=np.arange(120) % 4)
    declared.append("i-derive")
    config, _ = load_config(
        _write(tmp_path, "img", _data_only({"name": "i-derive", "npz": "img.npz"}, limit=3000))
    )
    assert config.data_source["augment"] == {"pad": 1}  # 14 px / 14
    assert "train.augment" in config.space.names


def test_an_image_one_pixel_wide_gets_no_pad_crop(tmp_path, declared):
    """A 1x1 "image" has nothing to crop: pad 1 made every trial with augmentation fail ("pad
    must be smaller than the image (1x1), got 1"), so it is given none."""
    x = np.random.default_rng(0).normal(size=(60, 1, 1, 1)).astype(np.float32)
    np.savez(tmp_path / "dot.npz", x_train=x, y_train=np.arange(60) % 2)
    declared.append("dot-derive")
    data = _data_only({"name": "dot-derive", "npz": "dot.npz", "layout": "image"}, limit=500)
    derivation = derive(data, base=str(tmp_path))
    assert "augment" not in derivation.config["dataset"]
    assert "train.augment" not in derivation.config["space"]


def test_a_derivation_read_again_gives_the_same_config(tmp_path, declared):
    """What a relaunch compares with the stored search: the same file derives the same config
    (the declared dataset's added augmentation registered once)."""
    x = np.random.default_rng(0).integers(0, 255, (80, 12, 12), dtype=np.uint8)
    np.savez(tmp_path / "again.npz", x_train=x, y_train=np.arange(80) % 2)
    declared.append("again-derive")
    path = _write(tmp_path, "again", _data_only({"name": "again-derive", "npz": "again.npz"}))
    first, second = load_config(path)[0].to_dict(), load_config(path)[0].to_dict()
    assert first == second and first["dataset"]["augment"] == {"pad": 1}


def test_the_users_keys_override_the_derived_ones(tmp_path):
    data = {
        **_data_only("digits"),
        "train": {"epochs": 2, "lr": 0.05},
        "fixed": {"ssn.mapping": "none"},
        "algorithm": {"name": "random"},
    }
    config, derivation = load_config(_write(tmp_path, "over", data))
    assert config.train["epochs"] == 2 and config.train["lr"] == 0.05
    assert not any(n.endswith("train.lr") for n in config.space.names)
    assert "ssn.mapping" not in config.space.names and config.fixed["ssn.mapping"] == "none"
    assert config.algorithm.name == "random"
    keys = {d.key: d for d in derivation.values}
    assert "train.epochs" not in keys and "algorithm" not in keys
    assert "2.00 epochs on average" in keys["trials"].because  # the user's 2 epochs, not 81
    assert {"train.epochs", "train.lr", "fixed.ssn.mapping", "algorithm"} <= set(derivation.given)


_UNIT = {"m": "min 00 s", "h": "h 00 min"}


@pytest.mark.parametrize("time", ["1m", "10m", "4h"])
def test_a_timed_count_cannot_end_the_search_before_its_time(tmp_path, time):
    """Even every trial stopped at its first report (a rare class at chance) fills the time."""
    config, derivation = load_config(_write(tmp_path, "count", _data_only("digits", time=time)))
    seconds = config.limits.time * (os.cpu_count() or 1)
    assert config.trials * FASTEST_TRIAL_S >= seconds > (config.trials - 1) * FASTEST_TRIAL_S
    because = {d.key: d for d in derivation.values}["trials"].because
    expected = int(re.search(r"about ([\d,]+) expected", because)[1].replace(",", ""))
    assert 0 < expected < config.trials  # the rule's rate, shown, no longer the count
    # neither the launch line nor the progress lines give that ceiling as the search's total
    assert not config.limits.count_reachable(config.trials, os.cpu_count() or 1)
    limit = f"{time[:-1]} {_UNIT[time[-1]]}"
    said = f"trials until its time limit ({limit}; at most {config.trials:,})"
    assert _trials_said(config, 0) == said
    counted, _ = load_config(_write(tmp_path, "n", _data_only("digits", trials=2)))
    assert _trials_said(counted, 0) == "2 trial(s)"


def test_a_config_with_a_space_is_loaded_as_before(tmp_path):
    preset = load_preset("digits-quick").to_dict()
    config, derivation = load_config(_write(tmp_path, "preset", preset))
    assert derivation is None and config.to_dict() == preset


@pytest.mark.parametrize(
    ("x", "y", "layout", "message"),
    [
        (np.full((40, 5), np.nan, np.float32), np.arange(40) % 2, None, "not finite|NaN|nan"),
        (np.zeros((40, 5), np.float32), np.zeros(40, np.int64), None, "one class"),
        (np.zeros((40, 5), np.float32), np.arange(40) % 2, "image", "shape"),
    ],
)
def test_bad_data_is_refused_before_a_study_exists(
    tmp_path, capsys, declared, x, y, layout, message
):
    np.savez(tmp_path / "bad.npz", x_train=x, y_train=y)
    declared.append("bad-derive")
    spec = {"name": "bad-derive", "npz": "bad.npz", **({"layout": layout} if layout else {})}
    path = _write(tmp_path, "bad", {**_data_only(spec), "out": str(tmp_path / "runs")})
    assert main(["check", path]) == 2
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "runs").exists()


def test_each_class_gets_a_validation_sample_and_a_split_the_classes_forbid_is_refused(
    tmp_path, capsys, declared
):
    """100 classes in 500 rows (400 once the test fifth is carved): the default tenth (40)
    cannot hold one of each class, and every trial of such a search failed ("val_size must be
    ... [100, 400]"). The derivation holds out one of each; a val_size that cannot is refused
    before a study exists ([100, 300] may be held of 400)."""
    _table(tmp_path, rows=500, classes=100)
    declared.append("t-classes")
    spec = {"name": "t-classes", "npz": "table.npz"}
    derived = derive(_data_only(spec, limit=5000), base=str(tmp_path))
    assert derived.config["val_size"] == 100
    assert "at least one of each of the 100 classes" in {
        d.key: d for d in derived.values}["val_size"].because  # fmt: skip
    config = {**_data_only(spec, limit=5000), "out": str(tmp_path / "runs")}
    assert main(["check", _write(tmp_path, "ok", config)]) == 0
    capsys.readouterr()
    assert main(["check", _write(tmp_path, "bad", {**config, "val_size": 0.1})]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "dataset 't-classes': val_size must be" in err and "[100, 300]" in err  # test: 100
    assert main(["launch", _write(tmp_path, "bad", {**config, "val_size": 0.1})]) == 2
    assert not (tmp_path / "runs").exists()


def test_a_data_only_config_needs_a_limit():
    with pytest.raises(ConfigError, match=r"limits\.time .* or limits\.trials"):
        derive({"name": "x", "dataset": "digits", "limits": {}})


@settings(max_examples=12, deadline=None)
@given(
    shape=st.sampled_from([(1, 8, 8), (3, 16, 16), (1, 28, 28), (10,), (40,)]),
    classes=st.integers(2, 12),
    limit=st.integers(300, 30_000),
)
def test_proposals_of_a_derived_space_fit_its_params_limit(shape, classes, limit):
    """Random proposals of the space derived for random data shapes and params limits are
    within the limit (counted on the meta device, Shapeshifted ones as planned): at most a
    tenth refused."""
    layout = "image" if len(shape) == 3 else "table"
    facts = DataFacts(
        name="digits",
        layout=layout,
        in_shape=shape,
        classes=classes,
        train=1000,
        total=1100,
        held=100,
        augment=None,
        augment_why="",
        declaration="digits",
    )
    try:
        derived = derive_from(
            facts,
            {"name": "p", "dataset": "digits", "constraints": [f"params <= {limit}"], "trials": 4},
        )
    except ConfigError:  # no family fits: refused, as a test above shows
        assume(False)
    config = SearchConfig.from_dict(derived.config)
    counts = refusals(config, facts, samples=30)
    assert counts["ok"] >= 27, (shape, classes, limit, dict(counts))


def test_a_mistyped_key_is_named_before_anything_is_derived(tmp_path):
    path = _write(tmp_path, "typo", {**_data_only("digits"), "trails": 4})
    with pytest.raises(ConfigError, match=r"typo\.yaml: unknown key 'trails'.*'trials'"):
        load_config(path)


@pytest.mark.parametrize(
    ("layout", "shape"), [("image", (1, 28, 28)), ("image", (3, 8, 8)), ("image", (1, 5, 7)),
                          ("signal", (3, 50)), ("signal", (12, 29)), ("signal", (1, 3)),
                          ("table", (30,))],
)  # fmt: skip
def test_each_family_s_closed_form_is_its_built_model_s_count(layout, shape):
    """The derivation sizes depths and widths, and prices an epoch, by closed forms: each
    equals the trainable parameters, and the forward multiply-adds on one sample (FLOPs / 2
    as the flops indicator counts them), of the model the family builds with the derived
    fixed levers."""
    import torch

    import spaces
    from objectives import count_flops
    from search.derive._families import families_of

    for spec in families_of(layout):
        name, low, high = spec.depth
        for depth in range(low, high + 1, spec.depth_step):
            for width in (spec.min_width, 9, 16):
                hyper = {**spec.fixed, name: depth, spec.width: width}
                model = spaces.build_model(spec.name, in_shape=shape, num_classes=7, **hyper)
                built = sum(p.numel() for p in model.parameters())
                assert spec.params(depth, width, shape, 7) == built, (spec.name, depth, width)
                x = torch.zeros(1, *shape)
                flops = count_flops(lambda m=model, x=x: m.eval()(x))
                assert spec.macs(depth, width, shape, 7) * 2 == flops, (spec.name, depth, width)


def test_small_cheap_data_is_cross_validated_and_a_large_split_is_not(tmp_path, declared):
    _table(tmp_path, rows=300)  # the npz's default validation: 30 samples
    declared.append("t-folds")
    small = derive(_data_only({"name": "t-folds", "npz": "table.npz"}), base=str(tmp_path))
    keys = {d.key: d for d in small.values}
    assert small.config["folds"] == 5 and small.config["scheduler"] == {"name": "fifo"}
    assert "50 samples (under 200" in keys["folds"].because  # the derived val_size: 50
    assert "6 fits a trial" in keys["train.epochs"].because
    assert "cross-validated" in keys["scheduler"].because
    loaded, _ = load_config(_write(tmp_path, "folds", _data_only({"name": "t-folds",
                                                                  "npz": "table.npz"})))
    assert loaded.folds == 5 and loaded.scheduler.name == "fifo"  # folds with fifo load
    digits = derive(_data_only("digits"))  # 288 validation samples: one split ranks them
    assert "folds" not in digits.config and "folds" not in {d.key for d in digits.values}
    moasha = derive(_data_only({"name": "t-folds", "npz": "table.npz"}) | {"scheduler": "moasha"},
                    base=str(tmp_path))  # fmt: skip
    assert "folds" not in moasha.config
    fifo = derive(_data_only({"name": "t-folds", "npz": "table.npz"}) | {"scheduler": "fifo"},
                  base=str(tmp_path))  # fmt: skip
    assert fifo.config["folds"] == 5  # the benchmark's plain arms keep the derived recipe
    mine = derive(_data_only({"name": "t-folds", "npz": "table.npz"}) | {"folds": 3},
                  base=str(tmp_path))  # fmt: skip
    assert mine.config["folds"] == 3 and "folds" in mine.given
    assert "4 fits a trial" in {d.key: d for d in mine.values}["train.epochs"].because


def test_fewer_samples_than_folds_get_a_fold_each_and_more_folds_are_refused(tmp_path, declared):
    """Six rows (four left once the test split is carved): five folds failed every trial at
    its first fit (``folds: 5 (fold 0) for 4 training samples``) after check had passed; a
    config's own folds above the samples are refused by check, derived or not."""
    _table(tmp_path, rows=6, classes=2)
    declared.append("t-tiny")
    tiny = derive(_data_only({"name": "t-tiny", "npz": "table.npz"}), base=str(tmp_path))
    assert tiny.config["folds"] == 4
    assert "4 folds of all 4 training samples" in {d.key: d for d in tiny.values}["folds"].because
    spec = _data_only({"name": "t-tiny", "npz": "table.npz"}) | {"folds": 5}
    mine, _ = load_config(_write(tmp_path, "tiny", spec))
    with pytest.raises(ConfigError, match=r"'t-tiny': folds: 5 for 4 training samples"):
        check_user_code(mine)  # as search check does, before a study exists


def test_folds_above_a_built_in_datasets_known_pool_are_refused_before_any_download():
    """digits with train_size 10 and val_size 5 pools 15 samples whatever the dataset holds:
    20 folds failed every trial; a fraction of validation leaves the pool to the data."""
    base = {"name": "t-builtin", "dataset": "digits", "space": {"family": ["mlp"]},
            "train_size": 10, "val_size": 5}  # fmt: skip
    with pytest.raises(ConfigError, match=r"'digits': folds: 16 for 15 training samples "
                                          r"\(train_size 10 and 5 validation"):  # fmt: skip
        check_user_code(SearchConfig.from_dict(base | {"folds": 16}))
    check_user_code(SearchConfig.from_dict(base | {"folds": 15}))
    check_user_code(SearchConfig.from_dict(base | {"folds": 16, "val_size": 0.5}))


def test_check_warns_of_a_validation_split_too_small_to_rank_on(tmp_path, capsys, declared):
    _table(tmp_path, rows=300)  # 30 validation samples by default
    declared.append("t-small")
    one = _data_only({"name": "t-small", "npz": "table.npz"}) | {"folds": 1}
    assert main(["check", _write(tmp_path, "one", one)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "warning: the validation split holds 50 samples" in err  # the derived val_size
    assert "standard error of 4.2 points" in err and "folds: 5" in err
    assert main(["check", _write(tmp_path, "cv", _data_only({"name": "t-small",
                                                             "npz": "table.npz"}))]) == 0
    assert "validation split holds" not in capsys.readouterr().err  # derived: folds 5


@settings(max_examples=15, deadline=None)
@given(
    shape=st.sampled_from([(1, 8, 8), (3, 16, 16), (1, 28, 28), (10,), (40,), (1, 24), (12, 29),
                           (1, 427), (3, 1460)]),
    classes=st.integers(2, 12),
    limit=st.integers(300, 30_000),
)  # fmt: skip
def test_each_start_point_is_learned_or_a_plain_net_within_the_limit(shape, classes, limit):
    """Every derived start point is a valid point of its space: the layout's learned points
    first (each budget within the limit), then one plain net per family at most, whose model
    trains plain (its exact count, built on the meta device, within its budget, the params
    limit)."""
    from search.config._start import complete
    from search.screening import meta_model, trainable

    layout = {3: "image", 2: "signal", 1: "table"}[len(shape)]
    facts = DataFacts(name="digits", layout=layout, in_shape=shape, classes=classes, train=1000,
                      total=1100, held=100, augment=None, augment_why="",
                      declaration="digits")  # fmt: skip
    data = {"name": "p", "dataset": "digits", "constraints": [f"params <= {limit}"], "trials": 4}
    try:
        derived = derive_from(facts, data)
    except ConfigError:  # no family fits: refused, as a test above shows
        assume(False)
    config = SearchConfig.from_dict(derived.config)  # validates every point against the space
    learned = learned_points(layout, derived.config["space"])
    plain = [p for p in config.start if p not in learned]
    assert config.start[: len(config.start) - len(plain)] == learned[: len(config.start)]
    assert len(plain) <= len(LAYOUT_FAMILIES[layout])
    info = type("Info", (), {"in_shape": shape, "num_classes": classes})()
    for point in config.start:
        cfg = config.trial_config(complete(config.space, point, config.space.sample(0)))
        unshared = trainable(meta_model(cfg, info, {}))
        if point in plain:
            assert cfg.budget == limit and unshared <= limit, point
        else:  # a learned point: within its budget, Shapeshifted when larger
            assert cfg.budget <= limit and unshared <= 4 * limit, point


def test_start_points_follow_the_users_keys(tmp_path, capsys):
    config, derivation = load_config(_write(tmp_path, "d", _data_only("digits")))
    families = [p["family"] for p in config.start]  # ResNet-8 is over 2,000 plain
    assert families == ["convnet", "sepnet"]
    assert all(p["train.augment"] is True for p in config.start if "train.augment" in p)
    assert any(d.key == "start" for d in derivation.values)
    fixed = {**_data_only("digits"), "train": {"weight_decay": 1e-4},
             "fixed": {"family": "sepnet"}}  # fmt: skip
    config, derivation = load_config(_write(tmp_path, "f", fixed))
    assert not any(n.startswith(("convnet.", "resnet.")) for n in config.space.names)
    assert not any(d.key.startswith(("convnet", "resnet")) for d in derivation.values)
    assert config.start == []  # one family: no portfolio to seed
    assert [d.value for d in derivation.values if d.key == "start"] == ["none"]
    config, derivation = load_config(_write(tmp_path, "n", {**_data_only("digits"), "start": []}))
    assert config.start == [] and "start" in derivation.given
    assert main(["check", _write(tmp_path, "c", _data_only("digits"))]) == 0
    assert "convnet depth" in _derived(capsys.readouterr().out)["start"]


def test_a_table_has_one_family_and_so_no_start_point(tmp_path, capsys, declared):
    """The table layout's one family (the MLP) is explored from TPE's random start-up: a
    plain net at the limit trained first would pull its model there."""
    _table(tmp_path)
    declared.append("t")  # unregistered after: the registry test lists the built-ins alone
    path = _write(tmp_path, "t", _data_only({"name": "t", "npz": str(tmp_path / "table.npz")}))
    config, _ = load_config(path)
    assert config.start == []
    assert main(["check", path]) == 0
    shown = _derived(capsys.readouterr().out)["start"]
    assert shown.startswith("none") and "fewer than two families have a plain net within" in shown


@pytest.mark.parametrize(
    ("shape", "layout", "warned"),
    [((80, 12, 300), None, True), ((80, 12, 300), "signal", False), ((80, 28, 28), None, False),
     ((80, 300, 12), None, True)],
)  # fmt: skip
def test_check_warns_when_undeclared_rank_3_samples_look_like_signals(
    tmp_path, capsys, declared, shape, layout, warned
):
    """Rank 3 undeclared is N×H×W grey images (as it always was); 12×300 ones are far more
    likely 12-channel signals, so check says how to declare them."""
    err = _checked_warnings(tmp_path, capsys, declared, shape, layout)
    assert ("declare layout: signal in the dataset entry" in err) == warned, err
    if warned:
        assert f"samples of {shape[1]}×{shape[2]} are read as grey images" in err
        assert "signals of 12 channels and length 300" in err
        assert ("transpose them to N×C×L" in err) == (shape[1] > shape[2])  # time first


def test_an_epoch_is_priced_by_its_steps_and_its_multiply_adds():
    """A table of 10 features, 3 classes, at 200 parameters: the MLP of 3 hidden layers of 8
    is 259 > 200, so 2 layers; 9 wide is 219, so 8: 10·8 + 8·8 + 8·3 = 168 multiply-adds.
    1,000 training samples take batches of 2^floor(log2(1000/16)) = 32: 32 steps at 3 ms,
    1,000 × 168 multiply-adds at 1.5 G/s, and 0.05 s besides: 0.096 + 0.000112 + 0.05.
    A signal 100× longer at the same limit costs its conv stack 100× the work a sample."""
    from search.derive._derive import _epoch_seconds, reference_macs

    assert reference_macs("table", (10,), 3, 200) == 168
    table = DataFacts(name="t", layout="table", in_shape=(10,), classes=3, train=1000,
                      total=1200, held=200, augment=None, augment_why="", declaration="t")
    assert _epoch_seconds(table, 200, 32) == pytest.approx(0.096 + 0.000112 + 0.05)
    long, short = (DataFacts(name="s", layout="signal", in_shape=(2, n), classes=3, train=500,
                             total=600, held=100, augment=None, augment_why="",
                             declaration="s") for n in (3000, 30))  # fmt: skip
    assert reference_macs("signal", (2, 3000), 3, 5000) > 50 * reference_macs(
        "signal", (2, 30), 3, 5000)
    assert _epoch_seconds(long, 5000, 32) > 5 * _epoch_seconds(short, 5000, 32)


def test_the_epochs_are_priced_at_the_batch_the_trials_train_with(tmp_path):
    """A step costs the same whatever its batch holds, so a batch of 16 you write makes an
    epoch of n rows ceil(n / 16) steps, not the derived 128's ceil(n / 128): the derived
    epochs follow your batch (3 ms a step more each), and your batch is the one kept."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(24_000, 10)).astype(np.float32)
    np.savez(tmp_path / "rows.npz", x_train=x, y_train=(x[:, 0] > 0).astype(np.int64))
    base = {"name": "rows", "dataset": {"name": "rows", "npz": str(tmp_path / "rows.npz")},
            "objectives": [["accuracy", "maximize"], ["params", "minimize"]],
            "constraints": ["params <= 1000"], "limits": {"time": "4m"}}  # fmt: skip
    derived, mine = (derive(data) for data in (base, {**base, "train": {"batch_size": 16}}))
    lines = [{d.key: d.because for d in x.values} for x in (derived, mine)]
    assert "a step of 128" in lines[0]["train.epochs"]
    assert "a step of 16" in lines[1]["train.epochs"]
    seconds = [float(re.search(r"at ([\d.]+) s an epoch", x["train.epochs"]).group(1))
               for x in lines]  # fmt: skip
    n = derived.facts.train
    assert seconds[1] - seconds[0] == pytest.approx((-(-n // 16) + n // -128) * 0.003, abs=0.002)
    assert derived.config["train"]["epochs"] > mine.config["train"]["epochs"]
    assert mine.config["train"]["batch_size"] == 16 and "train.batch_size" in mine.given


@pytest.mark.parametrize(("epochs", "grace", "mean"), [(9, 1, 7 / 3), (27, 1, 3.0), (81, 3, 9.0),
                                                        (243, 9, 27.0)])  # fmt: skip
def test_the_first_rung_is_a_27th_of_a_derived_trial(epochs, grace, mean):
    """Rungs keep the share of a trial the lab's 27-epoch curves were ranked at (1, 3, 9 of
    27): 243 epochs get rungs 9, 27, 81, and a trial trains on average (by hand, a third
    going on at each rung) 9 + 18/3 + 54/9 + 162/27 = 27 epochs; 9 epochs keep grace 1."""
    from search.derive._derive import _scheduler, _shown_scheduler

    scheduler, mean_epochs, why = _scheduler(epochs, 60.0)
    assert scheduler == {"name": "moasha", "type": "promotion", "grace_epochs": grace,
                         "reduction_factor": 3.0, "trust_rungs": True, "trust_by": "pooled"}
    assert mean_epochs == pytest.approx(mean)
    assert f"first rung at epoch {grace} of {epochs}" in why
    assert _shown_scheduler(scheduler) == f"moasha (promotion, pooled audits, grace {grace}, η 3)"


@pytest.mark.parametrize(("side", "size"), [((768, 1024), [32, 43]), ((20, 12), [20, 12])])
def test_an_image_folder_is_read_at_a_derived_size(tmp_path, capsys, declared, side, size):
    """Photos are read at 32 px on their shorter side (a net on 768×1024 costs 768 times the
    multiply-adds), small images at their own size; the pad follows the size read."""
    from PIL import Image

    for split in ("train", "test"):
        for label in ("a", "b"):
            (tmp_path / "img" / split / label).mkdir(parents=True)
            for i in range(6):
                pixels = np.full((*side, 3), 40 * i, np.uint8)
                Image.fromarray(pixels).save(tmp_path / "img" / split / label / f"{i}.png")
    declared.append("folder")
    data = _data_only({"name": "folder", "image_folder": str(tmp_path / "img")})
    assert main(["check", _write(tmp_path, "folder", data)]) == 0
    out = capsys.readouterr().out
    derived = _derived(out)
    assert derived["dataset.size"].startswith(f"{size}  because the first image's")
    assert f"of 3×{size[0]}×{size[1]} uint8" in " ".join(out.split())  # the data as read
    assert f"shorter side ({min(size)} px)" in derived["dataset.augment"]
    declared.append("folder-sized")
    mine = _data_only({"name": "folder-sized", "image_folder": str(tmp_path / "img"),
                       "size": [9, 9]})  # fmt: skip
    assert main(["check", _write(tmp_path, "mine", mine)]) == 0
    assert "dataset.size" not in _derived(capsys.readouterr().out)  # a size of yours wins


@pytest.mark.parametrize(("shape", "warned"), [
    ((40, 64, 3), True),  # three channels of 64 steps stored time first
    ((40, 24, 3), True),  # the ratio at its edge: 24 = 8 × 3
    ((40, 12, 29), False),  # JapaneseVowels' 12 channels of 29 steps, as npas reads them
    ((40, 23, 3), False),  # under 8 times as many channels as steps: ambiguous, no word
])  # fmt: skip
def test_check_warns_when_signals_look_time_first(tmp_path, capsys, declared, shape, warned):
    """N×L×C arrays read as N×C×L give 64 channels of 3 steps: check says so, and how."""
    err = _checked_warnings(tmp_path, capsys, declared, shape, "signal")
    assert ("stored time first" in err) == warned, err
    if warned:
        assert f"read as signals of {shape[1]} channels and length {shape[2]}" in err
        assert "x.transpose(0, 2, 1)" in err


@pytest.mark.parametrize(("shape", "layout", "warned"), [
    ((40, 32, 32, 3), None, True),  # RGB channels last, as PIL gives them
    ((40, 28, 20, 1), "image", True),  # grey channels last, declared an image
    ((40, 3, 32, 32), None, False),  # N×C×H×W, as npas reads it
    ((40, 4, 16, 3), None, False),  # 4 channels of 16×3: a channel count first, ambiguous
    ((40, 6, 6, 3), None, False),  # sides under 8: no one reads these as channels last
])  # fmt: skip
def test_check_warns_when_images_look_channels_last(tmp_path, capsys, declared, shape, layout,
                                                    warned):  # fmt: skip
    """N×H×W×C arrays (PIL's order) read as N×C×H×W give images of 32 channels 3 pixels wide:
    check says so, and how to transpose them."""
    err = _checked_warnings(tmp_path, capsys, declared, shape, layout)
    assert ("stored channels last" in err) == warned, err
    if warned:
        c, h, w = shape[1:]
        assert f"samples of {c}×{h}×{w} are read as images of {c} channels, {h}×{w} pixels" in err
        assert f"if they are {c}×{h} images of {w} channel(s)" in err
        assert "save x.transpose(0, 3, 1, 2) in the npz" in err
