"""metrics.analysis (issue 17): the grouped analyses on a hand-made gold whose answers are known
(a judge right only on the longest clips, one that always says "inconsistent"), the provenance
read from a built folder and from a blind copy's gold, and the settings' deltas."""

from __future__ import annotations

import doctest
import json

import numpy as np
import pytest

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.metrics import analysis
from speakersleuth.metrics.analysis import Provenance, analyse, read_provenance, setting_deltas
from speakersleuth.metrics.submission import Gold, load_gold, parse_submission

DIALOGUES = 8


def hand_made() -> tuple[Gold, Provenance]:
    """8 dialogues x S1/S2/S3; dialogues 0-3 from "ami" (converted turn 1), 4-7 from "dailytalk"
    (turn 2); the VC model "knn-vc" in even dialogues, "seed-vc" in odd; instance i lasts i + 1 s."""
    detection, localization, prov = {}, {}, []
    for d in range(DIALOGUES):
        source, turn = ("ami", 1) if d < 4 else ("dailytalk", 2)
        vc = "knn-vc" if d % 2 == 0 else "seed-vc"
        for scenario in ssd.SCENARIOS:
            rid = f"d{d}-{scenario}"
            converted = scenario != "S1"
            detection[rid] = {"id": rid, "label": "inconsistent" if converted else "consistent", "num_target_turns": 5}
            localization[rid] = {"id": rid, "inconsistent_turns": [turn] if converted else [], "num_target_turns": 5}
            prov.append((rid, f"dialogue-{d}", scenario, source, vc if converted else None))
    ids, dialogue, scenario, source, vc_model = map(list, zip(*prov))
    seconds = np.arange(1.0, len(ids) + 1.0)
    return Gold("main", "test", {"detection": detection, "localization": localization}), Provenance(
        ids, dialogue, scenario, source, vc_model, seconds
    )


def submission(gold: Gold, detection, localization=None):
    """A file answering each detection id with ``detection(id)`` (and localization likewise)."""
    lines = [{"task": "detection", "id": rid, "prediction": detection(rid)} for rid in gold.tasks["detection"]]
    if localization is not None:
        lines += [
            {"task": "localization", "id": rid, "prediction": localization(rid)} for rid in gold.tasks["localization"]
        ]
    return parse_submission("\n".join(json.dumps(line) for line in lines).encode(), gold)


def cells(result: dict, grouping: str, task: str = "detection") -> dict[str, tuple]:
    return {
        c["cell"].split(" ")[0]: (c[task]["value"], c[task]["ci"]) if c[task] else None
        for c in result["groups"][grouping]
    }


def test_doctests():
    result = doctest.testmod(analysis)
    assert result.attempted > 0 and result.failed == 0


def test_a_judge_right_only_on_the_longest_clips_scores_0_in_q1_and_100_in_q4():
    gold, prov = hand_made()
    longest = {rid for rid, s in zip(prov.ids, prov.seconds) if s > 18}  # the top quarter of 24 instances
    right = submission(
        gold,
        lambda rid: (
            gold.tasks["detection"][rid]["label"]
            if rid in longest
            else {"consistent": "inconsistent", "inconsistent": "consistent"}[gold.tasks["detection"][rid]["label"]]
        ),
    )
    result = analyse(right, gold, prov, n_bootstrap=200)
    assert cells(result, "duration") == {
        "Q1": (0.0, [0.0, 0.0]),
        "Q2": (0.0, [0.0, 0.0]),
        "Q3": (0.0, [0.0, 0.0]),
        "Q4": (100.0, [100.0, 100.0]),
    }
    names = [c["cell"] for c in result["groups"]["duration"]]
    assert names == ["Q1 (1.00-6.00 s)", "Q2 (7.00-12.00 s)", "Q3 (13.00-18.00 s)", "Q4 (19.00-24.00 s)"]
    assert [c["instances"] for c in result["groups"]["duration"]] == [6, 6, 6, 6]
    assert result["groups"]["duration"][0]["scenarios"] == {"S1": 2, "S2": 2, "S3": 2}
    assert all(c["localization"] is None for c in result["groups"]["duration"])  # not answered


def test_always_inconsistent_by_scenario_source_and_vc_model():
    gold, prov = hand_made()
    always = submission(gold, lambda rid: "inconsistent", lambda rid: [1])
    result = analyse(always, gold, prov, n_bootstrap=200)
    assert cells(result, "scenario") == {
        "S1": (0.0, [0.0, 0.0]),
        "S2": (100.0, [100.0, 100.0]),
        "S3": (100.0, [100.0, 100.0]),
    }
    assert {k: v[0] for k, v in cells(result, "source").items()} == {"ami": 66.7, "dailytalk": 66.7}
    assert cells(result, "vc_model") == {"knn-vc": (100.0, [100.0, 100.0]), "seed-vc": (100.0, [100.0, 100.0])}
    assert [c["instances"] for c in result["groups"]["vc_model"]] == [8, 8]  # S2 and S3 only
    # localization [1] is right where the converted turn is 1 (ami), and never on S1
    assert {k: v[0] for k, v in cells(result, "source", "localization").items()} == {"ami": 66.7, "dailytalk": 0.0}
    assert {k: v[0] for k, v in cells(result, "vc_model", "localization").items()} == {"knn-vc": 50.0, "seed-vc": 50.0}
    low, high = cells(result, "vc_model", "localization")["knn-vc"][1]
    assert 0.0 <= low < 50.0 < high <= 100.0  # dialogues resampled: the interval is not a point


def test_a_missing_answer_is_wrong_and_an_s1_answered_empty_has_f1_1():
    gold, prov = hand_made()
    some = parse_submission(
        b'{"task": "detection", "id": "d0-S1", "prediction": "consistent"}\n'
        b'{"task": "localization", "id": "d0-S1", "prediction": []}',
        gold,
    )
    result = analyse(some, gold, prov, n_bootstrap=0)
    assert cells(result, "scenario") == {"S1": (12.5, None), "S2": (0.0, None), "S3": (0.0, None)}
    assert cells(result, "scenario", "localization")["S1"] == (12.5, None)


def test_a_provenance_of_another_build_is_refused():
    gold, prov = hand_made()
    other = Provenance(["x", *prov.ids[1:]], prov.dialogue, prov.scenario, prov.source, prov.vc_model, prov.seconds)
    with pytest.raises(ValueError, match="does not match the detection gold .* 1 of its ids are not gold ids"):
        analyse(submission(gold, lambda rid: "consistent"), gold, other)


def test_provenance_of_a_build_and_of_a_blind_copy(dataset, tmp_path):
    prov = read_provenance(dataset, "main")
    gold = load_gold(dataset, "main")
    turns = {rid: row["inconsistent_turns"] for rid, row in gold.tasks["localization"].items()}
    # synthetic target clip j lasts 1.0 + 0.1 j s: the converted one for S2/S3, their mean (1.2 s) for S1
    expected = [1.0 + 0.1 * (turns[rid][0] - 1) if turns[rid] else 1.2 for rid in prov.ids]
    assert np.allclose(prov.seconds, expected, atol=1e-4) and len(prov.ids) == len(turns)
    assert set(prov.source) == {"synthetic"} and set(zip(prov.scenario, prov.vc_model)) == {
        ("S1", None),
        ("S2", "tone-shift"),
        ("S3", "tone-shift"),
    }
    ssd.write_blind(dataset, tmp_path / "public", tmp_path / "gold", allow_known_seed=True)  # a test build
    blind = read_provenance(tmp_path / "public", "main", gold=tmp_path / "gold")
    assert sorted(blind.seconds) == pytest.approx(sorted(prov.seconds)) and sorted(blind.scenario) == sorted(
        prov.scenario
    )
    with pytest.raises(ValueError, match="a blind copy has no provenance .* give its gold folder"):
        read_provenance(tmp_path / "public", "main")
    with pytest.raises(ValueError, match="gold id.* have no target audio there"):
        read_provenance(dataset, "main", gold=tmp_path / "gold")


def test_setting_deltas_against_main():
    rows = {
        "no_reference": {"det_bal_acc": 55.0, "loc_bal_f1": None},
        "main": {"det_bal_acc": 60.0, "loc_bal_f1": 40.0},
    }
    deltas = setting_deltas(rows)
    assert [d["setting"] for d in deltas] == ["main", "no_reference"]
    assert deltas[1]["delta"]["det_bal_acc"] == -5.0 and deltas[1]["delta"]["loc_bal_f1"] is None
    assert deltas[1]["values"]["det_bal_acc"] == 55.0 and deltas[0]["delta"]["loc_bal_f1"] == 0.0
    assert setting_deltas({"context": {"det_bal_acc": 1.0}})[0]["delta"]["det_bal_acc"] is None  # no main
    with pytest.raises(ValueError, match="unknown setting\\(s\\) 'zero_shot'; settings are main, context"):
        setting_deltas({"zero_shot": {}})
