"""The voice bank's structure (no audio): size per gender, unique recipes, stable old voices, and the
hibari engine behind the bank's engine interface."""

from __future__ import annotations

import numpy as np
import pytest

from speakersleuth.builder_scripts.tts.voice_bank import (
    BANK,
    ENGINE_SECONDS_PER_SECOND,
    ENGINES,
    VOICES,
    Voicer,
    median_f0,
    voices_of,
)

#: Kokoro's shipped styles, each alone at full weight: a timbre or a prosody mix of one style.
ALPHA, GONGITSUNE, NEZUMI, TEBUKURO, KUMO = (
    ((style, 1.0),) for style in ("jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo")
)

#: The first 16 voices, which datasets already name: (gender, engine, timbre, prosody, speed, pitch, formant).
FIRST_VOICES = {
    "kf_alpha": ("female", "kokoro", ALPHA, (), 1.1, 1.0, 1.0),
    "kf_alpha_gongitsune": ("female", "kokoro", (("jf_alpha", 0.5), ("jf_gongitsune", 0.5)), (), 1.05, 0.88, 0.88),
    "kf_alpha_prosody_gongitsune_low": ("female", "kokoro", ALPHA, GONGITSUNE, 1.1, 0.88, 0.88),
    "kf_alpha_prosody_gongitsune_high": ("female", "kokoro", ALPHA, GONGITSUNE, 1.1, 1.12, 1.12),
    "kf_gongitsune_low": ("female", "kokoro", GONGITSUNE, (), 1.05, 0.88, 0.88),
    "kf_gongitsune_high": ("female", "kokoro", GONGITSUNE, (), 1.05, 1.12, 1.12),
    "kf_nezumi_prosody_tebukuro_low": ("female", "kokoro", NEZUMI, TEBUKURO, 1.15, 0.88, 0.88),
    "kf_nezumi_prosody_tebukuro_high": ("female", "kokoro", NEZUMI, TEBUKURO, 1.15, 0.95, 1.12),
    "kf_tebukuro_prosody_alpha_low": ("female", "kokoro", TEBUKURO, ALPHA, 1.05, 0.88, 0.88),
    "kf_tebukuro_prosody_alpha_high": ("female", "kokoro", TEBUKURO, ALPHA, 1.05, 1.12, 1.12),
    "km_kumo": ("male", "kokoro", KUMO, (), 1.1, 1.0, 1.0),
    "km_kumo_deep": ("male", "kokoro", KUMO, (), 1.1, 0.9, 0.88),
    "km_kumo_light": ("male", "kokoro", KUMO, (), 1.1, 1.1, 1.12),
    "pm_joe": ("male", "piper", (), (), 1.0, 1.0, 1.0),
    "pm_joe_deep": ("male", "piper", (), (), 1.0, 0.9, 0.88),
    "pm_joe_light": ("male", "piper", (), (), 1.0, 1.1, 1.12),
}


def _recipe(voice) -> tuple:
    return (voice.gender, voice.engine, voice.timbre, voice.prosody, voice.speed, voice.pitch, voice.formant)


def test_bank_size_per_gender_and_unique_recipes():
    assert len(VOICES) >= 32 and len(voices_of("female")) >= 12 and len(voices_of("male")) >= 12
    assert len(BANK) == len(VOICES), "two voices share an id"
    assert len({_recipe(v)[1:] for v in VOICES}) == len(VOICES), "two voices share a recipe"
    assert {v.engine for v in VOICES} <= set(ENGINES) == set(ENGINE_SECONDS_PER_SECOND)


def test_the_first_voices_keep_their_ids_and_recipes():
    assert {i: _recipe(BANK[i]) for i in FIRST_VOICES if i in BANK} == FIRST_VOICES


def test_both_genders_have_participants_and_the_male_ones_are_cheap():
    for gender in ("female", "male"):
        assert len([v for v in voices_of(gender) if v.participant]) >= 3, f"too few {gender} participants"
    assert all(v.engine != "kokoro" for v in voices_of("male") if v.participant), "Kokoro men would slow the build"


def test_unknown_engine_is_named(tmp_path):
    with pytest.raises(ValueError, match="unknown TTS engine 'espeak'; known: kokoro, piper, hibari"):
        Voicer(tmp_path).engine("espeak")


def test_hibari_speaks_deterministically():
    from speakersleuth.builder_scripts.tts.hibari import HibariEngine

    engine = HibariEngine(threads=1)
    audio = engine.synthesize("Hello there, how was your day?")
    assert engine.sample_rate == 24000 and audio.dtype == np.float32 and 1.0 < audio.size / 24000 < 4.0
    assert np.abs(audio).max() > 0.05 and np.array_equal(audio, engine.synthesize("Hello there, how was your day?"))
    assert engine.synthesize("Hello there.", speed=1.3).size < engine.synthesize("Hello there.").size


def test_a_render_at_another_rate_changes_the_length_and_not_the_pitch(tmp_path):
    """``render(..., speed=)`` (the shortcut bench's same-words swaps) says the same words faster in
    the same voice: Piper's median F0 within 0.05 octave (hibari's rate moves its pitch, about 0.1
    octave per 15 %: benchmarks/notes/2026-12-03-shortcut-residue.md); without it, in a fresh
    voicer, it is the voice's own clip, sample for sample."""
    voicer = Voicer(tmp_path, threads=1)
    voice = next(v for v in VOICES if v.engine == "piper")
    text = "Hello there, how was your day?"
    own = voicer.render(voice.id, text)
    assert np.array_equal(voicer.render(voice.id, text, speed=voice.speed), own)
    faster = voicer.render(voice.id, text, speed=voice.speed * 1.2)
    assert faster.size < 0.97 * own.size  # Piper answers about half in proportion: the bench re-renders
    assert abs(np.log2(median_f0(faster) / median_f0(own))) < 0.05
    assert np.array_equal(Voicer(tmp_path / "again", threads=1).render(voice.id, text), own)
