"""search.bundle: a bundle exported from a real (small) study rebuilds, with nothing but
``spaces.build_model``, a model whose validation accuracy is the one the search recorded; the
test split is read once, by the export, for that model only (no trial of a search reads it
unless its config sets ``report_test``, and nothing ranks on it then); its files say which
trial and why; ``train_bundle`` retrains it with the same parameter-store mapping.

The study is written the way ``search launch`` writes it (search.record._study: open_study;
report_of → outcome_of → record → tell, one artifact folder per trial) but without Ray, with
search.trial.run_trial called directly: the Ray path is covered once in test_cli.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import optuna
import pytest
import torch
import yaml
from optuna.trial import TrialState

from objectives.datasets import load
from objectives.train import evaluate
from search.bundle import export_bundle, load_bundle, read_bundle, train_bundle
from search.cli import main
from search.config import SearchConfig, check_trial_config
from search.errors import ExportError
from search.pareto import front_table
from search.record._records import conditions_of, constraints_of, metrics_of, read_trial
from search.record._storage import open_storage
from search.record._study import open_study
from search.run._outcome import outcome_of, record_outcome
from search.run._trainable import report_of
from search.trial import run_trial
from spaces import ConfigError
from tests.search_tests.disks import UNWRITABLE, unwritable
from tests.search_tests.studies import npas_study

optuna.logging.set_verbosity(optuna.logging.WARNING)

SPACE = {
    "family": ["mlp"],
    "mlp.depth": {"low": 1, "high": 2},
    "mlp.width": {"low": 16, "high": 32},
    "budget": {"low": 1500, "high": 2500},
    "ssn.mapping": ["auto"],
    "ssn.stores": {"value": 2},
}


def _config(name: str, *, budget: bool, **extra: Any) -> SearchConfig:
    space = dict(SPACE) if budget else {"family": ["mlp"], "mlp.width": {"low": 16, "high": 32}}
    return SearchConfig.from_dict(
        {
            "name": name,
            "dataset": "digits",
            "space": space,
            "fixed": {"ssn.pretrain_epochs": 1} if budget else {},
            "train": {"epochs": 2, "batch_size": 64},
            "objectives": [["accuracy", "maximize"], ["params", "minimize"]],
            "constraints": ["params <= 2500"],
            "indicators": ["params", "flops_infer"],
            "measure": {"threads": 1},
            "trials": 2,
            "seed": 0,
            **extra,
        }
    )


def _study(config: SearchConfig, url: str, out: Path, trials: int) -> optuna.Study:
    """Runs ``trials`` trials in process and records them as search launch does."""
    objectives = [(o.name, o.direction) for o in config.objectives]
    constraints = [*config.constraint_texts, "feasible"]
    study = open_study(
        name=config.name,
        storage=open_storage(url),
        sampler=optuna.samplers.RandomSampler(seed=config.seed),
        config=config.to_dict(),
        objectives=objectives,
        constraints=config.constraint_texts,
        optimiser="random",
    )
    for _ in range(trials):
        trial = study.ask()
        point = config.space.suggest(trial)
        cfg = config.trial_config(point, artifact_dir=str(out / "trials" / str(trial.number)))
        trial.set_user_attr("trial_config", cfg.to_dict())
        report = report_of(run_trial(cfg), [n for n, _ in objectives])
        outcome = outcome_of(report, objectives=objectives, constraints=constraints)
        record_outcome(trial, outcome)
        study.tell(trial, outcome.values, state=outcome.state)
    return study


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> tuple[optuna.Study, str, Path]:
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("search")
    url = f"sqlite:///{out / 'npas.db'}"
    study = _study(_config("ssn", budget=True), url, out, trials=2)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2
    return study, url, out


@pytest.fixture(scope="module")
def bundle(searched, tmp_path_factory: pytest.TempPathFactory):
    study, url, _ = searched
    return export_bundle(
        study, tmp_path_factory.mktemp("bundle"), select="best:accuracy", storage_url=url
    )


def _test_split():
    return load("digits", seed=0, progress=False).test


def _val_split():
    return load("digits", seed=0, progress=False).val


def _test_figures(study: optuna.Study) -> list[str]:
    """Every test-split figure a study holds, read through Optuna's own API: its trials' user
    and system attributes (metrics in either layout, curves, the Ray results) and its own
    user attributes (the stored config)."""
    found = []
    for trial in study.trials:
        for where, attrs in (("user", trial.user_attrs), ("system", trial.system_attrs)):
            text = json.dumps(attrs, default=str)
            found += [f"trial {trial.number} {where}: {name}" for name in
                      ("test_accuracy", "test_loss") if name in text]  # fmt: skip
    text = json.dumps(study.user_attrs, default=str)
    return found + [f"study: {n}" for n in ("test_accuracy", "test_loss") if n in text]


def test_a_default_search_leaves_no_test_figure_in_its_study(searched) -> None:
    _, url, _ = searched
    study = optuna.load_study(study_name="ssn", storage=url)
    assert len(study.trials) == 2 and all(metrics_of(t)["accuracy"] > 0 for t in study.trials)
    assert _test_figures(study) == []


def test_export_reads_the_test_split_once_and_prints_one_figure(
    searched, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, url, _ = searched
    import search.bundle._write as write

    read: list[int] = []  # the sizes of the splits the export evaluates a model on
    real = write.evaluate

    def counted(model: Any, split: Any, *args: Any, **kwargs: Any) -> dict[str, float]:
        read.append(len(split))
        return real(model, split, *args, **kwargs)

    monkeypatch.setattr(write, "evaluate", counted)
    out = tmp_path / "b"
    assert main(["export", "--name", "ssn", "--storage", url, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    test = _test_split()
    assert read == [len(test)]  # the test split, once, for the exported model
    exported = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["exported"]
    lines = [line for line in text.replace(str(tmp_path), "<tmp>").splitlines() if "test" in line]
    assert lines == [f"  test accuracy {exported['test_accuracy']:.4f} on the test split "
                     f"({len(test):,} rows), read once, for this model only"]  # fmt: skip
    assert "no trial of the search read the test split" in exported["note"]
    assert "test_accuracy" not in json.loads((out / "metrics.json").read_text())["metrics"]


def test_with_report_test_the_trials_carry_it_and_nothing_ranks_on_it(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    config = _config("tested", budget=False, report_test=True)
    assert config.to_dict()["report_test"] is True
    url = f"sqlite:///{tmp_path / 'npas.db'}"
    _study(config, url, tmp_path, trials=2)
    stored = optuna.load_study(study_name="tested", storage=url)
    for trial in stored.trials:
        assert 0.0 <= metrics_of(trial)["test_accuracy"] <= 1.0
        assert math.isfinite(metrics_of(trial)["test_loss"])
    assert _test_figures(stored)
    for spec in ("best:test_accuracy", "epsilon:test_accuracy>=0.5", "pepr:params+test_loss"):
        with pytest.raises(ConfigError, match="is measured on the test set"):
            export_bundle(stored, tmp_path / "never", select=spec)
    with pytest.raises(ConfigError, match="objective 'test_accuracy' is measured on the test"):
        export_bundle(stored, tmp_path / "never", objectives=[("test_accuracy", "maximize")])
    with pytest.raises(ConfigError, match="objective 'test_accuracy' is measured on the test"):
        front_table(stored, [("test_accuracy", "maximize"), ("params", "minimize")])
    assert not (tmp_path / "never").exists()
    assert "test_accuracy" not in front_table(stored).columns  # the front: validation only
    done = export_bundle(stored, tmp_path / "b", select="best:accuracy")
    exported = json.loads((done.folder / "metrics.json").read_text(encoding="utf-8"))
    assert "report_test: true" in exported["exported"]["note"]


def test_bundle_rebuilds_the_trials_model(searched, bundle) -> None:
    study, _, _ = searched
    recorded = metrics_of(study.trials[bundle.number])["accuracy"]
    val, test = _val_split(), _test_split()
    model = load_bundle(bundle.folder)
    # Materialised weights compute what the Shapeshifter network computed: same predictions.
    assert evaluate(model, val.x, val.y)["accuracy"] == pytest.approx(recorded, abs=0.5 / len(val))
    accuracy = evaluate(model, test.x, test.y)["accuracy"]
    assert bundle.test_accuracy == pytest.approx(accuracy, abs=0.5 / len(test))
    assert bundle.test_rows == len(test)
    blob = read_bundle(bundle.folder)
    plain = sum(p.numel() for p in model.parameters())
    assert plain > blob["budget"], "a materialised SSN has the full model's parameter count"
    assert set(blob["mapping"].values()) <= {0, 1}


def test_readme_code_loads_the_same_model(bundle, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (bundle.folder / "README.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    monkeypatch.chdir(bundle.folder)
    scope: dict = {}
    exec(code, scope)  # the user's own code: spaces.build_model + load_state_dict
    x = _test_split().x[:64]
    with torch.no_grad():
        torch.testing.assert_close(scope["model"](x), load_bundle(bundle.folder)(x))
    assert f"trial {bundle.number}" in readme and "best accuracy" in readme


def test_metrics_and_config_say_which_trial_and_why(searched, bundle) -> None:
    study, url, out = searched
    trial = study.trials[bundle.number]
    meta = json.loads((bundle.folder / "metrics.json").read_text(encoding="utf-8"))
    assert meta["trial"] == bundle.number and meta["study"] == "ssn"
    assert meta["selection"]["spec"] == "best:accuracy"
    assert "best accuracy" in meta["selection"]["reason"]
    assert meta["storage"] == url
    recorded = read_trial(trial, conditions_of(study), constraints_of(study))
    assert meta["metrics"]["accuracy"] == recorded.metrics["accuracy"]
    assert meta["metrics"]["params"] == recorded.metrics["params"] <= 2500
    assert meta["conditions"] and all(k.startswith("cond_") for k in meta["conditions"])
    assert meta["conditions"] == recorded.conditions
    assert meta["violations"] == recorded.violations
    assert recorded.violations["params <= 2500"] == recorded.metrics["params"] - 2500 <= 0
    assert meta["params"] == trial.params
    assert meta["onnx"]["file"] == "model.onnx" and meta["onnx"]["error"] is None
    assert {"model.onnx", "model.pt2"} <= set(bundle.paths) and bundle.onnx_error is None
    assert meta["data"]["seed"] == 0 and meta["data"]["test"]["size"] == len(_test_split())
    cfg = yaml.safe_load((bundle.folder / "config.yaml").read_text(encoding="utf-8"))
    assert check_trial_config(cfg) == cfg
    assert cfg["artifact_dir"] is None and str(out) not in json.dumps(cfg)
    assert cfg["hyper"] == trial.user_attrs["trial_config"]["hyper"]


def test_train_reuses_the_mapping_and_compares(bundle, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    done = train_bundle(bundle.folder, epochs=1, out=tmp_path)
    saved = json.loads((tmp_path / "train.json").read_text(encoding="utf-8"))
    assert done.path == tmp_path / "train.json"
    assert saved["epochs"] == 1 and saved["search_epochs"] == 2
    rows = {r["metric"]: r for r in saved["comparison"]}
    assert {"accuracy", "test_accuracy", "params", "flops_infer"} <= set(rows)
    # the retrained model's test figure, beside the exported model's (the search read none)
    assert rows["test_accuracy"]["search"] == bundle.test_accuracy
    assert 0.0 < rows["test_accuracy"]["train"] == saved["metrics"]["test_accuracy"] <= 1.0
    # Same budget and the bundle's store mapping: the parameter count cannot change.
    assert rows["params"]["train"] == rows["params"]["search"]
    assert saved["trial_config"]["ssn"]["mapping"] == read_bundle(bundle.folder)["mapping"]
    assert 0.0 < rows["accuracy"]["train"] <= 1.0
    assert (tmp_path / "trained" / "model.pt").is_file()
    assert not (bundle.folder / "train.json").exists(), "--out puts train.json elsewhere"


def test_train_with_val_trains_on_both_and_says_so(bundle, tmp_path: Path, capsys) -> None:
    torch.set_num_threads(1)
    args = ["train", str(bundle.folder), "--epochs", "1", "--out", str(tmp_path), "--with-val"]
    assert main(args) == 0 and "on train+val" in capsys.readouterr().out
    saved = json.loads((tmp_path / "train.json").read_text(encoding="utf-8"))
    assert saved["train_on"] == saved["trial_config"]["train_on"] == "train+val"
    rows = {r["metric"]: r for r in saved["comparison"]}
    assert math.isnan(rows["accuracy"]["train"])  # validation is no longer held out
    assert 0.0 < rows["test_accuracy"]["train"] <= 1.0
    plain = train_bundle(bundle.folder, epochs=1, out=tmp_path / "plain")
    assert json.loads(plain.path.read_text(encoding="utf-8"))["train_on"] == "train"


def test_plain_model_bundle(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    config = _config("plain", budget=False)
    study = _study(config, f"sqlite:///{tmp_path / 'npas.db'}", tmp_path, trials=1)
    done = export_bundle(study, tmp_path / "bundle", select="trial:0")
    blob = read_bundle(done.folder)
    assert blob["budget"] is None and blob["mapping"] is None
    val = _val_split()
    recorded = metrics_of(study.trials[0])["accuracy"]
    accuracy = evaluate(load_bundle(done.folder), val.x, val.y)["accuracy"]
    assert accuracy == pytest.approx(recorded, abs=0.5 / len(val))


def test_export_errors(searched, tmp_path: Path) -> None:
    study, _, _ = searched
    with pytest.raises(ConfigError) as bad:
        export_bundle(study, tmp_path / "never", select="nearest:3")
    assert "nearest" in str(bad.value) and "allowed forms" in str(bad.value)
    assert not (tmp_path / "never").exists(), "a bad spec writes nothing"
    with pytest.raises(ExportError, match="not a bundle"):
        load_bundle(tmp_path)


def test_an_existing_bundle_is_replaced_only_when_asked(searched, bundle, tmp_path) -> None:
    study, _, _ = searched
    folder = tmp_path / "b"
    shutil.copytree(bundle.folder, folder)
    before = (folder / "metrics.json").read_bytes()
    trial = json.loads(before)["trial"]
    with pytest.raises(ExportError, match=rf"already holds trial {trial} of 'ssn'; --replace"):
        export_bundle(study, folder, select="trial:1")
    assert (folder / "metrics.json").read_bytes() == before, "nothing written"
    done = export_bundle(study, folder, select="trial:1", replace=True)
    assert json.loads((folder / "metrics.json").read_text())["trial"] == done.number == 1


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"metrics": 3}', "\udcff"])
def test_a_malformed_metrics_json_is_one_line(bundle, tmp_path, text, capsys) -> None:
    folder = tmp_path / "b"
    shutil.copytree(bundle.folder, folder)
    (folder / "metrics.json").write_text(text, encoding="utf-8", errors="surrogateescape")
    assert main(["train", str(folder), "--epochs", "1", "--out", str(tmp_path / "t")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "metrics.json" in err
    assert not (tmp_path / "t").exists(), "refused before any training"


def test_export_without_saved_model(tmp_path: Path) -> None:
    study = optuna.create_study(
        directions=["maximize", "minimize"],
        storage=f"sqlite:///{tmp_path / 'npas.db'}",
        study_name="nomodel",
    )
    gone = {"artifact": str(tmp_path / "gone" / "model.pt")}
    npas_study([{"accuracy": 0.5, "params": 100.0}], study=study, attrs=gone)
    with pytest.raises(ExportError, match="no saved model"):
        export_bundle(study, tmp_path / "b", select="knee")


def test_an_edited_bundle_config_trains_its_options_but_not_another_model(
    bundle, tmp_path: Path
) -> None:
    edited = tmp_path / "edited"
    shutil.copytree(bundle.folder, edited)
    path = edited / "config.yaml"
    cfg = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**cfg, "family": "nosuchfamily"}))
    with pytest.raises(ConfigError, match=r"config\.yaml: family"):
        train_bundle(edited, epochs=1)
    path.write_text(yaml.safe_dump({**cfg, "hyper": {**cfg["hyper"], "width": 3}}))
    with pytest.raises(ExportError, match=r"differs from model.pt in \['hyper'\]"):
        train_bundle(edited, epochs=1)
    path.write_text(yaml.safe_dump({**cfg, "train": {**cfg["train"], "epochs": -5}}))
    with pytest.raises(ConfigError, match=r"train\.epochs"):
        train_bundle(edited, epochs=1)
    path.write_text(yaml.safe_dump({**cfg, "seed": 7}))
    done = train_bundle(edited, epochs=1)
    assert json.loads(done.path.read_text())["trial_config"]["seed"] == 7, "the YAML is trained"


def test_pareto_and_export_of_a_search_without_completed_trials_say_so(tmp_path: Path) -> None:
    study = optuna.create_study(directions=["maximize", "minimize"])
    study.set_user_attr("objectives", [["accuracy", "maximize"], ["params", "minimize"]])
    study.tell(study.ask(), state=optuna.trial.TrialState.FAIL)
    with pytest.raises(ConfigError, match="no completed trial among 1 trial"):
        export_bundle(study, tmp_path / "b")
    with pytest.raises(ConfigError, match="no completed trial"):
        front_table(study)


def test_export_without_select_falls_back_to_the_knee_when_the_search_has_no_recommendation(
    searched, tmp_path: Path, capsys
) -> None:
    study, url, _ = searched  # launched without finalists: no recommendation recorded
    done = export_bundle(study, tmp_path / "knee", storage_url=url)
    assert done.selection.selector == "knee"
    assert done.fallback is not None and "has no recommendation" in done.fallback
    assert main(["export", "--storage", url, "--name", "ssn", "--out", str(tmp_path / "b")]) == 0
    err = capsys.readouterr().err
    assert "search export: search 'ssn' has no recommendation" in err and "knee" in err
    with pytest.raises(ExportError, match="the search recorded no recommendation"):
        export_bundle(study, tmp_path / "rec", select="recommended")


@pytest.mark.parametrize("where", UNWRITABLE)
def test_train_to_an_out_it_cannot_write_is_refused_before_training(bundle, tmp_path, capsys,
                                                                    where):  # fmt: skip
    # Before, every epoch trained, then a traceback (a full disk: a 0-byte trained/model.pt).
    with unwritable(tmp_path / "dest", where) as folder:
        args = ["train", str(bundle.folder), "--epochs", "1", "--out", str(folder)]
        assert main(args) == 1
        captured = capsys.readouterr()
        assert captured.out == "" and len(captured.err.strip().splitlines()) == 1, captured
        assert "OutputError: --out" in captured.err
        if where == "full":
            assert sorted(p.name for p in folder.iterdir()) == ["filler"]
        elif where == "file":
            assert folder.read_text(encoding="utf-8") == "mine"


def test_train_exports_the_retrained_model_and_says_which_file_is_which(
    bundle, tmp_path: Path, capsys
) -> None:
    """Issue 59: search train left the bundle's model.onnx the search's model. The retrained
    model's model.onnx (run by onnxruntime) and model.pt2 give its outputs, the bundle's
    stay the search's, and metrics.json's models names each file's model."""
    import numpy as np
    import onnxruntime as ort

    from search.trial import rebuild

    torch.set_num_threads(1)
    folder = tmp_path / "bundle"
    shutil.copytree(bundle.folder, folder)
    before = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    assert set(before["models"]) == {"model.pt", "model.onnx", "model.pt2"}
    assert all(said.startswith("the search's model") for said in before["models"].values())
    assert main(["train", str(folder), "--epochs", "1", "--seed", "3"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # wrapped to 100 columns, joined
    assert f"Retrained model: {folder / 'trained'}/model.pt, model.onnx, model.pt2" in out
    trained = folder / "trained"
    retrained = rebuild(trained / "model.pt").materialize().eval()
    x = _test_split().x[:64].cpu()
    with torch.no_grad():
        want = retrained(x).numpy()
        searched = load_bundle(folder)(x).numpy()
    assert not np.allclose(want, searched, atol=1e-3), "seed 3, one epoch: another model"
    for onnx, expected in ((trained / "model.onnx", want), (folder / "model.onnx", searched)):
        session = ort.InferenceSession(str(onnx))
        got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
        assert np.allclose(got, expected, atol=1e-5), onnx
    program = torch.export.load(str(trained / "model.pt2")).module()
    with torch.no_grad():
        assert torch.allclose(program(x), torch.from_numpy(want), atol=1e-5)
    after = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    assert {k: after["models"][k] for k in before["models"]} == before["models"]
    saved = json.loads((folder / "train.json").read_text(encoding="utf-8"))
    test = f"test accuracy {saved['metrics']['test_accuracy']:.4f}"
    for name in ("trained/model.pt", "trained/model.onnx", "trained/model.pt2"):
        said = after["models"][name]
        assert said.startswith("the retrained model (search train: 1 epoch(s) on train, seed 3")
        assert test in said, said
    assert saved["models"] == after["models"] and saved["onnx"]["file"] == "trained/model.onnx"
    assert saved["onnx"]["error"] is None
