"""The check on speech we did not make (``tests/support/other_speech.py``: real recordings, eSpeak
NG and DECtalk): in a dialogue where one turn of a speaker is planted from another voice, the
default judge flags that turn and no other turn of the speaker, and on clean dialogues it flags
almost nothing; in memory and through a recording with its RTTM."""

from __future__ import annotations

import numpy as np
import pytest

from speakersleuth.judges.cache import EmbeddingCache
from speakersleuth.judges.check import Clip, Dialogue, Turn, check_dialogues, load_calibration, read_rttm
from tests.support.check_inputs import write_recording
from tests.support.other_speech import dectalk_voice, dialogue, espeak_voice, real_voice

#: (target, the other speaker, the planted voice): one planted voice of the target's gender and
#: one of the other gender for each source of targets, real recordings first.
CASES = [
    (("real", "allison"), ("real", "carlo"), ("real", "june")),
    (("real", "june"), ("espeak", "en-us"), ("real", "arctic_male")),
    (("real", "carlo"), ("real", "paola"), ("real", "arctic_male")),
    (("real", "ru_f"), ("dectalk", "harry"), ("real", "carlo")),
    (("real", "paola"), ("real", "allison"), ("real", "arctic_slt")),
    (("real", "allison"), ("dectalk", "paul"), ("dectalk", "dennis")),
    (("espeak", "en-us+f2"), ("real", "carlo"), ("espeak", "en+f3")),
    (("espeak", "en-us"), ("real", "june"), ("dectalk", "betty")),
    (("dectalk", "paul"), ("real", "ru_f"), ("dectalk", "harry")),
    (("dectalk", "betty"), ("espeak", "en-029"), ("real", "carlo")),
]
#: Of the ten dialogues, at least this many must have their planted turn flagged and no other
#: turn of the target; of the clean dialogues' turns, at most this share may be flagged.
FOUND_ONLY = 9
FALSE_FLAGS = 1 / 20


def voice(source: str, name: str):
    return {"real": real_voice, "espeak": espeak_voice, "dectalk": dectalk_voice}[source](name)


@pytest.fixture(scope="module")
def planted():
    """The ten dialogues with a planted turn, and the same ten clean (seeded)."""
    made = [dialogue(voice(*t), voice(*o), 5, voice(*p), seed=i) for i, (t, o, p) in enumerate(CASES)]
    clean = [dialogue(voice(*t), voice(*o), 5, None, seed=i) for i, (t, o, _) in enumerate(CASES)]
    return made, clean


@pytest.fixture(scope="module")
def default_cache(one_torch_thread):
    from speakersleuth.speech.encoders import get_encoder

    return EmbeddingCache(get_encoder(load_calibration().default["encoder"]))


def in_memory(made) -> Dialogue:
    return Dialogue([Turn(i + 1, speaker, Clip(samples=wave)) for i, (speaker, wave) in enumerate(made.turns)])


def flagged_positions(report) -> dict[str, set[int]]:
    """Speaker -> the 0-based dialogue positions of its flagged turns (turn ids are positions + 1)."""
    return {s.speaker: {int(t.turn) - 1 for t in s.flagged} for s in report.speakers}


def verdicts(made, reports) -> list[bool]:
    """Per planted dialogue: its planted turn flagged and no other turn of the target."""
    return [flagged_positions(r).get("target", set()) == {m.planted} for m, r in zip(made, reports)]


def false_flag_share(reports) -> float:
    turns = [t for r in reports for s in r.speakers for t in s.turns]
    return sum(t.flagged for t in turns) / len(turns)


def test_the_planted_turn_and_only_it_is_flagged(planted, default_cache):
    made, clean = planted
    reports = [check_dialogues(in_memory(m), cache=default_cache) for m in made]
    found = verdicts(made, reports)
    assert sum(found) >= FOUND_ONLY, list(zip([c[0] for c in CASES], found))
    assert false_flag_share([check_dialogues(in_memory(m), cache=default_cache) for m in clean]) <= FALSE_FLAGS


def test_the_same_through_a_recording_and_its_rttm(planted, default_cache, tmp_path):
    made, clean = planted
    reports = []
    for kind, dialogues in (("planted", made), ("clean", clean)):
        for i, m in enumerate(dialogues):
            recording, rttm = write_recording(m.turns, tmp_path / kind, f"talk{i}", gap=0.5)
            reports.append(check_dialogues(read_rttm(rttm, recording), cache=default_cache))
    found = verdicts(made, reports[: len(made)])
    assert sum(found) >= FOUND_ONLY, list(zip([c[0] for c in CASES], found))
    assert false_flag_share(reports[len(made) :]) <= FALSE_FLAGS


def test_each_source_is_speech_of_its_gender():
    """The voices are of the gender their packages name (F0 median by Praat: the men here speak at
    94-174 Hz, Carlo's prompts the highest; the women at 180-250 Hz, Paola and eSpeak's f4 the
    lowest), so 'same' and 'other gender' plants are what they claim."""
    import parselmouth

    def median_f0(wave: np.ndarray) -> float:
        pitch = parselmouth.Sound(wave.astype(np.float64), 16000).to_pitch()
        f0 = pitch.selected_array["frequency"]
        return float(np.median(f0[f0 > 0]))

    for source, name in {p for _, _, p in CASES} | {t for t, _, _ in CASES} | {o for _, o, _ in CASES}:
        v = voice(source, name)
        f0 = median_f0(np.concatenate(v.turns))
        assert (f0 > 177) == (v.gender == "F"), (v.name, v.gender, f0)
