"""The audio checks of a converted unit: each rule drops a unit that breaks it, and only that rule."""

from __future__ import annotations

import numpy as np
import pytest

from speakersleuth.builder_scripts.scenarios import Substitute
from speakersleuth.builder_scripts.verification import GENDER_F0_BOUNDARY, SILENCE_DBFS, audio_checks, clip_problem
from tests.support.unit_fixtures import make_unit

FEMALE_S2 = Substitute("f2", "female", 0.2)
MALE_S3 = Substitute("m2", "male", 0.8)


def male_target_unit(s2_f0: float, **overrides):
    """A male target (110 Hz) whose S2 substitute is a woman; the converted S2 turn is at ``s2_f0``."""
    return make_unit(target_f0=110.0, s2=FEMALE_S2, s2_f0=s2_f0, s3=MALE_S3, s3_f0=125.0, **overrides)


def test_well_formed_units_pass():
    assert audio_checks(make_unit())[0] is None
    assert audio_checks(male_target_unit(s2_f0=220.0))[0] is None


def test_female_s2_turn_below_the_female_f0_range_is_dropped():
    reason, measured = audio_checks(male_target_unit(s2_f0=120.0))
    assert reason == "audio: S2 turn not in the female F0 range"
    assert measured["s2_median_f0"] < GENDER_F0_BOUNDARY


def test_male_s2_turn_above_the_male_f0_range_is_dropped():
    reason, measured = audio_checks(make_unit(s2_f0=230.0))
    assert reason == "audio: S2 turn not in the male F0 range"
    assert measured["s2_median_f0"] > GENDER_F0_BOUNDARY


@pytest.mark.parametrize("s3_similarity", [0.2, 0.1])
def test_s3_not_more_similar_than_s2_is_dropped(s3_similarity):
    unit = make_unit(s3=Substitute("f2", "female", s3_similarity))
    assert unit.s2.similarity == 0.2
    reason, measured = audio_checks(unit)
    assert reason == "audio: S3 substitute not more similar to the target than S2's"
    assert measured["s3_similarity"] == s3_similarity


def test_an_unvoiced_male_s2_turn_is_not_in_the_male_range():
    """A converted turn with no voiced frame (white noise: median F0 0, "no pitch") is not a male
    voice: 0 Hz is below the boundary but outside the range."""
    unit = make_unit()
    assert unit.s2.gender == "male"
    unit.converted["S2"] = (0.05 * np.random.default_rng(0).standard_normal(16000)).astype(np.float32)
    reason, measured = audio_checks(unit)
    assert (reason, measured["s2_median_f0"]) == ("audio: S2 turn not in the male F0 range", 0.0)


@pytest.mark.parametrize("dbfs, silent", [(-45.0, False), (-49.0, False), (-51.0, True), (-60.0, True)])
def test_a_clip_is_silent_when_its_rms_in_dbfs_is_under_the_silence_level(dbfs, silent):
    """The level is 20 log10 of the RMS (dBFS): a sine of RMS 10^(-51/20) is at -51 dBFS, under
    ``SILENCE_DBFS`` = -50; one at -49 is not (in power decibels, 10 log10, both would be near -25)."""
    t = np.arange(16000) / 16000
    clip = (np.sqrt(2) * 10 ** (dbfs / 20) * np.sin(2 * np.pi * 200 * t)).astype(np.float32)
    assert SILENCE_DBFS == -50.0
    assert clip_problem(clip, "the clip") == ("audio: the clip is silent" if silent else None)
