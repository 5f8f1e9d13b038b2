"""The manual's "Your own model and data" page (docs/user-plugins.md): its commands, run as
written on a copy of ``examples/`` (a real local Ray search of the example plugin), then what
the page says of later commands: the recorded modules are imported again, ``--no-imports``
names what it lacks, and a module that is gone is named with the flag that supplies it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

pytestmark = pytest.mark.slow  # the page's commands, each a process, on the example


ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "user-plugins.md"


def readme_commands() -> list[str]:
    """The page's first bash block, one command a line."""
    block = re.search(r"```bash\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert block is not None, "the page has no bash block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_commands_search_export_and_rebuild_the_example(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "PYTHONPATH": str(ROOT)}  # fmt: skip
    outputs = {}
    for command in readme_commands():
        run = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=400)  # fmt: skip
        assert run.returncode == 0, f"{command}\n{run.stderr[-3000:]}"
        outputs[command.split()[1]] = run
    storage = f"sqlite:///{tmp_path}/runs/shapes/npas.db"
    study = optuna.load_study(study_name="shapes", storage=storage)
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(done) == 4 and all(t.user_attrs["metric_weight_bytes_int8"] > 0 for t in done)
    assert "weight_bytes_int8" in outputs["pareto"].stdout
    assert "importing the search's modules" in outputs["export"].stderr
    assert "TinyCNN(" in outputs["-c"].stdout  # load_bundle rebuilt the user's family
    # The bundle's README loads it in a fresh process as it says (its snippet once called
    # build_model alone: unknown family 'tiny-cnn'), and renders the declaration as YAML.
    bundle = tmp_path / "runs/shapes/bundle"
    text = (bundle / "README.md").read_text(encoding="utf-8")
    snippet = re.search(r"## Load it in your own code.*?```python\n(.*?)```", text, re.S).group(1)
    code = snippet + "print(type(model).__name__)"
    loaded = subprocess.run([sys.executable, "-c", code], cwd=bundle, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert loaded.returncode == 0 and "TinyCNN" in loaded.stdout, loaded.stderr[-2000:]
    assert "shapes_plugin.py" in text and "```yaml\ndataset:\n  name: shapes\n" in text
    assert "{'name'" not in text

    def search(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["search", *args, "--run", "runs/shapes", "--name", "shapes"],
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)  # fmt: skip

    report = search("report", "--out", "report")
    assert report.returncode == 0, report.stderr[-3000:]
    assert "weight_bytes_int8" in (tmp_path / "report/report.md").read_text()
    retrained = subprocess.run(["search", "train", "runs/shapes/bundle", "--epochs", "1"],
                               cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=300)  # fmt: skip
    assert retrained.returncode == 0, retrained.stderr[-3000:]
    assert "importing the bundle's modules" in retrained.stderr
    assert "weight_bytes_int8" in retrained.stdout
    status = subprocess.run(["search", "status", "--run", "runs/shapes"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert status.returncode == 0 and "4 feasible" in status.stdout, status.stdout

    refused = search("export", "--out", "b2", "--no-imports")
    assert refused.returncode == 2
    assert "needs module 'shapes_plugin', not imported (--no-imports)" in refused.stderr
    (tmp_path / "moved").mkdir()
    (tmp_path / "examples/shapes/shapes_plugin.py").rename(tmp_path / "moved/shapes_plugin.py")
    gone = search("pareto")
    assert gone.returncode == 2 and "module 'shapes_plugin'" in gone.stderr
    assert "--import" in gone.stderr.strip().splitlines()[-1]
    supplied = search("pareto", "--import", "moved/shapes_plugin.py")
    assert supplied.returncode == 0 and "weight_bytes_int8" in supplied.stdout
