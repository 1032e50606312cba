"""Re-speaking: the altered turn said again, with its own words, by the substitute's bank voice.

Where a source is voiced by the TTS voice bank (the embedded corpus), S2's and S3's substitutes
are bank voices too, so nothing needs converting: the turn's text is voiced by the substitute the
way every original turn is voiced (``Voicer.synthesize``: the engine, the voice's recipe, the
trim, the loudness, the 16-bit wav cache), at the substitute's own speaking rate. No clip of the
unit goes through an analysis-resynthesis pass after its voicing, the originals included
(``resynthesize`` returns its input), so the original and the altered turns leave one path and
only the voice tells them apart. (A bank voice's recipe can include a PSOLA change of pitch and
formants, as for the voices made male: that is part of how the voice sounds, applied to every
turn the voice says, original or re-spoken.) This is how the HEAR benchmark makes its counterfactual turns: the same transcript in
another speaker's voice. A re-spoken turn is verified (``units.UnitMaker``) by its similarity to the
voice it was meant to have, against a threshold from the speaker bank's EER.

``convert`` needs the turn's ``text`` and the substitute's pool name ``speaker``
(``chitchat_tts/<voice id>``); the source audio sets nothing but the check that it is a clip.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from speakersleuth.speech.audio import check_waveform

from ..audio import load_span
from ..tts.voice_bank import BANK, Voicer
from .base import Clips, VoiceConverter

#: The source whose speakers (and pool names) are bank voices.
BANK_SOURCE = "chitchat_tts"
#: The method's registry name.
RESPEAK = "respeak"


def bank_voice(speaker: str) -> str:
    """The bank voice id of pool speaker ``speaker`` (``chitchat_tts/<voice id>``), refused when the
    speaker is not a bank voice (a recorded corpus' speaker cannot re-speak a turn).

    >>> bank_voice("chitchat_tts/pm_joe")
    'pm_joe'
    >>> bank_voice("dailytalk/spk0")
    Traceback (most recent call last):
    ...
    ValueError: respeak needs a substitute voiced by the TTS bank (chitchat_tts/<voice>), got 'dailytalk/spk0'
    """
    source, _, voice = speaker.partition("/")
    if source != BANK_SOURCE or voice not in BANK:
        raise ValueError(f"respeak needs a substitute voiced by the TTS bank ({BANK_SOURCE}/<voice>), got {speaker!r}")
    return voice


def voice_engine(speaker: str) -> str | None:
    """The TTS engine that voices pool speaker ``speaker`` (None for a speaker not of the bank).

    >>> voice_engine("chitchat_tts/pm_joe_deep"), voice_engine("ami/spk3")
    ('piper', None)
    """
    source, _, voice = speaker.partition("/")
    return BANK[voice].engine if source == BANK_SOURCE and voice in BANK else None


class Respeaker(VoiceConverter):
    """The turn's text voiced by the substitute's own bank voice; see the module docstring.

    Arguments:
        voicer: the ``Voicer`` that voiced the source (its wav cache is shared); default: a voicer
            over ``cache_dir``.
        cache_dir: the wav cache of a new voicer (default ``~/.cache/speakersleuth/tts``).

    Example:
        >>> Respeaker(cache_dir="/tmp/voices").resynthesize(np.ones(4, dtype=np.float32)).tolist()
        [1.0, 1.0, 1.0, 1.0]
    """

    name = RESPEAK
    offline = True
    respeaks = True

    def __init__(self, voicer: Voicer | None = None, cache_dir: str | Path | None = None):
        self.voicer = voicer or Voicer(Path(cache_dir or "~/.cache/speakersleuth/tts").expanduser(), threads=1)

    def _respeak(self, text: str | None, speaker: str | None) -> np.ndarray:
        """``text`` voiced by ``speaker``'s bank voice, as the voicing's wav holds it (its own length
        and rate; the unit normalises its loudness like every turn's)."""
        if not text:
            raise ValueError("respeak needs the turn's text")
        return load_span(self.voicer.synthesize(bank_voice(speaker or ""), text))

    def resynthesize(self, audio: np.ndarray) -> np.ndarray:
        """``audio`` as it is: re-speaking passes no clip through an analysis-resynthesis path."""
        return check_waveform(audio).copy()

    def _convert(self, source: np.ndarray, target_clips: Clips, source_clips: Clips | None) -> np.ndarray:
        raise NotImplementedError("respeak says the text again; it converts no audio")

    def _resynthesize(self, audio: np.ndarray) -> np.ndarray:
        raise NotImplementedError("respeak resynthesises nothing")
