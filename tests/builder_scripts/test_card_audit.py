"""The build's audits (``builder_scripts/card_audit.py``) and the voice-free family
(``builder_scripts/audit_features.py``): a processing difference planted in the quiet frames of the
altered turns only (+1 dB) is found by the voice-free family and warned of; a change of voice alone
leaves it at chance; a DSP method is compared with the same dialogues re-spoken."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from speakersleuth.builder_scripts.audit_features import VOICE_FREE, net_of_voice
from speakersleuth.builder_scripts.card_audit import BuildAudit

#: a few random golds in each control: enough to see it at chance, cheap enough for the suite
DRAWS = {"logistic": 4, "boosting": 2}

SR = 16000


def turn(rng: np.random.Generator, floor_db: float = -66.0) -> np.ndarray:
    """A "turn": bursts of a random voice (noise shaped by a random 2-pole resonance) with pauses,
    over a white floor at ``floor_db`` dBFS, 16-bit as published."""
    from scipy.signal import lfilter

    centre = rng.uniform(300, 3000)
    pole = 0.97 * np.exp(2j * np.pi * centre / SR)
    voice = lfilter([1.0], [1.0, -2 * pole.real, abs(pole) ** 2], rng.standard_normal(SR))
    envelope = np.repeat(rng.random(10) < 0.6, SR // 10).astype(float)
    speech = 0.05 * voice / voice.std() * envelope
    floor = 10 ** (floor_db / 20) * rng.standard_normal(SR)
    return (np.round((speech + floor) * 32768) / 32768).astype(np.float32)


def unit(i: int, rng: np.random.Generator, planted_db: float = 0.0, method: str = "respeak") -> SimpleNamespace:
    """Five turns of one voice per position; turn k's S2/S3 versions are other voices whose floor
    is ``planted_db`` louder."""
    k = 1 + i % 5
    return SimpleNamespace(
        converted_turn=k,
        vc_model=method,
        targets=[turn(rng) for _ in range(5)],
        converted={s: turn(rng, -66.0 + planted_db) for s in ("S2", "S3")},
        raw_targets=[],
        raw_converted={},
        segment=SimpleNamespace(source="synthetic", dialogue_id=f"d{i}", target_gender="female"),
        s2=SimpleNamespace(gender="male"),
        s3=SimpleNamespace(gender="female"),
    )


@pytest.fixture(scope="module")
def planted():
    rng = np.random.default_rng(0)
    audit = BuildAudit(control_draws=DRAWS)
    for i in range(40):
        audit.add("main", unit(i, rng, planted_db=1.0), artifacts=False)
    return audit


def test_one_decibel_more_in_the_quiet_frames_of_the_altered_turns_is_found_and_warned_of(planted):
    cells = planted.voice_free_cells()
    assert set(cells) == {("main", "all", "logistic"), ("main", "all", "boosting")}
    for model in ("logistic", "boosting"):
        r = cells[("main", "all", model)]["localization_S2"]
        assert r["all"]["low"] > r["chance"], (model, r)
    warnings = planted.warnings()
    assert any(line.startswith("voice-free audit main (all, logistic): localization, S2") for line in warnings), (
        warnings
    )


def test_a_change_of_voice_alone_leaves_the_voice_free_family_near_chance():
    """Every cell within 3.5 standard errors of chance for its number of guesses (95 % intervals
    over ten cells miss chance now and then by luck alone, so the test does not ask each interval
    to hold it; the planted case's localization lies 35-80 points over)."""
    rng = np.random.default_rng(1)
    audit = BuildAudit(control_draws=DRAWS)
    for i in range(40):
        audit.add("main", unit(i, rng), artifacts=False)
    guesses = {
        "detection": 120,
        "localization_S2": 40,
        "localization_S3": 40,
        "localization": 80,
        "discrimination": 40,
    }
    for (_, _, model), result in audit.voice_free_cells().items():
        for task, r in result.items():
            p = r["chance"] / 100
            assert abs(r["all"]["score"] - r["chance"]) < 100 * 3.5 * np.sqrt(p * (1 - p) / guesses[task]), (
                model,
                task,
                r,
            )


def test_a_dsp_method_is_compared_with_the_same_dialogues_respoken_and_split_by_method():
    """4vc's praat units carry the planted floor, main's re-spoken units of the same dialogues do
    not: converted minus re-spoken lies above 0 for praat and the voice-free family is fitted per method."""
    rng = np.random.default_rng(2)
    audit = BuildAudit(control_draws=DRAWS)
    for i in range(24):
        audit.add("main", unit(i, rng), artifacts=False)
        method = "praat" if i % 2 else "respeak"
        audit.add("4vc", unit(i, rng, planted_db=6.0 if method == "praat" else 0.0, method=method), artifacts=False)
    assert {key[:2] for key in audit.voice_free_cells()} == {
        ("main", "all"),
        ("4vc", "all"),
        ("4vc", "praat"),
        ("4vc", "respeak"),
    }
    differences = audit.respoken_differences()
    assert list(differences) == [("4vc", "praat")]
    assert differences[("4vc", "praat")]["localization_S2"]["low"] > 0
    assert "discrimination, among the candidates" in differences[("4vc", "praat")]
    assert any(line.startswith("converted minus re-spoken 4vc (praat): localization, S2") for line in audit.warnings())


def test_the_flac_rate_is_taken_net_of_the_voice():
    """A rate that follows F0 and the first MFCC exactly leaves nothing; a rate shifted on half of
    the clips keeps that shift; the descriptors are no columns."""
    rng = np.random.default_rng(3)
    f0, mfcc = rng.uniform(90, 250, 200), rng.normal(size=200)
    names = ["flac_bytes_per_second", "dc_offset", "median_f0", "mfcc_0"]
    shifted = np.arange(200) % 2
    vectors = np.column_stack([3000 + 4 * f0 - 50 * mfcc + 40 * shifted, rng.normal(size=200), f0, mfcc])
    columns = net_of_voice(vectors, names)
    assert columns.shape == (200, 2)
    np.testing.assert_allclose(columns[:, 1], vectors[:, 1])
    residual = columns[:, 0]
    assert residual[shifted == 1].mean() - residual[shifted == 0].mean() == pytest.approx(40, abs=2)
    assert abs(np.corrcoef(residual, f0)[0, 1]) < 0.05


def test_an_unvoiced_clip_is_taken_at_the_median_f0_of_the_voiced_ones():
    """Voiced clips at F0 100..300 Hz (median 200) whose rate is 100 + 2 F0, and three unvoiced
    clips (F0 0) at the rate of a 200 Hz voice, 500: taken at the median F0, the rate follows the
    voice exactly and nothing is left; taken at 0 Hz, they would bend the fit (500 against 100)."""
    f0 = np.array([100.0, 150.0, 200.0, 250.0, 300.0, 0.0, 0.0, 0.0])
    rate = np.where(f0 > 0, 100 + 2 * f0, 500.0)
    names = ["flac_bytes_per_second", "median_f0", "mfcc_0"]
    residual = net_of_voice(np.column_stack([rate, f0, np.zeros(f0.size)]), names)[:, 0]
    np.testing.assert_allclose(residual, 0.0, atol=0.5)


def test_a_quiet_frame_needs_quiet_neighbours():
    """One second of 10 ms frames of +-5 LSB (-76.3 dBFS, under the floor), loud frames (+-3000 LSB)
    at 20 and 60, and the frames either side of them at +-20 LSB (-64.3 dBFS: within ``QUIET_DB``
    of the -66 dBFS floor, but a speech's tail). The quiet frames are the +-5 LSB ones alone: their
    level is 20 log10(5 / 32768), and the tails' energy is no share of it."""
    steps = np.full(100, 5.0)
    steps[[19, 21, 59, 61]] = 20.0
    steps[[20, 60]] = 3000.0
    signs = np.tile([1.0, -1.0], 80)
    clip = (np.concatenate([s * signs for s in steps]) / 32768).astype(np.float32)
    level = VOICE_FREE.measure(clip)["quiet frames"]["quiet_level_db"]
    assert level == pytest.approx(20 * np.log10(5 / 32768), abs=0.01)


def test_the_voice_free_columns_are_features_no_voice_carries():
    families = VOICE_FREE.families
    assert list(families) == [
        "quiet frames",
        "DC",
        "quantisation",
        "above the low-pass",
        "compressibility net of the voice",
    ]
    assert "median_f0" not in VOICE_FREE.names and not any(n.startswith("mfcc") for n in VOICE_FREE.names)
    clip = np.zeros(SR, dtype=np.float32)
    clip[::2] = (
        3 / 32768
    )  # every other sample 3 steps (far under the floor: all quiet): half odd, two values, half tiny
    values = VOICE_FREE.measure(clip)["quantisation"]
    assert values == {"odd_sample_share": 0.5, "distinct_value_share": 2 / 1600, "tiny_value_share": 0.5}


def test_a_conversion_without_a_respoken_counterpart_is_judged_against_chance():
    """A 4vc built without main (or a recorded corpus's conversions) has nothing re-spoken to be
    compared with: its non-speaker cells above chance are warned of, naming why."""
    rng = np.random.default_rng(4)
    audit = BuildAudit(control_draws=DRAWS)
    for i in range(24):
        audit.add("4vc", unit(i, rng, planted_db=6.0, method="world"), artifacts=False)
    assert audit.respoken_differences() == {}
    assert any(
        line.startswith("shortcut audit 4vc (world; no re-spoken counterpart: against chance): localization, S2")
        for line in audit.warnings()
    ), audit.warnings()


def test_the_voice_free_warning_follows_the_interval_not_the_point_score(monkeypatch):
    """Two voice-free cells of 50 % chance: one scores 58 % but its interval reaches down to 49 %
    (chance inside it: no warning), the other 54 % with its interval from 51 % (above chance: the
    one warning)."""
    audit = BuildAudit(control_draws=DRAWS)
    cells = {
        ("main", "respeak", "logistic"): {
            "detection": {"all": {"score": 58.0, "low": 49.0, "high": 67.0}, "chance": 50.0},
            "localization_S2": {"all": {"score": 54.0, "low": 51.0, "high": 57.0}, "chance": 50.0},
        }
    }
    monkeypatch.setattr(audit, "voice_free_cells", lambda: cells)
    assert audit.warnings() == [
        "voice-free audit main (respeak, logistic): localization, S2 54.0 % [51.0–57.0] is above chance (50.0 %): "
        "a processing difference tells the altered turn"
    ]
