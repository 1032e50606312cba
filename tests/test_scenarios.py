"""Scenario choices of a segment: which turn is converted, and where the original lands among the candidates."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import speakersleuth_dataset as ssd
from builder_scripts.scenarios import choose
from builder_scripts.segments import Segment
from builder_scripts.speaker_bank import SpeakerBank
from tests.unit_fixtures import make_unit


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
