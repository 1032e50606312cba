"""Resynthesis artefacts: the detectors on synthetic signals, and the DSP conversions that no
longer turn a high voice lowered to a deep one into a train of isolated glottal pulses: WORLD's
aperiodicity floor (stronger at voicing onsets), Praat's one-octave limit (issue 16)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from speakersleuth.builder_scripts import artifacts
from speakersleuth.builder_scripts.artifacts import harmonicity, impulse_windows, zero_runs
from speakersleuth.builder_scripts.audit_features import dc_offset
from speakersleuth.builder_scripts.vc import praat, world
from tests.support.vc_fixtures import Voice, clips, speech_like

SR = 16000
#: the failing pair of the demo build, as source-filter voices: a high female voice (300 Hz) and a deep male one (85 Hz)
HIGH, DEEP = Voice(f0=300.0, vtl=1.2, open_quotient=0.7), Voice(f0=85.0, vtl=0.95, open_quotient=0.5)


def tone(seconds: float = 1.0, hz: float = 220.0) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def test_module_doctests():
    for module in (artifacts, world):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_a_click_train_fires_and_a_tone_or_noise_does_not():
    clicks = np.zeros(SR, dtype=np.float32)
    clicks[::200] = 0.5
    noise = (0.05 * np.random.default_rng(0).standard_normal(SR)).astype(np.float32)
    assert impulse_windows(clicks) == 80  # every window holds a pulse
    assert impulse_windows(tone()) == impulse_windows(noise) == 0
    one_click = tone() * 0.01
    one_click[5000] = 0.5
    assert impulse_windows(one_click) == 1  # a click over quiet speech


def test_quiet_windows_do_not_count():
    """A click in speech 40 dB under the loudest window is outside the speech range (30 dB): no
    impulse; the same click 20 dB under it is one."""
    for level_db, expected in ((-40, 0), (-20, 1)):
        quiet = tone(0.5) * 10 ** (level_db / 20)
        quiet[4000] = 10 * 0.3 * 10 ** (level_db / 20)
        assert impulse_windows(np.concatenate([tone(0.5), quiet])) == expected, level_db


def test_zero_runs_count_gaps_inside_the_speech_not_the_pads():
    pad = np.zeros(SR // 4, dtype=np.float32)
    speech = tone(0.5)
    assert zero_runs(np.concatenate([pad, speech, pad])) == 0
    gap = np.zeros(int(0.006 * SR), dtype=np.float32)
    assert zero_runs(np.concatenate([pad, speech, gap, speech, pad])) == 1
    short = np.zeros(int(0.004 * SR), dtype=np.float32)
    assert zero_runs(np.concatenate([pad, speech, short, speech, pad])) == 0
    assert zero_runs(np.zeros(SR, dtype=np.float32)) == 0


def test_harmonicity_ranks_a_tone_above_noise():
    noise = (0.05 * np.random.default_rng(1).standard_normal(SR)).astype(np.float32)
    half_silent = np.concatenate([np.zeros(SR // 2, dtype=np.float32), tone()])
    assert harmonicity(half_silent) > 25.0  # the mean is over voiced frames only
    assert harmonicity(noise) < 5.0 or np.isnan(harmonicity(noise))


@pytest.fixture(scope="module")
def high_to_deep():
    source = speech_like(HIGH, 2.0, seed=100)
    return source, clips(HIGH, 3, 2.5, seed=1), clips(DEEP, 3, 2.5, seed=2)


def test_world_lowering_a_high_voice_makes_no_pulse_train(high_to_deep, monkeypatch):
    source, source_clips, target_clips = high_to_deep
    converted = world.WorldConverter().convert(source, target_clips, source_clips=source_clips)
    assert impulse_windows(converted) == 0 and zero_runs(converted) == 0
    monkeypatch.setattr(world, "LOWERED_F0_APERIODICITY", 0.0)  # the conversion before the fix
    assert impulse_windows(world.WorldConverter().convert(source, target_clips, source_clips=source_clips)) >= 5


def test_world_raising_or_resynthesis_keeps_the_aperiodicity(high_to_deep, monkeypatch):
    """Only lowered frames get the floor: male->female and resynthesis are what they were."""
    source, source_clips, target_clips = high_to_deep
    deep = speech_like(DEEP, 2.0, seed=101)
    raised = world.WorldConverter().convert(deep, source_clips, source_clips=target_clips)
    resynthesised = world.WorldConverter().resynthesize(source)
    monkeypatch.setattr(world, "LOWERED_F0_APERIODICITY", 0.0)
    assert np.array_equal(raised, world.WorldConverter().convert(deep, source_clips, source_clips=target_clips))
    assert np.array_equal(resynthesised, world.WorldConverter().resynthesize(source))


def test_world_voicing_onsets_after_a_pause_are_breathy_not_a_lone_pulse(high_to_deep, monkeypatch):
    """Lowered to 85 Hz, the first glottal pulse after a pause stood alone in near-silence, the
    clicks left in S2 of a real build; the onset floor (``ONSET_APERIODICITY``) fills it."""
    source, source_clips, target_clips = high_to_deep
    t = np.arange(source.size) / SR
    fades = np.convolve((t % 0.4 < 0.25).astype(np.float64), np.ones(160) / 160, mode="same")  # 10 ms
    paused = (source * fades).astype(np.float32)

    def impulses() -> int:
        return impulse_windows(world.WorldConverter().convert(paused, target_clips, source_clips=source_clips))

    assert impulses() == 0
    monkeypatch.setattr(world, "ONSET_APERIODICITY", world.LOWERED_F0_APERIODICITY)  # no onset floor
    assert impulses() >= 2


def test_praat_lowers_a_turn_by_one_octave_at_most(high_to_deep, monkeypatch):
    """PSOLA cannot fill a period more than twice the source's: a 300 Hz turn aimed at an 85 Hz
    voice lands at 150 Hz (still a male pitch), not at 85 Hz."""
    source, source_clips, target_clips = high_to_deep
    turn_median = world.f0_median(source)

    def converted_median() -> float:
        return world.f0_median(praat.PraatConverter().convert(source, target_clips, source_clips=source_clips))

    assert 0.47 < converted_median() / turn_median < 0.53
    monkeypatch.setattr(praat, "MIN_PITCH_RATIO", 0.0)  # no limit: the target's 85 Hz
    assert converted_median() / turn_median < 0.33


def test_no_backend_output_carries_a_dc_offset(high_to_deep):
    """Praat's male -> female conversion shifted the waveform (DC ~20 % of the RMS on this voice,
    0.9 % on S2 turns of a real 4vc build, where the resynthesised originals had 0.04 %): the
    largest DC offset found the converted turn in 76 % of those rows (chance 20 %)."""
    source, source_clips, target_clips = high_to_deep
    deep = speech_like(DEEP, 2.0, seed=101)
    for converter in (praat.PraatConverter(), world.WorldConverter()):
        outputs = [
            converter.convert(deep, source_clips, source_clips=target_clips),
            converter.convert(source, target_clips, source_clips=source_clips),
            converter.resynthesize(source),
        ]
        assert max(dc_offset(x) for x in outputs) < 1e-6, converter
