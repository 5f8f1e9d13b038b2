"""The choice study (benchmarks/choice_study.py): each rule's pick and the paired table on
searches made by hand."""

from __future__ import annotations

import json

import pytest

from tests._support.bundles import load_benchmark

#: Four trials: 2 and 3 tie on cv accuracy (3 has the lower loss), 1 has the lowest loss.
ROWS = [
    {"number": 0, "cv_acc": 0.70, "val_loss": 0.80, "params": 10, "test": 0.60},
    {"number": 1, "cv_acc": 0.80, "val_loss": 0.40, "params": 10, "test": 0.70},
    {"number": 2, "cv_acc": 0.90, "val_loss": 0.60, "params": 10, "test": 0.95},
    {"number": 3, "cv_acc": 0.90, "val_loss": 0.50, "params": 10, "test": 0.75},
]


@pytest.fixture(scope="module")
def study():
    return load_benchmark("choice_study")


def test_each_rule_picks_the_trial_worked_out_by_hand(study):
    picks = {k: r["number"] for k, r in study.rule_picks(ROWS).items()}
    # cv: 2 and 3 tie at 0.90, 3's loss is lower; loss: 1 (0.40); places by cv 3, 2, 1, 0 and
    # by loss 1, 3, 2, 0, so the sums are 3: 0 + 1, 2: 1 + 2, 1: 2 + 0, 0: 3 + 3 and rank
    # picks 3; oracle: the best test of the top 5, trial 2 (0.95)
    assert picks == {"cv": 3, "loss": 1, "rank": 3, "cvp": 3, "oracle": 2}
    # cvp: 2 and 3 tie at 0.90; with fewer params 2 wins the tie before the loss does
    smaller = [{**r, "params": 5} if r["number"] == 2 else r for r in ROWS]
    assert study.rule_picks(smaller)["cvp"]["number"] == 2


def test_a_finalist_stage_picks_the_best_mean_of_its_top_k_over_s_seeds(study):
    retrained = {"3": [0.7, 0.7, 0.7], "2": [0.8, 0.5, 0.9], "1": [1.0, 1.0, 1.0]}
    # top 2 by cv: 3, 2. s = 1: 2 (0.8 > 0.7); s = 2: 3 (0.70 > 0.65); s = 3: 2 (0.733)
    assert [study.finalist_pick(ROWS, retrained, 2, s)["number"] for s in (1, 2, 3)] == [2, 3, 2]
    assert study.finalist_pick(ROWS, retrained, 3, 1)["number"] == 1  # 1.0 among the top 3
    assert study.finalist_pick(ROWS, {"3": [0.5, 0.5]}, 1, 2)["number"] == 3
    # equal means: the search's order (3 before 2)
    assert study.finalist_pick(ROWS, {"3": [0.6], "2": [0.6]}, 2, 1)["number"] == 3
    assert study.finalist_pick(ROWS, retrained, 2, 4) is None  # fewer than 4 seeds retrained
    # a failed run (None) puts its trial out of the choice; all failed: no pick
    assert study.finalist_pick(ROWS, {"3": [0.9, None], "2": [0.6, 0.6]}, 2, 2)["number"] == 2
    assert study.finalist_pick(ROWS, {"3": [None], "2": [None]}, 2, 1) is None


def test_the_table_pairs_each_rule_with_the_engine_s_recommendation(study, tmp_path):
    for seed, recommended in enumerate([2, 1]):
        folder = tmp_path / "arrowhead" / "e7" / f"seed{seed}"
        folder.mkdir(parents=True)
        (folder / "choices.json").write_text(json.dumps({"rows": ROWS,
                                                         "recommended": recommended}))  # fmt: skip
    (tmp_path / "arrowhead" / "e7" / "seed0" / "retrained.json").write_text(
        json.dumps({"3": [0.7], "2": [0.8]}))  # fmt: skip
    text = study.table([tmp_path], [(2, 1)])
    # cv picks 3 (0.75) in both; the engine 2 (0.95) then 1 (0.70): differences -0.20, +0.05,
    # mean -0.075; F(2,1) only in seed 0 (one search: no row)
    row = next(line for line in text.splitlines() if line.startswith("| arrowhead | cv |"))
    assert row.startswith("| arrowhead | cv | 2 | 0.7500 | 0.8250 | -0.0750 [")
    assert "F(2,1)" not in text
    assert "| all | oracle | 2 | 0.9500 | 0.8250 | +0.1250 [" in text


def test_a_bag_s_member_is_the_best_trial_within_its_share_of_the_limit(study):
    rows = [{**r, "params": p} for r, p in zip(ROWS, (300, 400, 600, 500), strict=True)]
    # limit 1000: a bag of 2 takes trials <= 500 (3, 1, 0 by cv: 3), of 3 <= 333 (0 only), of
    # 4 <= 250 (none)
    assert [study.candidate(rows, 1000, s) for s in (2, 3)] == [rows[3], rows[0]]
    assert study.candidate(rows, 1000, 4) is None


def test_a_bag_averages_its_members_softmax_outputs(study):
    import torch

    labels = torch.tensor([0, 1, 1])
    one = torch.tensor([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])  # right on 0 and 2: 2/3
    two = torch.tensor([[0.6, 0.4], [0.1, 0.9], [0.7, 0.3]])  # right on 0 and 1: 2/3
    # the mean: [0.75, 0.25], [0.35, 0.65], [0.45, 0.55]: right on all three
    assert study.bag_accuracy([one], labels) == pytest.approx(2 / 3)
    assert study.bag_accuracy([two], labels) == pytest.approx(2 / 3)
    assert study.bag_accuracy([one, two], labels) == 1.0


def test_the_table_shows_a_bag_beside_its_member_alone(study, tmp_path):
    rows = [{**r, "params": p} for r, p in zip(ROWS, (300, 400, 600, 500), strict=True)]
    for seed in range(2):
        folder = tmp_path / "gunpoint" / "e5" / f"seed{seed}"
        folder.mkdir(parents=True)
        (folder / "choices.json").write_text(json.dumps({"rows": rows, "recommended": 2}))
        (folder / "bagged.json").write_text(json.dumps(
            {"2": {"trial": 3, "params": 500, "test": 0.85 + 0.1 * seed, "members": []}}))
    text = study.table([tmp_path], [])
    # the engine's pick, 2, scores 0.95; the bags 0.85 and 0.95 (mean -0.05); trial 3 alone 0.75
    assert "| gunpoint | bag(2) | 2 | 0.9000 | 0.9500 | -0.0500 [" in text
    assert "| gunpoint | small(2) | 2 | 0.7500 | 0.9500 | -0.2000 [" in text


def test_the_table_sets_the_distilled_runs_beside_the_plain_ones(study, tmp_path):
    for seed, (plain, distilled) in enumerate([([0.9, 0.8, 0.7], [0.9, 0.9, 0.9]),
                                               ([0.5, 0.5, 0.5], [0.6, 0.6, 0.6])]):
        folder = tmp_path / "shapes" / "e8" / f"seed{seed}"
        folder.mkdir(parents=True)
        (folder / "choices.json").write_text(json.dumps({"rows": ROWS, "recommended": 3}))
        (folder / "distilled.json").write_text(json.dumps({"plain": plain,
                                                            "distilled": distilled}))
    text = study.table([tmp_path], [])
    # each arm is its seeds' mean: plain 0.8 and 0.5, distilled 0.9 and 0.6; the engine's pick
    # (3) scores 0.75 in both: plain +0.05, -0.25 (mean -0.10), distilled +0.15, -0.15 (0.00)
    assert "| shapes | plain | 2 | 0.6500 | 0.7500 | -0.1000 [" in text
    assert "| shapes | distilled | 2 | 0.7500 | 0.7500 | +0.0000 [" in text


def test_the_table_pairs_each_arm_with_what_it_is_measured_against(study, tmp_path):
    for seed, (plain, distilled) in enumerate([([0.8], [0.9]), ([0.6], [0.6])]):
        folder = tmp_path / "shapes" / "e8" / f"seed{seed}"
        folder.mkdir(parents=True)
        (folder / "choices.json").write_text(json.dumps({"rows": ROWS, "recommended": 3}))
        (folder / "distilled.json").write_text(json.dumps({"plain": plain,
                                                            "distilled": distilled}))
    # distilled - plain: +0.1 and 0.0, mean +0.05
    assert "| all | distilled | plain | 2 | 0.7500 | 0.7000 | +0.0500 [" in study.table(
        [tmp_path], [])


def test_the_one_standard_error_rule_picks_the_smallest_finalist_near_the_best(study):
    rows = [{**r, "params": p} for r, p in zip(ROWS, [50, 40, 90, 30], strict=True)]
    finalists = [  # the search's order: 3, 2, 1
        {"trial": 3, "qualified": True, "mean": 0.80, "std": 0.06, "n": 4},
        {"trial": 2, "qualified": True, "mean": 0.90, "std": 0.06, "n": 4},
        {"trial": 1, "qualified": True, "mean": 0.88, "std": 0.02, "n": 4},
    ]
    # best 2 (0.90), se 0.06 / 2 = 0.03: 2 and 1 (0.88 >= 0.87) are near, 3 (0.80) is not;
    # the fewer params: 1 (40 against 90)
    assert study.one_se_pick(rows, finalists)["number"] == 1
    # one seed: no standard error, the best mean alone
    assert study.one_se_pick(rows, [{**f, "n": 1, "std": None} for f in finalists])["number"] == 2
    # a finalist not qualified is out even when smaller; equal params: the higher mean
    out = [{**finalists[0], "mean": 0.89, "qualified": False}, *finalists[1:]]
    assert study.one_se_pick(rows, out)["number"] == 1
    level = [{**r, "params": 10} for r in rows]
    assert study.one_se_pick(level, finalists)["number"] == 2
    assert study.one_se_pick(rows, [{**f, "qualified": False} for f in finalists]) is None


def test_the_table_sets_the_one_standard_error_pick_beside_the_engine_s(study, tmp_path):
    rows = [{**r, "params": p} for r, p in zip(ROWS, [50, 40, 90, 30], strict=True)]
    finalists = [{"trial": 2, "qualified": True, "mean": 0.90, "std": 0.06, "n": 4},
                 {"trial": 1, "qualified": True, "mean": 0.88, "std": 0.02, "n": 4}]
    for seed in (0, 1):
        folder = tmp_path / "wine" / "e11" / f"seed{seed}"
        folder.mkdir(parents=True)
        (folder / "choices.json").write_text(json.dumps(
            {"rows": rows, "recommended": 2, "finalists": finalists}))  # fmt: skip
    text = study.table([tmp_path], [])
    # se1 picks 1 (test 0.70) against the engine's 2 (0.95) in both searches: -0.25; params
    # 40 against 90
    row = next(line for line in text.splitlines() if line.startswith("| wine | se1 |"))
    assert row.startswith("| wine | se1 | 2 | 0.7000 | 0.9500 | -0.2500 [")
    row = next(line for line in text.splitlines() if line.startswith("| wine | se1 params |"))
    assert row.startswith("| wine | se1 params | rec params | 2 | 40.0000 | 90.0000 | -50.0000 [")
