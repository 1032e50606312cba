"""Scoring of submissions: hand-computed Table-2 values, the missing-answer conventions, the
bootstrap against a plain loop, invariants (hypothesis), the leaderboard row, and the CLI end to end
on a synthetic dataset folder."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from math import log2
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speakersleuth.metrics import core
from speakersleuth.metrics.report import format_report, main
from speakersleuth.metrics.score import INTERVAL_KEYS, TABLE2_KEYS, average_ranks, leaderboard_row, score_submission
from speakersleuth.metrics.submission import Gold, load_gold, parse_submission
from tests.support.scoring_fixtures import synthetic_gold
from tests.support.synthetic import build_synthetic_dataset

ROOT = Path(__file__).resolve().parents[2]


def _jsonl(lines) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _score(gold: Gold, lines, n_bootstrap: int = 0, seed: int = 0) -> dict:
    return score_submission(parse_submission(_jsonl(lines), gold), gold, n_bootstrap=n_bootstrap, seed=seed)


def _perfect(gold: Gold) -> list[dict]:
    lines = []
    for rid, row in gold.tasks.get("detection", {}).items():
        lines.append(
            {
                "task": "detection",
                "id": rid,
                "prediction": row["label"],
                "score": float(row["label"] == "inconsistent"),
            }
        )
    for rid, row in gold.tasks.get("localization", {}).items():
        lines.append({"task": "localization", "id": rid, "prediction": row["inconsistent_turns"]})
    for rid, row in gold.tasks.get("discrimination", {}).items():
        lines.append(
            {"task": "discrimination", "id": rid, "prediction": row["answer"], "ranking": row["gold_ranking"]}
        )
    return lines


# ----------------------------------------------------------------------------- hand-computed


def _hand_gold() -> Gold:
    det, loc, disc = {}, {}, {}
    for d, (source, k, answer, ranking) in enumerate(
        (("ami", 2, "B", ["B", "A", "C"]), ("Behavior-SD", 4, "C", ["C", "B", "A"]))
    ):
        for s in ("S1", "S2", "S3"):
            row = {
                "id": f"d{d}-{s}",
                "dialogue_id": f"dlg{d}",
                "source_dataset": source,
                "scenario": s,
                "num_target_turns": 5,
            }
            det[row["id"]] = {**row, "label": "consistent" if s == "S1" else "inconsistent"}
            loc[row["id"]] = {**row, "inconsistent_turns": [] if s == "S1" else [k]}
        disc[f"d{d}-D"] = {
            "id": f"d{d}-D",
            "dialogue_id": f"dlg{d}",
            "source_dataset": source,
            "candidate_labels": ["A", "B", "C"],
            "answer": answer,
            "gold_ranking": ranking,
        }
    return Gold("main", "test", {"detection": det, "localization": loc, "discrimination": disc})


HAND_LINES = [
    {"task": "detection", "id": "d0-S1", "prediction": "consistent"},  # right
    {"task": "detection", "id": "d0-S2", "prediction": "inconsistent"},  # right
    {"task": "detection", "id": "d0-S3", "prediction": "consistent"},  # wrong
    {"task": "detection", "id": "d1-S1", "prediction": "inconsistent"},  # wrong
    {"task": "detection", "id": "d1-S2", "prediction": "inconsistent"},  # right; d1-S3 missing
    {"task": "localization", "id": "d0-S1", "prediction": []},  # P 0, R 0, F1 1
    {"task": "localization", "id": "d0-S2", "prediction": [2]},  # 1, 1, 1
    {"task": "localization", "id": "d0-S3", "prediction": [2]},  # 1, 1, 1
    {"task": "localization", "id": "d1-S1", "prediction": [1]},  # 0, 0, 0
    {"task": "localization", "id": "d1-S2", "prediction": None},  # no answer: 0, 0, 0
    {"task": "localization", "id": "d1-S3", "prediction": [4, 5]},  # 0.5, 1, 2/3
    {"task": "discrimination", "id": "d0-D", "prediction": "B", "ranking": ["B", "C", "A"]},
    {"task": "discrimination", "id": "d1-D", "prediction": "A"},  # wrong, no ranking
]


def test_hand_computed_scores():
    scores = _score(_hand_gold(), HAND_LINES)
    det, loc, disc = scores["detection"], scores["localization"], scores["discrimination"]
    assert det["accuracy"] == {"S1": 50.0, "S2": 100.0, "S3": 0.0}
    assert det["balanced_accuracy"] == 50.0
    assert (det["paired_accuracy"], det["paired_dialogues"]) == (0.0, 2)
    assert (det["answered"], det["instances"], det["coverage"]) == (5, 6, pytest.approx(83.3333))
    assert loc["precision"] == {"S1": 0.0, "S2": 50.0, "S3": 75.0}
    assert loc["recall"] == {"S1": 0.0, "S2": 50.0, "S3": 100.0}
    assert loc["f1"] == pytest.approx({"S1": 50.0, "S2": 50.0, "S3": 100 * (1 + 2 / 3) / 2}, abs=1e-4)
    assert loc["balanced_f1"] == pytest.approx(50 * (0.5 + 0.5 * (0.5 + (1 + 2 / 3) / 2)), abs=1e-4)
    assert loc["paired_accuracy"] == 50.0  # dlg0: S1, S2, S3 all exact
    assert loc["coverage"] == pytest.approx(500 / 6, abs=1e-4)
    assert disc["accuracy_by_source"] == {"Behavior-SD": 0.0, "ami": 100.0}
    assert disc["accuracy"] == 50.0
    assert disc["ndcg@1"] == 50.0
    assert disc["ndcg@2"] == pytest.approx(50 * 3 / (3 + 1 / log2(3)), abs=1e-4)
    assert disc["exact_match"] == 0.0
    assert (disc["ranked"], disc["ranking_coverage"]) == (1, 50.0)
    assert scores["tasks"] == ["detection", "localization", "discrimination"]
    assert all(
        v is None for task in ("detection", "localization", "discrimination") for v in scores[task]["ci"].values()
    )


def test_unsubmitted_tasks_and_ranking_are_left_out():
    scores = _score(_hand_gold(), [HAND_LINES[0], HAND_LINES[-1]], n_bootstrap=50)
    assert scores["tasks"] == ["detection", "discrimination"] and "localization" not in scores
    assert scores["detection"]["accuracy"] == {"S1": 50.0, "S2": 0.0, "S3": 0.0}
    assert scores["discrimination"]["ndcg@2"] is None and scores["discrimination"]["ci"]["ndcg@2"] is None
    row = leaderboard_row(scores)
    assert row["loc_bal_f1"] is None and row["loc_bal_f1_ci"] is None and row["ndcg_at_2"] is None
    assert row["det_bal_acc"] == 25.0


def test_disc_avg_is_the_accuracy_over_all_instances_not_the_mean_of_the_sources():
    sources = ["ami", "ami", "ami", "dailytalk"]  # sources of unequal size
    disc = {
        f"d{i}-D": {
            "id": f"d{i}-D",
            "dialogue_id": f"dlg{i}",
            "source_dataset": source,
            "candidate_labels": ["A", "B", "C"],
            "answer": "A",
            "gold_ranking": ["A", "B", "C"],
        }
        for i, source in enumerate(sources)
    }
    gold = Gold("main", "test", {"discrimination": disc})
    lines = [
        {"task": "discrimination", "id": rid, "prediction": "A" if row["source_dataset"] == "ami" else "B"}
        for rid, row in disc.items()
    ]
    scores = _score(gold, lines, n_bootstrap=50)
    assert scores["discrimination"]["accuracy_by_source"] == {"ami": 100.0, "dailytalk": 0.0}
    assert scores["discrimination"]["accuracy"] == 75.0  # 3 of 4 instances; the mean of the sources is 50
    assert leaderboard_row(scores)["disc_acc_avg"] == 75.0


def _gold_of_scenarios(scenarios_of_dialogue: dict[str, str]) -> Gold:
    """Detection and localization gold with the given scenarios per dialogue (e.g. ``{"dlg0": "S1 S2"}``)."""
    det, loc = {}, {}
    for dialogue, scenarios in scenarios_of_dialogue.items():
        for s in scenarios.split():
            row = {
                "id": f"{dialogue}-{s}",
                "dialogue_id": dialogue,
                "source_dataset": "ami",
                "scenario": s,
                "num_target_turns": 5,
            }
            det[row["id"]] = {**row, "label": "consistent" if s == "S1" else "inconsistent"}
            loc[row["id"]] = {**row, "inconsistent_turns": [] if s == "S1" else [2]}
    return Gold("main", "test", {"detection": det, "localization": loc})


def test_paired_accuracy_counts_only_dialogues_with_all_three_scenarios():
    gold = _gold_of_scenarios({"dlg0": "S1 S2 S3", "dlg1": "S1 S2", "dlg2": "S3"})
    lines = _perfect(gold)
    for line in lines:  # every answer of the incomplete dialogues is wrong; dlg0 is all right
        if not line["id"].startswith("dlg0"):
            line["prediction"] = {"detection": "inconsistent", "localization": [5]}[line["task"]]
    scores = _score(gold, lines, n_bootstrap=50)
    for task in ("detection", "localization"):
        assert scores[task]["paired_dialogues"] == 1, task
        assert scores[task]["paired_accuracy"] == 100.0, task
        assert scores[task]["ci"]["paired_accuracy"] == [100.0, 100.0], task
    none_complete = _gold_of_scenarios({"dlg0": "S1 S2", "dlg1": "S3"})
    scores = _score(none_complete, _perfect(none_complete), n_bootstrap=50)
    for task in ("detection", "localization"):
        assert (
            scores[task]["paired_accuracy"],
            scores[task]["paired_dialogues"],
            scores[task]["ci"]["paired_accuracy"],
        ) == (None, 0, None)


# ----------------------------------------------------------------------------------- bootstrap


def test_bootstrap_matches_a_plain_loop_over_resampled_dialogues():
    gold = synthetic_gold(12, random.Random(3))
    rng = random.Random(4)
    lines = [
        {"task": "detection", "id": rid, "prediction": rng.choice(["consistent", "inconsistent"])}
        for rid in gold.tasks["detection"]
    ]
    lines += [
        {"task": "discrimination", "id": rid, "prediction": rng.choice("ABC"), "ranking": rng.sample("ABC", 3)}
        for rid in gold.tasks["discrimination"]
    ]
    scores = _score(gold, lines, n_bootstrap=200, seed=7)
    answers = {(line["task"], line["id"]): line for line in lines}
    dialogues = sorted({row["dialogue_id"] for row in gold.tasks["detection"].values()})
    bal, em = [], []
    for counts in core.resample_counts(len(dialogues), 200, 7):
        weight = dict(zip(dialogues, counts))
        per_scenario = {s: [] for s in core.SCENARIOS}
        for rid, row in gold.tasks["detection"].items():
            per_scenario[row["scenario"]] += [answers["detection", rid]["prediction"] == row["label"]] * weight[
                row["dialogue_id"]
            ]
        bal.append(core.balanced(*(np.mean(per_scenario[s]) for s in core.SCENARIOS)))
        matches = []
        for rid, row in gold.tasks["discrimination"].items():
            matches += [answers["discrimination", rid]["ranking"] == row["gold_ranking"]] * weight[row["dialogue_id"]]
        em.append(np.mean(matches))
    assert scores["detection"]["ci"]["balanced_accuracy"] == pytest.approx(
        list(100 * np.percentile(bal, [2.5, 97.5])), abs=1e-3
    )
    assert scores["discrimination"]["ci"]["exact_match"] == pytest.approx(
        list(100 * np.percentile(em, [2.5, 97.5])), abs=1e-3
    )


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    gold = synthetic_gold(30, random.Random(0))
    rng = random.Random(1)
    lines = [
        {"task": "detection", "id": rid, "prediction": rng.choice(["consistent", "inconsistent"])}
        for rid in gold.tasks["detection"]
    ]
    a, b, c = (_score(gold, lines, n_bootstrap=300, seed=s)["detection"] for s in (5, 5, 6))
    assert a == b and a["ci"] != c["ci"]
    low, high = a["ci"]["balanced_accuracy"]
    assert low < a["balanced_accuracy"] < high


# ------------------------------------------------------------------------- threshold-free detection


def _scored_lines(gold: Gold, score_of) -> list[dict]:
    """Detection lines answering "consistent" with ``score_of(label code, row)`` as the score."""
    return [
        {
            "task": "detection",
            "id": rid,
            "prediction": "consistent",
            "score": score_of(int(row["label"] == "inconsistent"), row),
        }
        for rid, row in gold.tasks["detection"].items()
    ]


@pytest.mark.parametrize(
    ("score_of", "auroc", "eer"),
    [
        (lambda y, row: 0.2 + 0.5 * y, 100.0, 0.0),  # perfect
        (lambda y, row: -3.0 * y, 0.0, 100.0),  # reversed
        (lambda y, row: 0.7, 50.0, 50.0),  # constant
    ],
)
def test_auroc_and_eer_of_perfect_reversed_and_constant_scores(score_of, auroc, eer):
    scores = _score(
        synthetic_gold(20, random.Random(0)), _scored_lines(synthetic_gold(20, random.Random(0)), score_of), 50
    )
    det = scores["detection"]
    assert (det["auroc"], det["eer"], det["scored"]) == (auroc, eer, 60)
    assert det["balanced_accuracy"] == 50.0  # the labels say "consistent" throughout: only the scores separate
    assert det["ci"]["auroc"] == [auroc, auroc] and det["ci"]["eer"] == [eer, eer]
    assert leaderboard_row(scores)["det_auroc"] == auroc and leaderboard_row(scores)["det_eer_ci"] == [eer, eer]


def test_auroc_is_sklearns_and_an_unscored_instance_ranks_wrong():
    from sklearn.metrics import roc_auc_score

    gold = synthetic_gold(30, random.Random(2))
    rng = random.Random(5)
    lines = _scored_lines(gold, lambda y, row: rng.gauss(y, 1.0))
    labels = [int(row["label"] == "inconsistent") for row in gold.tasks["detection"].values()]
    det = _score(gold, lines)["detection"]
    assert det["auroc"] == pytest.approx(100 * roc_auc_score(labels, [line["score"] for line in lines]), abs=1e-3)
    assert 0 < det["eer"] < 50 and det["ci"] == {
        "balanced_accuracy": None,
        "paired_accuracy": None,
        "auroc": None,
        "eer": None,
    }
    kept = [line for line in lines if line["id"] not in ("main-00000-S1", "main-00000-S2")]
    worst = [line["score"] if line in kept else (1e9 if y == 0 else -1e9) for line, y in zip(lines, labels)]
    det = _score(gold, kept)["detection"]
    assert det["auroc"] == pytest.approx(100 * roc_auc_score(labels, worst), abs=1e-3) and det["scored"] == 88
    assert _score(gold, [{**line, "score": 1.0} for line in lines[:1]])["detection"]["auroc"] < 50


def test_auroc_bootstrap_matches_a_plain_loop_over_resampled_dialogues():
    from sklearn.metrics import roc_auc_score

    gold = synthetic_gold(15, random.Random(3))
    rng = random.Random(6)
    lines = _scored_lines(gold, lambda y, row: round(rng.gauss(y, 1.5), 1))  # rounding makes ties
    det = _score(gold, lines, n_bootstrap=100, seed=9)["detection"]
    dialogues = sorted({row["dialogue_id"] for row in gold.tasks["detection"].values()})
    rows = list(gold.tasks["detection"].values())
    samples = []
    for counts in core.resample_counts(len(dialogues), 100, 9):
        weight = dict(zip(dialogues, counts))
        labels, scores = [], []
        for row, line in zip(rows, lines):
            labels += [int(row["label"] == "inconsistent")] * weight[row["dialogue_id"]]
            scores += [line["score"]] * weight[row["dialogue_id"]]
        samples.append(roc_auc_score(labels, scores))
    assert det["ci"]["auroc"] == pytest.approx(list(100 * np.percentile(samples, [2.5, 97.5])), abs=1e-3)
    low, high = det["ci"]["eer"]
    assert low < det["eer"] < high


def test_without_scores_auroc_and_eer_are_none():
    det = _score(_hand_gold(), HAND_LINES, n_bootstrap=20)["detection"]
    assert (det["auroc"], det["eer"], det["scored"], det["ci"]["auroc"], det["ci"]["eer"]) == (
        None,
        None,
        0,
        None,
        None,
    )
    assert "AUROC" not in format_report(_score(_hand_gold(), HAND_LINES))


# ---------------------------------------------------------------------------------- invariants


@st.composite
def gold_and_seed(draw):
    return synthetic_gold(draw(st.integers(1, 8)), random.Random(draw(st.integers(0, 10_000)))), draw(
        st.integers(0, 10_000)
    )


def _random_lines(gold: Gold, rng: random.Random) -> list[dict]:
    lines = []
    for rid in gold.tasks["detection"]:
        if rng.random() < 0.9:
            lines.append(
                {"task": "detection", "id": rid, "prediction": rng.choice(["consistent", "inconsistent", None])}
            )
    for rid in gold.tasks["localization"]:
        if rng.random() < 0.9:
            lines.append(
                {"task": "localization", "id": rid, "prediction": sorted(rng.sample(range(1, 6), rng.randint(0, 2)))}
            )
    for rid in gold.tasks["discrimination"]:
        line = {"task": "discrimination", "id": rid, "prediction": rng.choice("ABC")}
        if rng.random() < 0.7:
            line["ranking"] = rng.sample("ABC", 3)
        lines.append(line)
    return lines


@settings(max_examples=20, deadline=None)
@given(gold_and_seed())
def test_perfect_submission_scores_100_everywhere(case):
    gold, _ = case
    row = leaderboard_row(_score(gold, _perfect(gold), n_bootstrap=20))
    values = {k: v for k, v in row.items() if v is not None}
    assert {k for k in TABLE2_KEYS if not k.startswith("disc_acc_")} <= values.keys()
    assert values.pop("det_eer") == 0.0 and values.pop("det_eer_ci") == [0.0, 0.0]
    assert all(v == 100.0 or v == [100.0, 100.0] for v in values.values()), values


@settings(max_examples=20, deadline=None)
@given(gold_and_seed())
def test_constant_consistent_judge_scores_50_balanced_and_0_paired(case):
    gold, _ = case
    lines = [{"task": "detection", "id": rid, "prediction": "consistent"} for rid in gold.tasks["detection"]]
    lines += [{"task": "localization", "id": rid, "prediction": []} for rid in gold.tasks["localization"]]
    scores = _score(gold, lines, n_bootstrap=20)
    assert scores["detection"]["balanced_accuracy"] == 50.0
    assert scores["localization"]["balanced_f1"] == 50.0
    assert scores["detection"]["paired_accuracy"] == 0.0 and scores["localization"]["paired_accuracy"] == 0.0


@settings(max_examples=20, deadline=None)
@given(gold_and_seed())
def test_voice_blind_judge_scores_0_paired(case):
    gold, seed = case
    rng = random.Random(seed)
    per_dialogue = {}
    lines = []
    for rid, row in gold.tasks["detection"].items():
        answer = per_dialogue.setdefault(row["dialogue_id"], rng.choice(["consistent", "inconsistent"]))
        lines.append({"task": "detection", "id": rid, "prediction": answer})
    assert _score(gold, lines)["detection"]["paired_accuracy"] == 0.0


@settings(max_examples=20, deadline=None)
@given(gold_and_seed())
def test_scores_do_not_depend_on_line_order(case):
    gold, seed = case
    lines = _random_lines(gold, random.Random(seed))
    shuffled = random.Random(seed + 1).sample(lines, len(lines))
    a, b = _score(gold, lines, n_bootstrap=30), _score(gold, shuffled, n_bootstrap=30)
    assert a.pop("sha256") and b.pop("sha256")
    assert a == b


# --------------------------------------------------------------------------- leaderboard, report


def test_leaderboard_columns_are_the_paper_columns_plus_ours():
    with (ROOT / "space" / "data" / "paper" / "table2_main.tsv").open() as f:
        header = next(line for line in f if not line.startswith("#")).rstrip("\n").split("\t")
    assert list(TABLE2_KEYS[: len(header) - 2]) == header[2:]
    assert set(INTERVAL_KEYS) == {
        "det_bal_acc",
        "loc_bal_f1",
        "disc_acc_avg",
        "ndcg_at_2",
        "exact_match",
        "det_paired_acc",
        "loc_paired_acc",
        "det_auroc",
        "det_eer",
    }


def test_leaderboard_row_and_report():
    scores = _score(_hand_gold(), HAND_LINES, n_bootstrap=100)
    row = leaderboard_row(scores)
    assert row["disc_acc_ami"] == 100.0 and row["disc_acc_behavior_sd"] == 0.0 and row["disc_acc_bazinga"] is None
    assert row["loc_s3_f1"] == 83.3 and row["loc_bal_f1"] == 58.3 and row["ndcg_at_2"] == 41.3
    assert row["det_coverage"] == 83.3 and row["rank_coverage"] == 50.0
    for key in TABLE2_KEYS:
        assert (f"{key}_ci" in row) == (key in INTERVAL_KEYS)
    low, high = row["loc_bal_f1_ci"]
    assert low <= row["loc_bal_f1"] <= high
    report = format_report(scores)
    assert "Detection (accuracy): coverage 83.3% (5/6)" in report
    assert "Bal F1" in report and "58.3  [" in report
    assert "Acc Behavior-SD" in report and "Ranking coverage (1/2)" in report
    header, values = report.splitlines()[-2:]
    assert header.split("\t")[:4] == ["det_s1_acc", "det_s2_acc", "det_s3_acc", "det_bal_acc"]
    assert values.split("\t")[:4] == ["50.0", "100.0", "0.0", "50.0"]


def test_extra_sources_get_columns_before_the_average():
    gold = _hand_gold()
    for row in gold.tasks["discrimination"].values():
        row["source_dataset"] = "chitchat"
    row = leaderboard_row(_score(gold, HAND_LINES))
    keys = list(row)
    assert keys.index("disc_acc_chitchat") == keys.index("disc_acc_avg") - 1


# ------------------------------------------------------------------------------- end to end, CLI


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return build_synthetic_dataset(tmp_path_factory.mktemp("score") / "speakersleuth", dialogues=3, variants=("main",))


def test_cli_scores_a_perfect_file_on_a_built_folder(folder, tmp_path, capsys):
    path = tmp_path / "perfect.jsonl"
    path.write_bytes(_jsonl(_perfect(load_gold(folder))))
    assert main(["--predictions", str(path), "--dataset", str(folder), "--variant", "main", "--bootstrap", "50"]) == 0
    report = capsys.readouterr().out
    assert "variant main, split test, 21 lines" in report and "Bal F1" in report and "n/a" not in report
    assert main(["--predictions", str(path), "--dataset", str(folder), "--json", "--bootstrap", "0"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["detection"]["balanced_accuracy"] == 100.0 and scores["discrimination"]["exact_match"] == 100.0
    assert scores["bootstrap"]["dialogues"] == 3
    assert main(["--predictions", str(path), "--dataset", str(folder), "--json", "--bootstrap", "20"]) == 0
    detection = json.loads(capsys.readouterr().out)["detection"]
    assert (detection["auroc"], detection["eer"], detection["ci"]["auroc"]) == (100.0, 0.0, [100.0, 100.0])
    assert main(["--predictions", str(path), "--dataset", str(folder), "--bootstrap", "20"]) == 0
    report = capsys.readouterr().out
    lines = {line.strip().split("  ")[0]: line.split()[-3:] for line in report.splitlines() if "(scores)" in line}
    assert lines == {"AUROC (scores)": ["100.0", "[100.0,", "100.0]"], "EER (scores)": ["0.0", "[0.0,", "0.0]"]}


def test_cli_refuses_a_bad_file_and_a_missing_dataset(folder, tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    lines = _perfect(load_gold(folder))
    lines[1]["prediction"] = "maybe"
    path.write_bytes(_jsonl(lines))
    assert main(["--predictions", str(path), "--dataset", str(folder)]) == 1
    err = capsys.readouterr().err
    assert 'line 2: detection prediction must be "consistent" or "inconsistent", got "maybe"' in err
    assert main(["--predictions", str(path), "--dataset", str(tmp_path / "nowhere")]) == 2
    assert main(["--predictions", str(path), "--dataset", str(folder), "--variant", "10turn"]) == 2


def test_module_entry_point(folder, tmp_path):
    path = tmp_path / "perfect.jsonl"
    path.write_bytes(_jsonl(_perfect(load_gold(folder))))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "speakersleuth.metrics.score",
            "--predictions",
            str(path),
            "--dataset",
            str(folder),
            "--json",
            "--bootstrap",
            "20",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["localization"]["balanced_f1"] == 100.0


@pytest.fixture(scope="module")
def two_variants(tmp_path_factory) -> Path:
    return build_synthetic_dataset(
        tmp_path_factory.mktemp("score2") / "speakersleuth", dialogues=2, variants=("main", "4vc")
    )


def test_cli_takes_the_variant_from_the_ids(two_variants, tmp_path, capsys):
    """4vc predictions scored without --variant are scored as 4vc (they were 'unknown id ... for
    variant main', once per line); with the wrong --variant the refusal is one line naming theirs."""
    path = tmp_path / "4vc.jsonl"
    path.write_bytes(_jsonl(_perfect(load_gold(two_variants, "4vc"))))
    assert main(["--predictions", str(path), "--dataset", str(two_variants), "--json", "--bootstrap", "0"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["variant"] == "4vc" and scores["detection"]["balanced_accuracy"] == 100.0
    assert main(["--predictions", str(path), "--dataset", str(two_variants), "--variant", "main"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the ids are 4vc ids" in err and "--variant 4vc" in err, err


def test_cli_refuses_a_file_mixing_variants_or_of_another_dataset_in_one_line(two_variants, folder, tmp_path, capsys):
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(
        _jsonl(_perfect(load_gold(two_variants, "main"))[:2] + _perfect(load_gold(two_variants, "4vc"))[:3])
    )
    assert main(["--predictions", str(mixed), "--dataset", str(two_variants)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "mixes ids of several variants: main (2 ids), 4vc (3 ids)" in err, err
    other = tmp_path / "other.jsonl"
    other.write_bytes(
        _jsonl([{**line, "id": line["id"].replace("synthetic", "elsewhere")} for line in _perfect(load_gold(folder))])
    )
    assert main(["--predictions", str(other), "--dataset", str(folder)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "none of the file's 12 ids" in err and "is in the test split of" in err, err


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-3, 3).map(lambda x: x / 2), min_size=1, max_size=30))
def test_average_ranks_are_scipys_rankdata(values):
    """The core install has no scipy; its ranks (ties share their mean rank) equal scipy's."""
    from scipy.stats import rankdata

    assert average_ranks(np.array(values, dtype=float)).tolist() == rankdata(values).tolist()
