"""A round's build (``--round``): its test split is disjoint by construction, one instance per
dialogue, none sharing a dialogue or a clip, the scenarios balanced; a Space serves its blind copy
as it is, without the ``--unpaired`` selection."""

from __future__ import annotations

from collections import Counter

import pytest

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.metrics.submission import load_gold
from speakersleuth.space.disclosure import BlindRound, shared_instances
from tests.support.small_builds import build_options, build_speechlike, record_speechlike


def test_a_round_build_publishes_one_instance_per_dialogue_sharing_no_dialogue_or_clip(tmp_path):
    corpus = record_speechlike(tmp_path / "corpus")
    opts = build_options(tmp_path, variants=("main",), dialogues=4, round=True, seed=2**62 + 52)
    report = build_speechlike(opts, corpus)
    root = opts.out
    counts = ssd.validate_folder(root)
    assert report["dialogues"] == {"main": 4}
    gold = load_gold(root, "main")
    dialogues = Counter(
        row["dialogue_id"] for rows in (gold.tasks["detection"], gold.tasks["discrimination"]) for row in rows.values()
    )
    assert len(dialogues) == 4 and set(dialogues.values()) == {1}  # one instance per dialogue
    assert counts["detection/test"] + counts["discrimination/test"] == 4
    slots = Counter(row["scenario"] for row in gold.tasks["detection"].values()) + Counter(
        {"discrimination": len(gold.tasks["discrimination"])}
    )
    assert sorted(slots.values()) == [1, 1, 1, 1]  # S1, S2, S3 and discrimination, one each
    assert (
        "This is a leaderboard round's build: each test dialogue gives one instance"
        in (root / "README.md").read_text()
    )
    groups = ssd.instance_groups(root)
    assert len(set(groups.values())) == len(groups) == 4  # no clip shared by two instances
    ssd.write_blind(root, tmp_path / "public", tmp_path / "gold")  # the paired copy: nothing to unpair
    assert shared_instances(tmp_path / "public", [load_gold(tmp_path / "gold", "main")]) == 0
    BlindRound().check_copy(tmp_path / "public", [load_gold(tmp_path / "gold", "main")])


def test_a_round_build_has_one_variant(tmp_path):
    with pytest.raises(ValueError, match="a round build has one variant"):
        build_options(tmp_path, round=True)
