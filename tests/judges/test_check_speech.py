"""What of a clip the check takes for speech (``judges.check.speech``) and how a clip is heard
(``judges.check.listening``): silence and padding are not voice, and the speech of a clip is keyed
apart from the whole clip."""

from __future__ import annotations

import numpy as np
import pytest

from speakersleuth.judges.check.dialogue import Clip
from speakersleuth.judges.check.listening import hear
from speakersleuth.judges.check.speech import FRAME_SECONDS, HANGOVER_FRAMES, speech_of
from tests.support.other_speech import real_voice

SR = 16000


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * SR), np.float32)


def test_silence_and_quiet_hiss_are_not_speech():
    voice = real_voice("allison").turns[0]
    assert speech_of(silence(3.0)).seconds == 0.0 and speech_of(silence(3.0)).samples.size == 0
    quiet_hiss = np.random.default_rng(0).normal(0, 1e-4, 2 * SR).astype(np.float32)
    alone = speech_of(voice)
    for padding in (silence(2.0), quiet_hiss):  # 2 s each side, digital silence or hiss 60 dB down
        padded = speech_of(np.concatenate([padding, voice, padding]))
        # no more speech than a frame's realignment, and at most the hangover of audio around it
        assert abs(padded.seconds - alone.seconds) <= 3 * FRAME_SECONDS
        assert len(padded.samples) / SR <= len(alone.samples) / SR + 2 * (HANGOVER_FRAMES + 1) * FRAME_SECONDS
    assert alone.seconds > 0.9 * len(voice) / SR  # a studio prompt is speech from end to end


def test_a_pause_inside_a_turn_is_cut_and_not_counted():
    first, second = real_voice("allison").turns[0], real_voice("carlo").turns[1]
    talk = np.concatenate([first, silence(1.5), second])
    speech = speech_of(talk)
    assert speech.seconds == pytest.approx(speech_of(first).seconds + speech_of(second).seconds, abs=3 * FRAME_SECONDS)
    assert len(speech.samples) / SR < len(talk) / SR - 1.0  # most of the pause is gone


def test_padding_does_not_move_the_embedding(campplus):
    voice = real_voice("allison").turns[0]
    padded = np.concatenate([silence(2.0), voice, silence(2.0)])
    clips = [Clip(samples=voice), Clip(samples=padded)]
    cut = [h.samples for h in hear(clips, cut_to_speech=True).values()]
    whole = [h.samples for h in hear(clips, cut_to_speech=False).values()]
    unit_cut = [v / np.linalg.norm(v) for v in campplus.encode(cut)]
    unit_whole = [v / np.linalg.norm(v) for v in campplus.encode(whole)]
    assert float(unit_cut[0] @ unit_cut[1]) > 0.95  # the same voice, cut to its speech
    assert float(unit_whole[0] @ unit_whole[1]) < float(unit_cut[0] @ unit_cut[1]) - 0.05  # padding moved it
    assert [round(len(w) / SR, 2) for w in whole] == [round(len(voice) / SR, 2), round(len(voice) / SR + 4, 2)]


def test_the_speech_of_a_clip_is_keyed_apart_from_the_clip():
    clip = Clip(samples=real_voice("june").turns[0])
    cut, whole = hear([clip], cut_to_speech=True)[id(clip)], hear([clip], cut_to_speech=False)[id(clip)]
    assert whole.key == clip.key() and cut.key != clip.key()
    assert whole.speech_seconds is None and cut.speech_seconds > 1.0
