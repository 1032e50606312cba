"""Re-speaking (``builder_scripts/vc/respeak.py``): the altered turn is the substitute's own bank
voice saying the turn's text, read exactly as an original turn is read; no clip is resynthesised;
a speaker outside the bank or a turn without text is refused; substitutes come from the target's
TTS engine; the re-spoken turn's voice check uses the bank's EER threshold."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from speakersleuth.builder_scripts.segments import Segment
from speakersleuth.builder_scripts.speaker_bank import BankSpeaker, SpeakerBank
from speakersleuth.builder_scripts.tts.voice_bank import Voicer
from speakersleuth.builder_scripts.vc import get_converter
from speakersleuth.builder_scripts.vc.respeak import voice_engine
from tests.support.substitute_choices import choices, ten_turn_segment

TEXT = "What kind of music do you usually listen to when you study?"


@pytest.fixture(scope="module")
def voicer(tmp_path_factory):
    return Voicer(tmp_path_factory.mktemp("voices"), threads=1)


def test_the_altered_turn_is_the_substitutes_voice_saying_the_text_as_an_original_is_read(voicer):
    respeak = get_converter("respeak", voicer=voicer)
    source = np.full(16000, 0.1, dtype=np.float32)  # the original turn sets nothing but the check
    spoken = respeak.convert(source, [], text=TEXT, speaker="chitchat_tts/hm_heart_male")
    as_an_original = sf.read(voicer.path("hm_heart_male", TEXT), dtype="float32")[
        0
    ]  # what load_span reads of a voiced turn
    np.testing.assert_array_equal(spoken, as_an_original)
    assert spoken.size != source.size, "the substitute speaks at its own rate, not the original's length"
    other = respeak.convert(source, [], text=TEXT, speaker="chitchat_tts/hf_heart")
    assert not np.array_equal(other[: min(other.size, spoken.size)], spoken[: min(other.size, spoken.size)])
    np.testing.assert_array_equal(respeak.resynthesize(as_an_original), as_an_original)  # no analysis-resynthesis


@pytest.mark.parametrize(
    ("speaker", "text", "refused"),
    [
        ("dailytalk/spk0", TEXT, "respeak needs a substitute voiced by the TTS bank"),
        ("chitchat_tts/no_such_voice", TEXT, "respeak needs a substitute voiced by the TTS bank"),
        ("chitchat_tts/pm_joe", "", "respeak needs the turn's text"),
    ],
)
def test_what_cannot_be_respoken_is_refused(voicer, speaker, text, refused):
    with pytest.raises(ValueError, match=refused):
        get_converter("respeak", voicer=voicer).convert(np.ones(100, dtype=np.float32), [], text=text, speaker=speaker)


def test_the_generation_method_of_a_unit_respeaks_only_a_source_the_bank_voices():
    from speakersleuth.builder_scripts.pipeline import BuildOptions
    from speakersleuth.builder_scripts.plan import backend_for

    def segment(source: str, dialogue: str) -> Segment:
        return ten_turn_segment(dialogue, source, "t", "female")

    opts = BuildOptions()
    assert backend_for("main", segment("chitchat_tts", "1"), opts) == "respeak"
    assert backend_for("main", segment("dailytalk", "1"), opts) == "world"  # --vc-recorded
    drawn = {backend_for("4vc", segment("chitchat_tts", str(i)), opts) for i in range(60)}
    assert drawn == {"respeak", "world", "praat"}
    assert {backend_for("4vc", segment("dailytalk", str(i)), opts) for i in range(60)} == {"world", "praat"}


def _bank(engines: dict[str, tuple[str, list[float]]]) -> SpeakerBank:
    return SpeakerBank.from_embeddings({f"chitchat_tts/{v}": (g, e) for v, (g, e) in engines.items()})


def test_substitutes_come_from_the_targets_engine_where_it_has_a_voice_of_the_gender():
    # kf_alpha (kokoro) is nearest to hf_heart (hibari) and to pm_joe (piper): S3 is the nearest
    # kokoro woman all the same, S2 a kokoro man, though other engines' voices are nearer
    bank = _bank(
        {
            "kf_alpha": ("female", [1.0, 0.0, 0.0, 0.0]),
            "hf_heart": ("female", [0.99, 0.1, 0.0, 0.0]),
            "kf_nezumi": ("female", [0.7, 0.7, 0.0, 0.0]),
            "kf_gongitsune_low": ("female", [0.5, 0.0, 0.8, 0.0]),
            "pm_joe": ("male", [0.95, 0.0, 0.0, 0.3]),
            "km_kumo": ("male", [0.0, 0.0, 0.0, 1.0]),
        }
    )
    for choice in choices(bank, "chitchat_tts/kf_alpha", 10, engine=voice_engine):
        assert choice.s3.speaker == "chitchat_tts/kf_nezumi" and choice.s2.speaker == "chitchat_tts/km_kumo"
    (without,) = choices(bank, "chitchat_tts/kf_alpha", 1)
    assert without.s3.speaker == "chitchat_tts/hf_heart"  # the whole pool's nearest, when engines are not asked


def test_s3_is_of_the_targets_gender_as_well_as_its_engine():
    """A kokoro man (km_kumo, cosine 0.99 by hand) is nearer to the kokoro woman kf_alpha than the
    kokoro woman kf_nezumi (cosine 0.6): S3 is kf_nezumi, a voice of her engine and her gender."""
    bank = _bank(
        {
            "kf_alpha": ("female", [1.0, 0.0, 0.0]),
            "km_kumo": ("male", [0.99, np.sqrt(1 - 0.99**2), 0.0]),
            "kf_nezumi": ("female", [0.6, 0.0, 0.8]),
            "km_kumo_deep": ("male", [0.0, 1.0, 0.0]),
        }
    )
    for choice in choices(bank, "chitchat_tts/kf_alpha", 10, engine=voice_engine):
        assert (choice.s3.speaker, choice.s3.similarity) == ("chitchat_tts/kf_nezumi", pytest.approx(0.6, abs=1e-4))
        assert choice.s3.gender == "female"


def test_a_recorded_targets_substitutes_come_from_the_whole_pool():
    """A recorded target cannot be re-spoken (its turns are converted), so its substitutes are not
    limited to bank voices: its nearest speaker, the recorded spk1 (cosine 0.9 by hand), is S3 and
    the recorded man spk2 is S2 whenever the seed draws him (the bank man km_kumo the other times)."""
    bank = SpeakerBank.from_embeddings(
        {
            "dailytalk/spk0": ("female", [1.0, 0.0, 0.0]),
            "dailytalk/spk1": ("female", [0.9, np.sqrt(1 - 0.9**2), 0.0]),
            "chitchat_tts/kf_alpha": ("female", [0.5, 0.0, np.sqrt(0.75)]),
            "dailytalk/spk2": ("male", [0.0, 1.0, 0.0]),
            "chitchat_tts/km_kumo": ("male", [0.0, 0.0, 1.0]),
        }
    )
    drawn = choices(bank, "dailytalk/spk0", 20, engine=voice_engine)
    assert {c.s3.speaker for c in drawn} == {"dailytalk/spk1"}
    assert {c.s2.speaker for c in drawn} == {"dailytalk/spk2", "chitchat_tts/km_kumo"}


def test_a_piper_targets_s2_comes_from_another_engine_as_piper_has_no_woman():
    bank = _bank(
        {
            "pm_joe": ("male", [1.0, 0.0, 0.0]),
            "pm_joe_deep": ("male", [0.8, 0.6, 0.0]),
            "km_kumo": ("male", [0.95, 0.3, 0.0]),
            "kf_alpha": ("female", [0.0, 0.0, 1.0]),
        }
    )
    (choice,) = choices(bank, "chitchat_tts/pm_joe", 1, engine=voice_engine)
    assert (choice.s3.speaker, choice.s2.speaker) == ("chitchat_tts/pm_joe_deep", "chitchat_tts/kf_alpha")


def test_the_voice_threshold_is_where_refusals_of_the_own_voice_meet_acceptances_of_another():
    """Hand-made clip embeddings: each of three voices has three clips; the threshold sits where
    the share of own-voice trials under it equals the share of other-voice trials at or over it."""
    rng = np.random.default_rng(0)
    axes = np.eye(8)[:3]
    speakers = []
    for i, axis in enumerate(axes):
        clips = axis + 0.6 * rng.standard_normal((3, 8))
        clips /= np.linalg.norm(clips, axis=1, keepdims=True)
        speakers.append(
            BankSpeaker(
                f"v{i}", "female", clips.mean(axis=0) / np.linalg.norm(clips.mean(axis=0)), clip_embeddings=clips
            )
        )
    bank = SpeakerBank(speakers)
    same, different = [], []  # an independent computation of the trials
    for i, s in enumerate(speakers):
        for j, clip in enumerate(s.clip_embeddings):
            rest = np.delete(s.clip_embeddings, j, axis=0).mean(axis=0)
            same.append(clip @ rest / np.linalg.norm(rest))
            different += [clip @ o.embedding for o in speakers if o is not s]
    threshold = bank.centroid_threshold()
    refused, accepted = np.mean(np.array(same) < threshold), np.mean(np.array(different) >= threshold)
    gaps = [
        abs(np.mean(np.array(same) < t) - np.mean(np.array(different) >= t)) for t in np.concatenate([same, different])
    ]
    assert abs(refused - accepted) == pytest.approx(min(gaps))


def test_a_bank_voiced_target_never_gets_a_recorded_substitute_in_a_mixed_pool():
    """A Piper man's S2 cannot be of his engine (it has no woman): it is the bank's woman, never the
    recorded woman nearer to him (she could not re-speak the turn)."""
    bank = SpeakerBank.from_embeddings(
        {
            "chitchat_tts/pm_joe": ("male", [1.0, 0.0, 0.0]),
            "chitchat_tts/pm_joe_deep": ("male", [0.8, 0.6, 0.0]),
            "chitchat_tts/kf_alpha": ("female", [0.0, 0.0, 1.0]),
            "dailytalk/spk0": ("female", [0.9, 0.0, 0.4]),
        }
    )
    for choice in choices(bank, "chitchat_tts/pm_joe", 10, engine=voice_engine):
        assert choice.s2.speaker == "chitchat_tts/kf_alpha" and choice.s3.speaker == "chitchat_tts/pm_joe_deep"


def _axes_bank() -> SpeakerBank:
    """Three voices on three axes, three clips each, a little apart: threshold well between 0 and 1."""
    speakers = []
    for i, axis in enumerate(np.eye(4)[:3]):
        clips = np.stack([axis + 0.1 * np.eye(4)[3] * s for s in (-1, 0, 1)])
        clips /= np.linalg.norm(clips, axis=1, keepdims=True)
        speakers.append(BankSpeaker(f"chitchat_tts/v{i}", "female", axis, clip_embeddings=clips))
    return SpeakerBank(speakers)


@pytest.mark.parametrize(
    ("s2", "s3", "dropped"),
    [
        ([1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], None),  # each says its turn in its own voice
        ([1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], "S3"),  # S3's turn sounds like another voice
        ([0.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], "S2"),
    ],
)
def test_a_respoken_turn_must_sound_like_its_voice_by_the_banks_threshold(monkeypatch, s2, s3, dropped):
    from types import SimpleNamespace

    from speakersleuth.builder_scripts import units

    class Encoder:  # what the bank's encoder hears in the two re-spoken turns
        def encode(self, clips):
            assert len(clips) == 2
            return np.array([s2, s3], dtype=np.float32)

    monkeypatch.setattr(units, "get_encoder", lambda spec: Encoder())
    bank = _axes_bank()
    maker = units.UnitMaker(SimpleNamespace(encoder="campplus"), {}, bank, {}, None, units.Clock())
    unit = SimpleNamespace(
        raw_converted={"S2": np.zeros(8), "S3": np.zeros(8)},
        checks={},
        dropped=None,
        s2=SimpleNamespace(speaker="chitchat_tts/v0"),
        s3=SimpleNamespace(speaker="chitchat_tts/v1"),
    )
    maker._verify_voices(unit)
    assert 0.0 < unit.checks["voice_threshold"] < 1.0 and unit.checks["voice_threshold"] == round(
        bank.centroid_threshold(), 4
    )
    assert unit.checks["s2_voice_similarity"] == pytest.approx(
        float(np.dot(s2, bank.embedding("chitchat_tts/v0"))), abs=1e-4
    )
    if dropped is None:
        assert unit.dropped is None
    else:
        assert (
            unit.dropped
            == f"voice: a re-spoken {dropped} turn under the bank's EER threshold of similarity to its voice"
        )
