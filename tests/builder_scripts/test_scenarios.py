"""Scenario choices of a segment: which turn is converted, and where the original lands among the candidates."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.builder_scripts.scenarios import choose
from speakersleuth.builder_scripts.segments import Segment
from speakersleuth.builder_scripts.speaker_bank import SpeakerBank
from tests.support.unit_fixtures import make_unit


@pytest.fixture(scope="module")
def units():
    """60 dialogues with short clips, turn k cycling over 1..5."""
    return [make_unit(str(i), converted_turn=1 + i % 5, seconds=0.05) for i in range(60)]


def test_original_candidate_lands_on_every_label_and_the_answer_points_at_it(units):
    rows = [unit.records(seed=0)[1] for unit in units]
    answers = Counter(row["answer"] for row in rows)
    assert set(answers) == set(ssd.CANDIDATE_LABELS), answers
    assert min(answers.values()) >= len(rows) // 6, f"answers far from uniform: {answers}"
    for unit, row in zip(units, rows):
        at_answer = row["candidate_labels"].index(row["answer"])
        assert row["candidate_scenarios"][at_answer] == "S1"
        assert np.array_equal(row["candidates"][at_answer], unit.targets[row["masked_position"] - 1])


def test_candidate_order_is_fixed_by_the_seed(units):
    orders = [[unit.records(seed)[1]["candidate_scenarios"] for unit in units] for seed in (0, 0, 1)]
    assert orders[0] == orders[1]
    assert orders[0] != orders[2]


def bank() -> SpeakerBank:
    """A pool of three women (the target "t" among them) and two men, random embeddings."""
    rng = np.random.default_rng(0)
    genders = {"t": "female", "f2": "female", "f3": "female", "m1": "male", "m2": "male"}
    return SpeakerBank.from_embeddings({name: (g, rng.standard_normal(16)) for name, g in genders.items()})


@pytest.mark.parametrize("num_targets", sorted({s.target_turns for s in ssd.VARIANT_SPECS.values()}))
def test_converted_turn_can_be_any_target_turn_including_the_last(num_targets):
    window = tuple(range(2 * num_targets))
    segments = [Segment(str(d), "synthetic", "t", "female", window, window[::2], (), 0) for d in range(200)]
    pool = bank()
    drawn = [choose(s, pool, seed=0).converted_turn for s in segments]
    assert sorted(set(drawn)) == list(range(1, num_targets + 1)), Counter(drawn)
    assert drawn == [choose(s, pool, seed=0).converted_turn for s in segments]  # fixed by the seed


def test_instance_ids_depend_on_the_builds_seed():
    """The ids are opaque only to those without the seed: another seed gives other ids for every
    row of the same unit, the same seed the same ids, and a unit's four rows have four ids."""
    units = [make_unit(str(i), seconds=0.05) for i in range(3)]

    def ids(seed):
        return [row["id"] for unit in units for rows, disc in [unit.records(seed)] for row in [*rows, disc]]

    first, again, other = ids(2**62 + 1), ids(2**62 + 1), ids(2**62 + 2)
    assert first == again and len(set(first)) == len(first) == 12
    assert not set(first) & set(other), (first, other)


def test_s3_is_never_another_speaker_of_the_same_dialogue_while_the_pool_has_one_besides():
    """The target's interlocutor "d" is the most similar voice in the pool (cosine 0.95); named in
    ``exclude`` (the dialogue's speakers), it is neither S3 nor S2 for any segment: S3 is the most
    similar of the rest, "f2" (cosine 0.6 by hand; "m1" and "m2" are at 0)."""
    pool = SpeakerBank.from_embeddings(
        {
            "t": ("female", [1.0, 0.0, 0.0]),
            "d": ("male", [0.95, np.sqrt(1 - 0.95**2), 0.0]),
            "f2": ("female", [0.6, 0.8, 0.0]),
            "m1": ("male", [0.0, 1.0, 0.0]),
            "m2": ("male", [0.0, 0.0, 1.0]),
        }
    )
    assert pool.most_similar("t")[0] == "d"  # what S3 would be if the dialogue's speakers were not avoided
    window = tuple(range(10))
    for d in range(40):
        choice = choose(
            Segment(str(d), "synthetic", "t", "female", window, window[::2], (), 0), pool, seed=d, exclude=("t", "d")
        )
        assert (choice.s3.speaker, choice.s3.similarity) == ("f2", pytest.approx(0.6, abs=1e-4))
        assert choice.s2.speaker in ("m1", "m2"), choice
