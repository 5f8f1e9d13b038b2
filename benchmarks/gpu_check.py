"""What only a GPU shows: npas's CUDA paths run on a real one, end to end, as a user runs them.

Run on a machine with one CUDA GPU (never in CI, which has none)::

    python benchmarks/gpu_check.py --out results/gpu   # writes gpu_check.md there

1. ``search launch`` of a digits multi-fidelity search (MOASHA) whose trials ask
   ``{cpu: 2, gpu: 0.25}``: Ray packs four trials on the one GPU; each trial resolves its device
   from what Ray assigned; latency is timed with CUDA events, energy read from NVML, memory from
   the CUDA allocator. ``nvidia-smi`` is sampled meanwhile to count the trial processes on the GPU.
2. ``search export`` → ``search train --device cuda`` → the bundle loads on the CPU and gives
   the same test accuracy there.
3. One training epoch of mnist-tiny models on the GPU against one CPU thread (MNIST files from
   ``NPAS_DATA``; skipped with a line in the table when they are absent).
4. What came after the first GPU check: a training resumed from a checkpoint on the GPU against
   the uninterrupted run there; several seeds trained fused on the GPU against each alone; a
   streamed dataset (DataLoader, pinned memory) on the GPU; the ``sepnet`` family (unpadded,
   reused blocks) on the GPU; and a promotion-type MOASHA search on the GPU whose trials pause
   and resume from checkpoints, exported ``--from-checkpoint`` and retrained from it on the GPU.
6. The data-only config of the unaided search (a generated signal set) as shipped and with trials
   that ask for a share of the GPU: launch, finalists and refit on a GPU machine, ``search
   export`` without ``--select``, the ONNX model scored again on the CPU with onnxruntime.
7. Without Ray (it needs no search packages): a cross-validated trial of each 1-D family on
   the GPU, its saved model rebuilt and scored on the CPU and through ONNX; conv1d seeds fused.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from benchmarks.generated_signals import waves

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str) -> subprocess.CompletedProcess:
    """``search ...`` in a child, as a user types it; its output echoed."""
    done = subprocess.run([sys.executable, "-m", "search", *args], cwd=ROOT,
                          capture_output=True, text=True)  # fmt: skip
    print("$ search", " ".join(args), "→", done.returncode, flush=True)
    print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", flush=True)
    return done


class GpuSampler(threading.Thread):
    """Samples the compute processes on the GPU once per ``period`` seconds."""

    def __init__(self, period: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.period, self.most, self.samples, self.stop = period, 0, 0, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            query = ["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"]
            out = subprocess.run(query, capture_output=True, text=True).stdout
            self.most = max(self.most, len([line for line in out.splitlines() if line.strip()]))
            self.samples += 1
            time.sleep(self.period)


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    running = best = 0
    for _, step in events:
        running += step
        best = max(best, running)
    return best


def check_search(out: Path, gpu: float, device: str) -> list[str]:
    """A packed multi-fidelity search on the GPU; the lines of its section."""
    import optuna

    from search.record._records import conditions_of, metrics_of
    config = yaml.safe_load((ROOT / "search/config/presets/digits-quick.yaml").read_text())
    config.update(
        name="gpu-check", trials=16, resources={"cpu": 2, "gpu": gpu},
        scheduler={"name": "moasha", "grace_epochs": 2, "reduction_factor": 2},
        indicators=["params", "flops_infer", "latency_ms", "peak_mem_infer_mb",
                    "energy_infer_j"],
        measure={"threads": 1, "warmup": 2, "latency_budget_s": 0.2,
                 "latency_max_repeats": 50, "energy_budget_s": 0.25},
    )  # fmt: skip
    path = out / "gpu-check.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    sampler = GpuSampler()
    sampler.start()
    start = time.time()
    launched = _cli("launch", str(path), "--out", str(out / "run"), "--quiet")
    wall = time.time() - start
    sampler.stop.set()
    study = optuna.load_study(study_name="gpu-check", storage=f"sqlite:///{out}/run/npas.db")
    trials = study.get_trials(deepcopy=False)
    states = {s.name: sum(t.state == s for t in trials) for s in optuna.trial.TrialState}
    spans = [(t.datetime_start.timestamp(), t.datetime_complete.timestamp()) for t in trials
             if t.datetime_start and t.datetime_complete]  # fmt: skip
    conditions = conditions_of(study)
    metrics = [metrics_of(t, conditions) for t in trials]

    def seen(key: str) -> str:
        return ", ".join(sorted({str(m[key]) for m in metrics if key in m})) or "(none)"

    lines = [
        f"## 1. `search launch`: 16 trials of `{{cpu: 2, gpu: {gpu}}}` on one GPU, MOASHA "
        "(grace 2, reduction factor 2), digits-quick space",
        "",
        "| what | seen |",
        "|---|---|",
        f"| exit status | {launched.returncode} |",
        f"| wall-clock | {wall:.0f} s |",
        f"| trial states | {', '.join(f'{k} {v}' for k, v in states.items() if v)} |",
        f"| most trials running at once (storage start/end times) | {_most_at_once(spans)} |",
        f"| most processes on the GPU at once (nvidia-smi, {sampler.samples} samples) "
        f"| {sampler.most} |",
        f"| GPU ids Ray gave the trials (`cond_ray_gpu_ids`) | {seen('cond_ray_gpu_ids')} |",
        f"| device the trials measured on (`cond_device`) | {seen('cond_device')} |",
        f"| latency timer (`cond_timer`) | {seen('cond_timer')} |",
        f"| energy source (`energy_source`) | {seen('energy_source')} |",
        f"| peak inference memory, MiB (min–max) | {_span(metrics, 'peak_mem_infer_mb')} |",
        f"| latency, ms (min–max) | {_span(metrics, 'latency_ms')} |",
        f"| energy per inference sample, J (min–max) | {_span(metrics, 'energy_infer_j')} |",
        f"| search energy (study attribute), J | {study.user_attrs.get('search_energy_j')} "
        f"({study.user_attrs.get('search_energy_source', '')}) |",
        "",
    ]
    return lines + check_bundle(out, device)


def _span(metrics: list[dict[str, Any]], key: str) -> str:
    values = [float(m[key]) for m in metrics if isinstance(m.get(key), (int, float))]
    return f"{min(values):.4g}–{max(values):.4g}" if values else "(none)"


def check_bundle(out: Path, device: str) -> list[str]:
    """Export the knee, retrain it on the GPU, and evaluate the result on the CPU."""
    storage = f"sqlite:///{out}/run/npas.db"
    exported = _cli("export", "--storage", storage, "--out", str(out / "bundle"))
    trained = _cli("train", str(out / "bundle"), "--epochs", "4", "--device", device)
    lines = ["## 2. `search export` → `search train --device cuda` → load on the CPU", "",
             "| what | seen |", "|---|---|",
             f"| export / train exit status | {exported.returncode} / {trained.returncode} |"]
    record_path = out / "bundle" / "train.json"
    if record_path.exists():
        record = json.loads(record_path.read_text())
        retrained, cfg = record["metrics"], record["trial_config"]
        lines += [f"| retrained on | {retrained.get('cond_device', '?')} |",
                  f"| retrained test accuracy (GPU) | {retrained.get('test_accuracy')} |"]
        from objectives.datasets import load  # here: the CLI children above need none of it
        from objectives.train import evaluate
        from search.trial import rebuild

        net = rebuild(out / "bundle" / "trained" / "model.pt")  # on the CPU
        data = load(cfg["dataset"], seed=cfg["seed"], val_size=cfg.get("val_size"))
        accuracy = evaluate(net, data.test.x, data.test.y)["accuracy"]
        lines.append(f"| the same weights evaluated on the CPU | {accuracy} |")
    return [*lines, ""]


def check_epochs() -> list[str]:
    """One epoch of small models on the GPU and on one CPU thread."""
    from objectives.datasets import load
    from objectives.train import Recipe, fit
    from spaces import build_model
    from spaces.ssn import shapeshift

    lines = ["## 3. One training epoch, MNIST (first 10,000 images), batch 128", "",
             "| model | params | GPU s/epoch | CPU (1 thread) s/epoch | CPU / GPU |",
             "|---|---:|---:|---:|---:|"]
    if not os.environ.get("NPAS_DATA"):
        return [*lines, "| (NPAS_DATA unset: no MNIST files) | | | | |", ""]
    models = {
        "convnet d3 w4": lambda: build_model("convnet", (1, 28, 28), 10, depth=3, width=4),
        "convnet d3 w8, SSN 1000": lambda: shapeshift(
            build_model("convnet", (1, 28, 28), 10, depth=3, width=8), 1000),
        "scs 4-4-4": lambda: build_model("scs", (1, 28, 28), 10, widths=(4, 4, 4)),
    }
    torch.set_num_threads(1)
    for name, make in models.items():
        times = {}
        for device in ("cuda", "cpu"):
            data = load("mnist", seed=0, device=device, train_size=10_000)
            torch.manual_seed(0)
            net = make().to(device)
            fit(net, data, Recipe(epochs=1))  # warm-up: kernels, allocator
            net = make().to(device)
            start = time.perf_counter()
            fit(net, data, Recipe(epochs=1))
            if device == "cuda":
                torch.cuda.synchronize()
            times[device] = time.perf_counter() - start
        params = sum(p.numel() for p in make().parameters())
        lines.append(f"| {name} | {params:,} | {times['cuda']:.2f} | {times['cpu']:.2f} "
                     f"| {times['cpu'] / times['cuda']:.1f}x |")
    return [*lines, ""]


def _max_diff(a: torch.nn.Module, b: torch.nn.Module) -> float:
    return max(float((x.float() - y.float()).abs().max())
               for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


def check_training(device: str) -> list[str]:
    """Resume, fused seeds, streaming and sepnet, on the GPU, with digits."""
    from objectives._fused import fit_seeds
    from objectives.datasets import load
    from objectives.train import Recipe, fit
    from spaces import build_model

    lines = ["## 4. Training paths added since the first check (digits, on the GPU)", "",
             "| what | seen |", "|---|---|"]
    data = load("digits", seed=0, device=device)

    def make(seed: int) -> torch.nn.Module:
        torch.manual_seed(seed)
        return build_model("sepnet", (1, 8, 8), 10, stem=8, stem_pool=False, blocks=1,
                           width=12, reuse=2, dropout=0.1, dropout_every=True).to(device)

    recipe = Recipe(epochs=6, optimizer="adamw", schedule="cosine", lr=0.02,
                    label_smoothing=0.1, batch_size=64)
    states: list[dict[str, Any]] = []
    whole = make(0)
    full = fit(whole, data, recipe, seed=3, on_state=states.append)
    resumed = make(99)
    part = fit(resumed, data, recipe, seed=3, resume=states[2])
    curve = [[r["val_accuracy"] for r in run.history] for run in (full, part)]
    lines += [f"| sepnet (reuse 2, dropout everywhere) trains on | "
              f"{next(whole.parameters()).device}, val accuracy {curve[0][-1]:.4f} (6 epochs) |",
              f"| resumed from epoch 3 vs uninterrupted: same validation curve "
              f"| {curve[0] == curve[1]} |",
              f"| resumed vs uninterrupted: largest weight difference "
              f"| {_max_diff(whole, resumed):.3g} |"]
    with torch.backends.cudnn.flags(deterministic=True, benchmark=False):
        states.clear()
        whole, resumed = make(0), make(99)
        fit(whole, data, recipe, seed=3, on_state=states.append, bf16=False)
        fit(resumed, data, recipe, seed=3, resume=states[2], bf16=False)
    lines.append(f"| the same in float32 with deterministic cuDNN: largest weight difference "
                 f"| {_max_diff(whole, resumed):.3g} |")

    seeds = [0, 1, 2, 3]
    for bf16 in (None, False):  # fit's default on the GPU (bf16 autocast), then float32
        start = time.perf_counter()
        fused = fit_seeds([make(s) for s in seeds], data, replace(recipe, epochs=3), seeds=seeds,
                          bf16=bf16)  # fmt: skip
        fused_s = time.perf_counter() - start
        start = time.perf_counter()
        laid_out = replace(recipe, epochs=3, channels_last=False)  # as the fused run lays them
        alone = [fit(make(s), data, laid_out, seed=s, bf16=bf16) for s in seeds]
        alone_s = time.perf_counter() - start
        gap = max(abs(a.history[-1]["val_accuracy"] - b.history[-1]["val_accuracy"])
                  for a, b in zip(fused, alone, strict=True))  # fmt: skip
        lines += [f"| 4 seeds, bf16={fused[0].config['bf16']}: `fused` (k, or why not) "
                  f"| {fused[0].config['fused']} |",
                  f"| the same: time fused vs each alone; largest val-accuracy gap "
                  f"| {fused_s:.1f} s vs {alone_s:.1f} s; {gap:.4f} |"]  # fmt: skip

    streamed = load("digits", seed=0, device=device, stream=True, workers=2)
    net = make(0)
    start = time.perf_counter()
    result = fit(net, streamed, replace(recipe, epochs=2), seed=0)
    lines += [f"| streamed digits (DataLoader, 2 workers, pinned) on the GPU: 2 epochs | "
              f"{time.perf_counter() - start:.1f} s, val accuracy "
              f"{result.history[-1]['val_accuracy']:.4f} |", ""]
    return lines


def check_promotion(out: Path, gpu: float, device: str) -> list[str]:
    """A promotion-type MOASHA search on the GPU; the front's checkpoint exported and
    retrained on the GPU, then evaluated on the CPU."""
    import optuna

    from search.record._schema import TrialAttr

    config = yaml.safe_load((ROOT / "search/config/presets/digits-quick.yaml").read_text())
    config.update(name="gpu-promotion", trials=12, resources={"cpu": 2, "gpu": gpu},
                  scheduler={"name": "moasha", "type": "promotion", "grace_epochs": 2,
                             "reduction_factor": 2},
                  indicators=["params", "flops_infer"])  # fmt: skip
    path = out / "gpu-promotion.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    start = time.time()
    launched = _cli("launch", str(path), "--out", str(out / "promo"), "--quiet")
    wall = time.time() - start
    storage = f"sqlite:///{out}/promo/npas.db"
    study = optuna.load_study(study_name="gpu-promotion", storage=storage)
    trials = study.get_trials(deepcopy=False)
    states = {s.name: sum(t.state == s for t in trials) for s in optuna.trial.TrialState}
    outcomes: dict[str, int] = {}
    for trial in trials:
        for decision in trial.user_attrs.get(TrialAttr.DECISIONS, []):
            outcomes[decision["outcome"]] = outcomes.get(decision["outcome"], 0) + 1
    bundle = out / "promo-bundle"
    exported = _cli("export", "--storage", storage, "--out", str(bundle), "--from-checkpoint")
    trained = _cli("train", str(bundle), "--epochs", "2", "--device", device,
                   "--from-checkpoint")  # fmt: skip
    lines = [f"## 5. Promotion-type MOASHA on the GPU (12 trials of `{{cpu: 2, gpu: {gpu}}}`, "
             "grace 2, reduction factor 2), then `export --from-checkpoint` and `train "
             "--from-checkpoint --device cuda`", "", "| what | seen |", "|---|---|",
             f"| exit status / wall-clock | {launched.returncode} / {wall:.0f} s |",
             f"| trial states | {', '.join(f'{k} {v}' for k, v in states.items() if v)} |",
             f"| rung decisions stored | {outcomes} |",
             f"| export / train exit status | {exported.returncode} / {trained.returncode} |"]
    record_path = bundle / "train.json"
    if record_path.exists():
        record = json.loads(record_path.read_text())
        lines += [f"| retrained from | {record.get('from_checkpoint')} |",
                  f"| retrained on / test accuracy | {record['metrics'].get('cond_device')} / "
                  f"{record['metrics'].get('test_accuracy')} |"]
    return [*lines, ""]


def _waves_npz(out: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    """The generated signal set written as ``out/waves.npz``: its path and its test split."""
    (x_train, y_train), (x_test, y_test) = waves(240, 1), waves(120, 2)
    path = out / "waves.npz"
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    return path, x_test, y_test


def _onnx_accuracy(model: Path, x: np.ndarray, y: np.ndarray) -> float:
    """The accuracy of an exported ``model.onnx`` on ``(x, y)``, under onnxruntime's CPU."""
    import onnxruntime

    session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    logits = session.run(None, {session.get_inputs()[0].name: x.astype(np.float32)})[0]
    return float((logits.argmax(1) == y).mean())


def _seconds(limit: str) -> float:
    """A ``limits.time`` of seconds or minutes ("90", "2m") in seconds."""
    return float(limit[:-1]) * 60 if limit.endswith("m") else float(limit)


def check_unaided(out: Path, gpu: float, limit: str) -> list[str]:
    """The data-only config (issue 57) on a GPU machine: as shipped (the derived
    ``resources``), then with trials that ask for a share of the GPU; each exported without
    ``--select`` and its ONNX model scored again on the CPU."""
    import optuna

    from search.config import FinalistsConfig
    from search.record._records import conditions_of, metrics_of
    from search.record._schema import StudyAttr

    data, x_test, y_test = _waves_npz(out)
    lines = ["## 6. The data-only config on the GPU machine (a generated 2×96 signal set, 240 "
             f"training and 120 test series, `params <= 2000`, `limits.time: {limit}`)", "",
             "| what | as shipped | `resources: {cpu: 2, gpu: " + f"{gpu}" + "}` |",
             "|---|---|---|"]
    rows: dict[str, list[str]] = {}
    for arm, extra in (("shipped", {}), ("gpu", {"resources": {"cpu": 2, "gpu": gpu}})):
        name = f"gpu-unaided-{arm}"
        config = {"name": name, "dataset": {"name": "waves", "npz": str(data),
                                            "layout": "signal"},
                  "objectives": [["accuracy", "maximize"], ["params", "minimize"]],
                  "constraints": ["params <= 2000"], "limits": {"time": limit}, "seed": 0,
                  **extra}  # fmt: skip
        path = out / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        checked = _cli("check", str(path))
        sampler = GpuSampler()
        sampler.start()
        start = time.time()
        launched = _cli("launch", str(path), "--out", str(out / name))
        wall = time.time() - start
        sampler.stop.set()
        bundle = out / f"{name}-bundle"
        exported = _cli("export", "--run", str(out / name), "--name", name, "--out",
                        str(bundle))  # fmt: skip
        study = optuna.load_study(study_name=name, storage=f"sqlite:///{out}/{name}/npas.db")
        trials = study.get_trials(deepcopy=False)
        conditions = conditions_of(study)
        devices = sorted({str(metrics_of(t, conditions).get("cond_device")) for t in trials})
        found = study.user_attrs.get(StudyAttr.RECOMMENDATION) or {}
        runs = sum(len(f.get("seeds") or []) for f in found.get("finalists") or [])
        refit = found.get("refit") or {}
        written = json.loads((bundle / "metrics.json").read_text()) if exported.returncode == 0 \
            else {}  # fmt: skip
        test = (written.get("exported") or {}).get("test_accuracy")
        onnx = "(no bundle)"
        if (bundle / "model.onnx").exists():
            pre = written["data"].get("preprocessing")
            xs = x_test
            if pre:
                xs = (x_test * np.asarray(pre["multiply"], np.float32)[:, None]
                      - np.asarray(pre["subtract"], np.float32)[:, None])  # fmt: skip
            onnx = f"{_onnx_accuracy(bundle / 'model.onnx', xs, y_test):.4f}"
        rows.setdefault("`search check` / launch / export exit status", []).append(
            f"{checked.returncode} / {launched.returncode} / {exported.returncode}")
        rows.setdefault("wall-clock of the launch", []).append(f"{wall:.0f} s")
        rows.setdefault("trials; devices they trained on (`cond_device`)", []).append(
            f"{len(trials)}; {', '.join(devices)}")
        rows.setdefault("most processes on the GPU at once (nvidia-smi samples)", []).append(
            f"{sampler.most} ({sampler.samples} samples)")
        starts = [t.datetime_start for t in trials if t.datetime_start]
        ends = [t.datetime_complete for t in trials if t.datetime_complete]
        last = (max(ends) - min(starts)).total_seconds() if starts and ends else float("nan")
        share = _seconds(limit) * (1 - FinalistsConfig().share)
        rows.setdefault("the search's share of the time; its last trial ended at", []).append(
            f"{share:.0f} s; {last:.0f} s after its first started")
        rows.setdefault("recommended trial; finalist runs; refit", []).append(
            f"{found.get('trial')}; {runs}; {refit.get('note') or refit.get('skipped') or ''}")
        rows.setdefault("exported test accuracy; the ONNX model on the CPU", []).append(
            f"{test}; {onnx}")
    lines += [f"| {what} | {' | '.join(seen)} |" for what, seen in rows.items()]
    return [*lines, ""]


def check_signal_trials(out: Path) -> list[str]:
    """Without Ray: a cross-validated trial of each 1-D family on the GPU (five folds and a
    model of every sample, checked on its own samples; one Shapeshifted into a budget), its
    saved model rebuilt and scored on the CPU, exported to ONNX and scored by
    onnxruntime; then four seeds of conv1d fused, under bf16 autocast and without."""
    from objectives._fused import fit_seeds
    from objectives.train import Recipe, evaluate
    from search.bundle._portable import write_onnx
    from search.config import TrialConfig
    from search.trial import rebuild, run_trial, trial_data
    from spaces import build_model

    path = _waves_npz(out)[0]
    dataset = {"name": "waves", "npz": str(path), "layout": "signal", "augment": {"shift": 9}}
    lines = ["## 7. Cross-validated trials of the 1-D families on the GPU (the generated 2×96 "
             "signal set, 5 folds, 8 epochs), without Ray", "",
             "| family | device | CV accuracy | fit (tries) | test: GPU / CPU rebuilt / "
             "ONNX | error |", "|---|---|---|---|---|---|"]  # fmt: skip
    cases = {
        "conv1d": {"family": "conv1d", "hyper": {"depth": 2, "width": 8}},
        "sepconv1d, SSN budget 600": {"family": "sepconv1d", "budget": 600,
                                      "ssn": {"upsampler": "inter"},
                                      "hyper": {"depth": 3, "width": 12}},
        "resnet1d": {"family": "resnet1d", "hyper": {"width": 8}},
    }  # fmt: skip
    for name, case in cases.items():
        folder = out / f"trial-{case['family']}"
        cfg = {"dataset": dataset, **case, "folds": 5, "report_test": True, "seed": 0,
               "artifact_dir": str(folder), "indicators": ["params", "latency_ms"],
               "objectives": [["accuracy", "maximize"], ["params", "minimize"]],
               "train": {"epochs": 8, "batch_size": 32, "optimizer": "sgd", "lr": 0.05,
                         "schedule": "onecycle"}}  # fmt: skip
        try:
            got = run_trial(cfg)
            if "artifact" not in got:
                raise RuntimeError(f"not trained: {got.get('infeasible_reason')}")
            net = rebuild(got["artifact"])
            net = net.materialize() if hasattr(net, "materialize") else net
            data = trial_data(TrialConfig.from_dict(cfg), "cpu")
            cpu = evaluate(net, data.test)["accuracy"]
            record = write_onnx(net, data.test.x[:4], folder)
            onnx = _onnx_accuracy(folder / "model.onnx", data.test.x.numpy(),
                                  data.test.y.numpy())  # fmt: skip
            lines.append(f"| {name} | {got.get('cond_device')} | {got['accuracy']:.4f} | "
                         f"{got.get('fit_accuracy'):.4f} ({got.get('fit_tries')}) | "
                         f"{got['test_accuracy']:.4f} / {cpu:.4f} / {onnx:.4f} | "
                         f"{record.get('error') or ''} |")  # fmt: skip
        except Exception as err:  # the table says what broke; the run goes on
            lines.append(f"| {name} | | | | | {type(err).__name__}: {str(err)[:200]} |")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    cfg = TrialConfig.from_dict({"dataset": dataset, "family": "conv1d", "seed": 0})
    data = trial_data(cfg, device)
    recipe = Recipe(epochs=8, optimizer="sgd", lr=0.05, schedule="onecycle", batch_size=32)

    def make(seed: int) -> torch.nn.Module:
        torch.manual_seed(seed)
        return build_model("conv1d", (2, 96), 3, depth=2, width=8).to(device)

    seeds = [0, 1, 2, 3]
    for bf16 in (None, False):  # fit's default on the GPU (bf16 autocast), then float32
        try:
            fused = fit_seeds([make(s) for s in seeds], data, recipe, seeds=seeds, bf16=bf16)
            val = ", ".join(f"{r.history[-1]['val_accuracy']:.3f}" for r in fused)
            lines.append(f"| conv1d, 4 seeds, bf16={fused[0].config['bf16']}: `fused` "
                         f"{fused[0].config['fused']} | {device} | | | val {val} | |")  # fmt: skip
        except Exception as err:  # the table says what broke; the run goes on
            lines.append(f"| conv1d, 4 seeds fused, bf16={bf16} | | | | | "
                         f"{type(err).__name__}: {str(err)[:200]} |")  # fmt: skip
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--skip", default="",
                        help="sections to skip: search,epochs,training,promotion,unaided,signal")
    parser.add_argument("--gpu", type=float, default=0.25, help="GPUs per trial")
    parser.add_argument("--unaided-time", default="2m", help="section 6's limits.time")
    parser.add_argument("--device", default="cuda", help="`search train --device`")
    args = parser.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("gpu_check: torch sees no CUDA device")
    args.out.mkdir(parents=True, exist_ok=True)
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    lines = [
        "# GPU check: npas's CUDA paths on a real GPU", "",
        f"- GPU: {gpu}; torch {torch.__version__}; "
        f"CPU cores: {os.cpu_count()}; {time.strftime('%Y-%m-%d')}",
        "- `python benchmarks/gpu_check.py` (its docstring says what each section checks)", "",
    ]
    skip = set(filter(None, args.skip.split(",")))
    if "search" not in skip:
        lines += check_search(args.out, args.gpu, args.device)
    if "epochs" not in skip:
        lines += check_epochs()
    if "training" not in skip:
        lines += check_training(args.device)
    if "promotion" not in skip:
        lines += check_promotion(args.out, args.gpu, args.device)
    if "unaided" not in skip:
        lines += check_unaided(args.out, args.gpu, args.unaided_time)
    if "signal" not in skip:
        lines += check_signal_trials(args.out)
    (args.out / "gpu_check.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
